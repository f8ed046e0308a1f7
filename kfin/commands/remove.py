"""`kfin remove`: guarded, race-safe, recorded finalizer removal, for one object or every stuck one."""

from __future__ import annotations

from pathlib import Path

import typer
from msgspec import Struct

from kfin.commands.flags import (
    AllNamespacesOpt,
    AuditLogOpt,
    ContextOpt,
    FieldSelectorOpt,
    KindsOpt,
    KubeconfigOpt,
    LabelSelectorOpt,
    NameArg,
    NamespaceOpt,
    Narrowing,
    OlderThanOpt,
    OptionalKindArg,
    RefreshOpt,
    RemovalVerdictsOpt,
    TimeoutOpt,
    merged,
    narrowing,
    snapshot_flag,
    subject,
    wait_seconds,
)
from kfin.commands.pointers import not_found
from kfin.commands.wait import follow_to_end
from kfin.core.explain.causes import explain_object
from kfin.core.explain.stuck import find_all, narrowed
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.core.read.subject import MissingObjectError, fresh_facts, live_target, load_target
from kfin.core.remove import audit
from kfin.core.remove.apply import apply_plans, recreate_namespace
from kfin.core.remove.plan import FORCE_DELETION, Plan, plan
from kfin.errors import ExitCode, InterruptedByUserError, UsageError
from kfin.model import format_time
from kfin.render.removal import (
    Mode,
    Tally,
    asked_to_change,
    change_question,
    print_plan,
    removal_table,
    said_outcome,
    said_unrecorded,
    unrecorded,
)
from kfin.render.terminal import Console
from kfin.util.text import one_line


class Choices(Struct, frozen=True):
    """What the user asked of a removal, beyond which objects."""

    patterns: list[str]
    mode: Mode
    force: bool
    allow_live: bool
    audit_log: Path | None
    node_lost_after: float


