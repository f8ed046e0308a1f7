"""The removal saga, once for kfin remove (one object, or --all-stuck) and kfin mcp's apply_removal: each plan
applied through the Remover, what came of it recorded in the audit log, and a Ctrl-C during a write turned into an
outcome that says what a read back found. The callers only ask (the confirmation) and say what came of it.

The audit log is checked before the first write, so that no change goes unrecorded because of a full disk or a
wrong path found too late. A record the log cannot take after a write is handed back for the caller to show: a
change that was applied is never left unrecorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from kfin import __version__
from kfin.api.connection import Kube
from kfin.core import audit
from kfin.core.audit import AuditError
from kfin.core.facts import ClusterFacts
from kfin.core.removal import APPLIED, FORCE_DELETION, Outcome, Plan, Remover, as_read
from kfin.errors import KfinError
from kfin.model import KubeObject, format_time

# A dry run's message when Ctrl-C stops it: dryRun=All persists nothing, so there is nothing to read back
DRY_RUN_INTERRUPTED = "a dry run, nothing was changed"


class AuditTrail(Struct, frozen=True):
    """Where a run records what it applied, and as whom (a dry run has none: it records nothing)."""

    path: Path
    kube: Kube
    user: str
    noted: dict[str, str] = field(default_factory=dict)  # added to each record: kfin mcp's client

    def record_of(self, plan_: Plan, outcome: Outcome) -> dict[str, Any]:
        """The audit log's record of one applied plan: what was read, selected and really removed."""
        forced = plan_.asked.force and any(
            c.warning
            and (
                c.finding.verdict.value in ("HOLDING", "UNKNOWN", "BLOCKED")
                or (c.finding.family == FORCE_DELETION and c.warning.startswith("forced although"))
            )
            for c in plan_.choices
            if c.selected
        )
        return {
            "time": format_time(datetime.now(UTC)),
            "kfinVersion": __version__,
            "context": self.kube.context,
            "server": self.kube.shown,  # an audit log is read by others: never a password in it
            "user": self.user,
            "object": as_read(plan_.obj),
            "finalizersBefore": outcome.before,
            "finalizersAfter": outcome.after,
            "selected": [f.finalizer for f in plan_.selected],
            "removed": outcome.removed,
            "verdicts": {c.finding.finalizer: c.finding.verdict.value for c in plan_.choices},
            "forced": forced,
            "result": outcome.result,
            "message": outcome.message,
            "attempts": outcome.attempts,
            **self.noted,
        }


class Applied(Struct):
    """How one plan ended: its outcome, and its audit record (none for a dry run, nor for a plan refused, which
    is never sent)."""

    plan: Plan
    outcome: Outcome
    error: KfinError | None = None  # the write's own error, when it failed outright
    record: dict[str, Any] | None = None
    log: Path | None = None  # where the record went
    unrecorded: AuditError | None = None  # why the log could not take the record: the caller shows it instead

    @property
    def ok(self) -> bool:
        """Done as asked (or accepted by the server's dry run)."""
        return self.outcome.result in (*APPLIED, "dry-run")

    @property
    def recorded(self) -> bool:
        return self.record is not None and self.unrecorded is None


def apply_plans(
    plans: Iterable[Plan],
    *,
    kube: Kube,
    facts_for: Callable[[KubeObject], ClusterFacts],
    audit_log: Path | None,
    dry_run: bool = False,
    noted: dict[str, str] | None = None,
) -> Iterator[Applied]:
    """Apply each plan in turn (with dryRun=All if `dry_run`), each one's end yielded as it comes. A write the
    server refused, or whose answer was lost, is a failed outcome (with its error) and the run goes on; Ctrl-C
    during a write reads the object back and ends the run with an interrupted outcome (Ctrl-C between writes
    stops the caller's loop as it is). The audit log is checked, and the user asked of the server, before
    anything is written; a dry run records nothing."""
    trail = None
    if not dry_run:
        path = audit.check_writable(audit_log)  # before anything is written
        trail = AuditTrail(path=path, kube=kube, user=kube.whoami(), noted=dict(noted or {}))
    return _each(plans, Remover(kube, facts_for), trail)


def _each(plans: Iterable[Plan], remover: Remover, trail: AuditTrail | None) -> Iterator[Applied]:
    for plan_ in plans:
        before = plan_.obj.finalizers + plan_.obj.spec_finalizers
        refusal = plan_.refusal
        if refusal is not None:  # never sent, so nothing to record
            yield Applied(plan_, Outcome("refused", refusal, before=before))
            continue
        interrupted = False
        error = None
        try:
            outcome = remover.apply(plan_, dry_run=trail is None)
        except KfinError as failed:
            error, outcome = failed, Outcome("failed", failed.message, before=before)
        except KeyboardInterrupt:  # the object is read back (briefly): what the write in flight did is recorded
            interrupted = True
            if trail is None:
                outcome = Outcome("interrupted", DRY_RUN_INTERRUPTED, before=before)
            else:
                outcome = remover.read_back(plan_, before)
        yield _ended(plan_, outcome, error, trail)
        if interrupted:
            return


def _ended(plan_: Plan, outcome: Outcome, error: KfinError | None, trail: AuditTrail | None) -> Applied:
    """The plan's end, recorded in the audit log unless a dry run."""
    if trail is None:
        return Applied(plan_, outcome, error=error)
    record = trail.record_of(plan_, outcome)
    problem = audit.record(record, trail.path)
    return Applied(plan_, outcome, error=error, record=record, log=trail.path, unrecorded=problem)
