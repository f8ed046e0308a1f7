"""`kfin explain KIND NAME`: why each finalizer of an object is still there, and what is safe to do."""

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
from kfin.commands.pointers import not_found
from kfin.core.explain.blocking import follow
from kfin.core.explain.causes import explain_cached
from kfin.core.explain.causes.registry import note_readded
from kfin.core.explain.stuck import is_stuck, stuck_inside
from kfin.core.read.partial import split
from kfin.core.read.subject import MissingObjectError, load_target
from kfin.core.remove import audit
from kfin.errors import ExitCode, KfinError
from kfin.model import MANAGERS
from kfin.render import data, explanation


def explain(
    ctx: typer.Context,
    kind: KindArg,
    name: NameArg = None,
    refresh: RefreshOpt = False,
    no_dry_run: NoDryRunOpt = False,
    from_snapshot: str | None = snapshot_flag("Explain from a kfin snapshot instead of a live cluster."),
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    output: OutputOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """Why one object is stuck, down to its root cause, and the plan.

    For each finalizer: what it protects, which controller removes it, what holds it now
    (HOLDING, WAITING, STALLED, ORPHANED...), the safe fix, the risk of forcing it, and the kfin remove
    command when removal is the right step.

    Examples:

      kfin explain pvc data-postgres-0 -n shop

      kfin explain ns team-a -o yaml

      kfin explain databases.acme.io orders -n team-a
    """
    kind, name = subject(kind, name, "explain")
    options = merged(
        ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output, request_timeout=request_timeout
    )
    console = options.console
    fmt = check_output(options, OUTPUTS["explain"])
    scope = options.scope(from_snapshot=from_snapshot, refresh=refresh, dry_run=not no_dry_run)
    try:
        obj, facts = load_target(scope, kind, name)
    except MissingObjectError as missing:  # where it is instead (an unknown kind has its did-you-mean already)
        raise not_found(missing, "explain", kind) from None
    found = explain_cached(obj, facts)
    try:  # what kfin removed before and is back: who adds it back
        note_readded(found, audit.readded(obj, audit.read(audit.default_path())), obj.raw.get(MANAGERS) or {})
    except KfinError as error:
        console.warn(f"the audit log could not be read ({error.message}): kfin cannot tell what it removed before")
    events = facts.warnings_about(obj)  # shown beside the answer; the explanation read them too where it waits
    chain = follow(obj, facts, ahead=True) if is_stuck(obj, facts) else None
    inside = stuck_inside(obj, facts)  # a Namespace not being deleted: what in it is
    bearing, unrelated = split(facts.inventory.failures, obj)
    console.warn_failures(bearing, unrelated=unrelated, listed=options.trace > 0)  # before the answer, as every command
    if fmt == "table":
        explanation.explained(console, found, events, chain, facts.inventory.observed_at, inside)
    else:
        data.dump(
            explanation.document(found, facts, events, chain, complete=not bearing, inside=inside), fmt, console.stdout
        )
    if bearing:
        raise typer.Exit(ExitCode.PARTIAL)