def remove(
    ctx: typer.Context,
    kind: OptionalKindArg = None,
    name: NameArg = None,
    finalizer: list[str] | None = typer.Option(
        None,
        "--finalizer",
        metavar="NAME",
        help="Finalizer to remove (repeatable; globs allowed). Default: those ORPHANED (nothing else will remove "
        "them); a HOLDING, UNKNOWN or BLOCKED one, or the control plane's, needs --force too.",
    ),
    confirm: bool = typer.Option(False, "--confirm", help="Apply the change. Without it kfin only shows the plan."),
    force: bool = typer.Option(
        False,
        "--force",
        help="Remove a named finalizer that is HOLDING, UNKNOWN, BLOCKED or the control plane's (read the risk).",
    ),
    allow_live: bool = typer.Option(False, "--allow-live", help="Allow objects that are not being deleted."),
    server_dry_run: bool = typer.Option(
        False,
        "--server-dry-run",
        help="Send the change with dryRun=All: validated, never persisted (not with --confirm).",
    ),
    all_stuck: bool = typer.Option(
        False,
        "--all-stuck",
        help="Every stuck object in -n NS (or -A); --kind, -l, --field-selector, --verdict and --older-than narrow "
        "it as they narrow kfin stuck.",
    ),
    kinds: KindsOpt = None,
    older_than: OlderThanOpt = None,
    verdict: RemovalVerdictsOpt = None,
    label_selector: LabelSelectorOpt = None,
    field_selector: FieldSelectorOpt = None,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before a bulk removal."),
    wait: bool = typer.Option(False, "--wait", help="After removing, follow the deletion until the object is gone."),
    timeout: str = typer.Option("5m", "--timeout", metavar="DURATION", help="With --wait: how long to wait."),
    recreate_namespace: bool = typer.Option(
        False,
        "--recreate-namespace",
        help="For an object left in a namespace that was forced away: create that namespace again first (recorded).",
    ),
    node_lost_after: str = typer.Option(
        "5m",
        "--node-lost-after",
        metavar="DURATION",
        help="Force-delete a Pod in graceful deletion only when its node is gone or has not reported for this long.",
    ),
    audit_log: AuditLogOpt = None,
    from_snapshot: str | None = snapshot_flag(
        "Show the plan from a kfin snapshot: a dry run only (the patch as the snapshot has the object), nothing "
        "is sent; --confirm and --server-dry-run need the cluster."
    ),
    refresh: RefreshOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    all_namespaces: AllNamespacesOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """Remove finalizers: a dry run first; guarded, recorded.

    Dry run unless --confirm. A HOLDING finalizer is refused with its safe fix unless --force.
    Every applied change is appended to the audit log (kfin audit).

    Examples:

      kfin remove databases.acme.io orders -n team-a

      kfin remove databases.acme.io orders -n team-a --confirm

      kfin remove -n team-a --all-stuck --finalizer 'acme.io/*' --confirm

      kfin remove -A --all-stuck --kind pvc -l app=db --older-than 1h

      kfin remove databases.acme.io orders -n team-a --from-snapshot cluster.json
    """
    options = merged(
        ctx,
        kubeconfig=kubeconfig,
        context=context,
        namespace=namespace,
        all_namespaces=all_namespaces,
        request_timeout=request_timeout,
    )
    console = options.console
    console = options.console
    mode = Mode.of(confirm, server_dry_run)
    seconds = wait_seconds(timeout)
    choices = Choices(
        list(finalizer or []),
        mode,
        force,
        allow_live,
        Path(audit_log) if audit_log else None,
        wait_seconds(node_lost_after, "--node-lost-after"),
    )
    narrow = narrowing(kinds, older_than, verdict, label_selector, field_selector)
    if narrow.given and not all_stuck:
        raise UsageError("--kind, -l, --field-selector, --verdict and --older-than narrow --all-stuck")
    if wait and (all_stuck or mode is not Mode.CONFIRM):
        raise UsageError("--wait follows one object's deletion after --confirm (not with --all-stuck or a dry run)")
    if from_snapshot is not None and mode.sends:
        raise UsageError(
            f"--from-snapshot shows the plan only: a snapshot cannot be written (drop "
            f"{mode.value}, or run kfin remove against the cluster)"
        )
    # the removal is checked with the server first (dryRun=All, kfin.core.explain.causes.dryrun): a plan it would
    # refuse, or whose finalizer admission puts back, is never made
    scope = options.scope(from_snapshot=from_snapshot, refresh=refresh, dry_run=True)
    if all_stuck:
        if kind or name:
            raise UsageError("--all-stuck takes no KIND NAME: it works on every stuck object in -n NS or -A")
        raise typer.Exit(remove_all_stuck(console, scope, choices, yes=yes, narrow=narrow))
    if kind is None:
        raise UsageError("kfin remove needs KIND NAME or KIND/NAME (or --all-stuck)")
    kind, name = subject(kind, name, "remove")
    raise typer.Exit(
        remove_one(
            console,
            scope,
            kind,
            name,
            choices=choices,
            wait_for=seconds if wait else None,
            again_namespace=recreate_namespace,
        )
    )


def remove_one(
    console: Console,
    scope: Scope,
    kind: str,
    name: str,
    *,
    choices: Choices,
    wait_for: float | None,
    again_namespace: bool,
) -> int:
    """One object: its plan shown, refused, or (with --confirm or --server-dry-run) applied and said."""
    try:  # from a snapshot: its Facts have no connection, nothing is sent
        obj, facts = load_target(scope, kind, name)
    except MissingObjectError as missing:
        raise not_found(missing, "remove", kind) from None
    findings = explain_object(obj, facts).findings
    if again_namespace and choices.mode is Mode.CONFIRM and any(f.family == "ghost" for f in findings):
        assert facts.kube is not None
        log_path = audit.check_writable(choices.audit_log)
        created = recreate_namespace(facts.kube, obj.namespace)
        problem = audit.record(created, log_path)
        if problem is not None:
            unrecorded(console, created, problem)
        console.say(
            f"namespace {obj.namespace} created again, so that what was left in it can be written; delete it once "
            f"its content is dealt with (kubectl delete namespace {obj.namespace})",
            err=True,
        )
        obj, facts = live_target(scope, kind, name)  # no longer a ghost: explained afresh
        findings = explain_object(obj, facts).findings
        if not obj.terminating and not choices.allow_live:
            # forced before the namespace controller reached it: a live object again, deleted with the namespace
            console.say(
                f"error: refused to remove finalizers from {obj.ref}: it was never deleted (its namespace was "
                "forced through /finalize before the namespace controller reached it), and now that namespace "
                f"{obj.namespace} exists again it is a live object. Delete the namespace again (kubectl delete "
                f"namespace {obj.namespace}) so that its content is deleted and its finalizers' controllers act, "
                f"then kfin stuck -n {obj.namespace}",
                err=True,
            )
            return ExitCode.REFUSED
    plan_ = plan(
        obj,
        findings,
        choices.patterns,
        force=choices.force,
        allow_live=choices.allow_live,
        node_lost_after=choices.node_lost_after,
    )
    print_plan(console, plan_)
    if plan_.refusal is not None:
        console.say(f"error: refused to {plan_.refused_what}: {one_line(plan_.refusal)}", err=True)
        return ExitCode.REFUSED
    for c in plan_.choices:
        if c.warning and c.selected:
            console.warn(f"{c.finding.finalizer}: {c.warning}")
    if facts.kube is None:  # a snapshot
        console.note(
            f"{_from_snapshot(scope, facts)} Against the cluster, kfin remove reads {obj.ref} again and plans "
            "from what it reads: add --confirm there to apply."
        )
        return ExitCode.OK
    if choices.mode is Mode.PLAN:
        console.note(
            "Dry run: nothing was changed. Add --confirm to apply (or --server-dry-run to have the API server "
            "validate it)."
        )
        return ExitCode.OK
    kube = facts.kube
    assert kube is not None  # live_target's facts are live
    dry_run = choices.mode is Mode.SERVER_DRY_RUN
    [applied] = apply_plans(
        [plan_],
        kube=kube,
        facts_for=fresh_facts(kube, facts.inventory.resources, facts.catalog),
        audit_log=choices.audit_log,
        dry_run=dry_run,
    )
    outcome = applied.outcome
    recorded = said_unrecorded(console, applied)
    if outcome.result == "interrupted":
        if dry_run:
            raise InterruptedByUserError("interrupted")
        raise InterruptedByUserError(
            f"interrupted while {_doing(plan_, obj.ref)}: {outcome.message}"
            + (f" (recorded in {applied.log})" if recorded else "")
        )
    if applied.error is not None:
        raise applied.error
    code = said_outcome(console, applied, choices.mode)
    if code == ExitCode.OK and wait_for is not None and outcome.after is not None:
        return follow_to_end(console, scope, kind, name, obj, kube, wait_for)
    return code


def _from_snapshot(scope: Scope, facts: Facts) -> str:
    """A snapshot's dry run: what it was made from, and that nothing was sent."""
    taken = format_time(facts.inventory.observed_at)
    return f"Dry run from the snapshot {scope.from_snapshot} (taken {taken}): nothing was sent."


def _doing(plan_: Plan, ref: str = "") -> str:
    """What a plan's write does, for the line that says it was interrupted: 'removing a, b from REF'."""
    if any(f.family == FORCE_DELETION for f in plan_.selected):
        return f"force-deleting {ref or 'it'}"
    return f"removing {', '.join(f.finalizer for f in plan_.selected)}" + (f" from {ref}" if ref else "")


def remove_all_stuck(console: Console, scope: Scope, choices: Choices, *, yes: bool, narrow: Narrowing) -> int:
    """Every stuck object kfin stuck lists with the same flags (the same scan and narrowing), each planned."""
    found, [facts] = find_all(scope, narrow.kinds, None, narrow.older, progress=console.progress_bar)
    rows = narrowed(found, narrow.verdicts, narrow.chosen)
    patterns = choices.patterns
    plans: list[Plan] = [
        plan(
            r.obj,
            explain_object(r.obj, facts).findings,
            patterns,
            force=choices.force,
            allow_live=choices.allow_live,
            node_lost_after=choices.node_lost_after,
            bulk=True,
        )
        for r in rows
    ]
    plans = [p for p in plans if not (patterns and p.refused and p.refused.startswith("none of its finalizers"))]
    looked_in = f"namespace {facts.inventory.namespace}" if facts.inventory.namespace else "every namespace"
    if not plans:
        console.note(f"Nothing to remove: no stuck object matches in {looked_in}.")
        return ExitCode.OK
    context = f" of context {facts.inventory.context}" if facts.inventory.context else ""
    console.note(f"Stuck objects in {looked_in}{context}, and what kfin would do to each:")
    removal_table(console, plans, show_namespace=facts.inventory.namespace is None)  # as kfin stuck's table
    runnable = [p for p in plans if p.refusal is None]
    refused = len(plans) - len(runnable)
    kube = facts.kube
    if kube is None:  # a snapshot
        console.note(
            f"{_from_snapshot(scope, facts)} {len(runnable)} to change, {refused} refused. Against the cluster, kfin "
            "remove scans again and plans from what it reads: add --confirm there to apply."
        )
        return ExitCode.REFUSED if refused else ExitCode.OK
    if choices.mode is Mode.PLAN:
        console.note(
            f"Dry run: {len(runnable)} to change, {refused} refused; nothing was changed. Add --confirm to apply."
        )
        return ExitCode.REFUSED if refused else ExitCode.OK
    asking = choices.mode is Mode.CONFIRM and runnable and not yes
    if asking and not asked_to_change(console, change_question(runnable, looked_in, kube.context)):
        console.note("Nothing was changed.")
        return ExitCode.REFUSED
    each = apply_plans(
        runnable,
        kube=kube,
        facts_for=fresh_facts(kube, facts.inventory.resources, facts.catalog),
        audit_log=choices.audit_log,
        dry_run=choices.mode is Mode.SERVER_DRY_RUN,
    )
    tally = Tally(console, len(runnable), refused)
    try:
        for applied in each:
            tally.count(applied)
            if applied.outcome.result == "interrupted":  # what the write in flight did, as read back, is recorded
                p = applied.plan
                raise InterruptedByUserError(
                    f"interrupted at [{tally.started}/{len(runnable)}] {p.obj.ref} while {_doing(p)}: "
                    f"{applied.outcome.message}: {tally.so_far()}"
                )
    except KeyboardInterrupt:  # between two objects: each one started has been said
        raise InterruptedByUserError(f"interrupted after [{tally.started}/{len(runnable)}]: {tally.so_far()}") from None
    return tally.end()
