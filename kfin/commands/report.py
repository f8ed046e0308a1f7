"""`kfin report`: one self-contained HTML page of what is stuck and why, for an incident ticket."""

from __future__ import annotations

import typer

from kfin.commands.flags import (
    AllNamespacesOpt,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    OutputOpt,
    RefreshOpt,
    TimeoutOpt,
    check_output,
    merged,
    snapshot_flag,
)
from kfin.commands.outputs import OUTPUTS
from kfin.core.explain import report as built
from kfin.errors import ExitCode
from kfin.render.report import page


def report(
    ctx: typer.Context,
    from_snapshot: str | None = snapshot_flag("Report from a kfin snapshot instead of a live cluster."),
    refresh: RefreshOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    all_namespaces: AllNamespacesOpt = None,
    output: OutputOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """One HTML page of what is stuck and why, for a ticket.

    Every stuck object, its explanation, chain and plan, and the blocking graph of them all. Self-contained:
    no script, nothing fetched.

    Example: kfin report -n shop -o html > shop-stuck.html
    """
    options = merged(
        ctx,
        kubeconfig=kubeconfig,
        context=context,
        namespace=namespace,
        all_namespaces=all_namespaces,
        output=output,
        request_timeout=request_timeout,
    )
    console = options.console
    check_output(options, OUTPUTS["report"])
    scope = options.scope(
        contexts=[options.context] if options.context else [], from_snapshot=from_snapshot, refresh=refresh
    )
    found = built.build(scope)
    for inventory in found.inventories:
        console.warn_failures(inventory.failures, listed=options.trace > 0)
    where = {inv.namespace for inv in found.inventories}
    title = "Stuck in Terminating: " + (
        f"namespace {where.pop()}" if len(where) == 1 and None not in where else "the whole cluster"
    )
    console.write(page(found, title))
    if not all(inv.complete for inv in found.inventories):
        raise typer.Exit(ExitCode.PARTIAL)
