"""`kfin preflight KIND NAME`: what deleting it would leave stuck, and the order of deletions that avoids it."""

from __future__ import annotations

import typer

from kfin.commands.flags import (
    ContextOpt,
    KindArg,
    KubeconfigOpt,
    NameArg,
    NamespaceOpt,
    NoDryRunOpt,
    OutputOpt,
    RefreshOpt,
    TimeoutOpt,
    check_output,
    merged,
    snapshot_flag,
    subject,
)
from kfin.commands.outputs import OUTPUTS
from kfin.core.preflight import predict
from kfin.errors import ExitCode
from kfin.render import data
from kfin.render.preflight import preflight_report
from kfin.render.terminal import warn_failures


def preflight(
    ctx: typer.Context,
    kind: KindArg,
    name: NameArg = None,
    exit_code: bool = typer.Option(False, "--exit-code", help="Exit 1 when something would be left stuck."),
    refresh: RefreshOpt = False,
    no_dry_run: NoDryRunOpt = False,
    from_snapshot: str | None = snapshot_flag("Predict from a kfin snapshot instead of a live cluster."),
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    output: OutputOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """What a deletion would leave stuck, and the order that avoids it; nothing is deleted.

    For a namespace, a CRD, a node or any object with dependents: every object the deletion would delete, each
    finalizer's controller and whether it survives the deletion (it lives in the namespace being deleted, it is
    not running, none is found), the gates that would stop it (unavailable APIServices, conversion webhooks,
    admission webhooks and policies failing closed, a drain a PodDisruptionBudget stops), then the safe order.

    Examples:

      kfin preflight namespace team-a

      kfin preflight crd databases.acme.io -o json

      kfin preflight node ip-10-0-1-7 --exit-code
    """
    kind, name = subject(kind, name, "preflight")
    options = merged(
        ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output, request_timeout=request_timeout
    )
    fmt = check_output(options, OUTPUTS["preflight"])
    scope = options.scope(from_snapshot=from_snapshot, refresh=refresh, dry_run=not no_dry_run)
    result, facts = predict(scope, kind, name)
    warn_failures(facts.inventory.failures)  # a deletion reaches every type: each failure bears on it
    if fmt == "table":
        preflight_report(result)
    else:
        data.dump(result.to_dict(), fmt)
    if exit_code and not result.clean:
        raise typer.Exit(ExitCode.FOUND)
    if facts.inventory.failures:
        raise typer.Exit(ExitCode.PARTIAL)
