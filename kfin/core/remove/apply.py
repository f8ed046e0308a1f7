"""Applying removal plans: the guarded writes, and the saga around them.

The Remover writes one plan. Metadata finalizers go with the smallest JSON Patch: `test` that the uid and the
finalizer list are exactly what was read, then `remove` each selected entry. If the server answers that a test failed
(422) or 409 Conflict, kfin reads the object again, explains it again, and plans again (kfin.core.remove.plan), a few
times at most; it never removes a finalizer it did not read and select. A namespace's `kubernetes` entry in
spec.finalizers goes through the /finalize subresource with the whole Namespace as read (its resourceVersion guards
it). After each write kfin reads again and reports the real state.

The saga, once for kfin remove (one object, or --all-stuck) and kfin mcp's apply_removal: each plan applied through
the Remover, what came of it recorded in the audit log, and a Ctrl-C during a write turned into an outcome that says
what a read back found. The callers only ask (the confirmation) and say what came of it.

The audit log is checked before the first write, so that no change goes unrecorded because of a full disk or a
wrong path found too late. A record the log cannot take after a write is handed back for the caller to show: a
change that was applied is never left unrecorded.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from msgspec import Struct, field

from kfin import __version__
from kfin.api.connection import Kube
from kfin.api.dryrun import returned_finalizers
from kfin.api.scan import finalizer_managers
from kfin.core.explain.causes import explain_object
from kfin.core.explain.causes.custom import workloads_of_manager
from kfin.core.explain.causes.mutating import putting_back, said
from kfin.core.read.facts import ClusterFacts
from kfin.core.remove import audit
from kfin.core.remove.audit import AuditError
from kfin.core.remove.plan import FORCE_DELETION, Plan, as_read, plan_asked
from kfin.errors import APIError, KfinError, NotFoundError, UnreachableError
from kfin.model import JSON, KubeObject, format_time, metadata_patch

MAX_ATTEMPTS = 5


# Waits after a lost race, as client-go's DefaultBackoff (10 ms growing 5-fold, jittered): a busy
# writer finishes its burst instead of winning every retry.
RETRY_WAITS = (0.01, 0.05, 0.25, 1.25)


# After Ctrl-C, the one read that says whether the write in flight took effect: kfin still stops at once.
READ_BACK_SECONDS = 2.0


# After removing a finalizer from a live object, kfin reads it again this much later: a controller that watches
# it puts the finalizer back within its next reconcile. (An object being deleted takes no new finalizer: the API
# server's ValidateObjectMetaUpdate forbids it, "no new finalizers can be added if the object is being deleted".)
PUT_BACK_SECONDS = 1.5


# A 403 the API server gave by itself, naming neither a webhook, nor a policy, nor RBAC: an admission plugin
# compiled into it (a built-in, or a distribution's, such as Gardener's FinalizerRemoval).
NAMED_REFUSAL = re.compile(r'admission webhook "|ValidatingAdmissionPolicy |is forbidden: User "[^"]*" cannot ')


# Gardener's FinalizerRemoval (plugin/pkg/global/finalizerremoval/admission.go, v1.149.3) guards this one finalizer
# of Shoots, SecretBindings and CredentialsBindings.
GARDENER_FINALIZER = "gardener"


# How one plan's removal ended, as said and recorded in the audit log (its `result`). Applied: removed, gone,
# unchanged, force-deleted. Not: put-back (a live controller wrote it again), failed, unknown (an answer lost and
# no read after it), interrupted (Ctrl-C during the write: what a read back found), refused (never sent).
# dry-run: the server validated it (dryRun=All).
Result = Literal[
    "removed",
    "gone",
    "unchanged",
    "force-deleted",
    "put-back",
    "failed",
    "unknown",
    "interrupted",
    "refused",
    "dry-run",
]


APPLIED: tuple[Result, ...] = ("removed", "gone", "unchanged", "force-deleted")


class Outcome(Struct):
    result: Result
    message: str
    removed: list[str] = field(default_factory=list)
    before: list[str] = field(default_factory=list)
    after: list[str] | None = None
    attempts: int = 0
    resource_version: str = ""


def refused_by_admission_plugin(error: APIError, remove: list[str]) -> APIError:
    """The API server's refusal named as its own: no webhook or policy kfin could find or change, nor RBAC, but an
    admission plugin compiled into the server."""
    which = (
        "Gardener's FinalizerRemoval, which keeps the gardener finalizer until the Shoot's deletion succeeded or "
        "no Shoot uses the binding"
        if GARDENER_FINALIZER in remove
        else "a built-in, or one of the distribution's such as Gardener's FinalizerRemoval"
    )
    return APIError(
        f"refused by an admission plugin of the API server itself ({which}), not by a webhook or a policy: "
        f"{error.message}",
        error.status,
        error.reason,
        error.causes,
    )


def _state_after_removal(obj: KubeObject) -> str:
    """What a removal left, as read again: a live object (--allow-live) is not being deleted."""
    left = ", ".join(obj.finalizers + obj.spec_finalizers)
    if obj.terminating:
        return f"removed; still Terminating with {left}" if left else "removed; the object is still being deleted"
    return (
        f"removed; the object is not being deleted (it keeps {left})"
        if left
        else "removed; the object is not being deleted: it stays"
    )


class Remover:
    """Applies a plan to a live cluster (or asks the server to validate it with dryRun=All)."""

    def __init__(self, kube: Kube, facts_for: Callable[[KubeObject], ClusterFacts]):
        self.kube = kube
        self.facts_for = facts_for  # (obj) -> fresh facts, to explain again after a race
        self.in_flight: str | None = None  # the write sent whose answer has not come (what Ctrl-C interrupts)
        self.attempts = 0

    def _read(self, obj: KubeObject) -> JSON | None:
        return self.kube.read_object_or_none(obj.type, obj.namespace or None, obj.name)

    def apply(self, plan_: Plan, *, dry_run: bool = False) -> Outcome:
        obj = plan_.obj
        wanted = {f.finalizer for f in plan_.selected}
        meta_wanted = [f.finalizer for f in plan_.selected if f.location == "metadata.finalizers"]
        spec_wanted = [f.finalizer for f in plan_.selected if f.location == "spec.finalizers"]
        before = list(obj.finalizers + obj.spec_finalizers)
        outcome = Outcome("unchanged", "", before=before, resource_version=obj.meta.get("resourceVersion", ""))
        if any(f.family == FORCE_DELETION for f in plan_.selected):
            return self._force_delete(obj, outcome, dry_run)
        current = obj
        for attempt in range(1, MAX_ATTEMPTS + 1):
            outcome.attempts = self.attempts = attempt
            returned: list[str] = []  # the finalizers of the objects the server returned (admission's answer)
            try:
                if meta_wanted:
                    returned += _finalizers_of(self._patch_metadata(current, meta_wanted, dry_run), "metadata")
                if spec_wanted:
                    returned += _finalizers_of(self._finalize(current, spec_wanted, dry_run), "spec")
            except _RacedError:
                if attempt < MAX_ATTEMPTS:
                    time.sleep(RETRY_WAITS[attempt - 1] * random.uniform(0.9, 1.1))
                fresh = self._read(obj)
                if fresh is None:
                    return self._done(outcome, obj, wanted, "gone", "it went away while kfin worked: done")
                current = KubeObject(obj.type, fresh)
                if current.uid != obj.uid:
                    outcome.result, outcome.message = "failed", "it was deleted and created again: nothing removed"
                    return outcome
                # Explain again: what holds may have changed. Only finalizers read and selected again go.
                replanned = plan_asked(current, explain_object(current, self.facts_for(current)).findings, plan_.asked)
                still = {f.finalizer for f in replanned.selected} & wanted
                meta_wanted = [f for f in current.finalizers if f in still]
                spec_wanted = [f for f in current.spec_finalizers if f in still]
                if not meta_wanted and not spec_wanted:
                    return self._done(
                        outcome,
                        current,
                        wanted,
                        "unchanged",
                        "after a concurrent change nothing selected is left to remove",
                    )
                continue
            except NotFoundError as error:
                return self._not_found(outcome, obj, wanted, error)
            except (UnreachableError, APIError) as error:
                if dry_run or (isinstance(error, APIError) and 400 <= error.status < 500):
                    raise  # refused outright: nothing changed, and the error says why
                # The answer was lost (dropped, timed out, 5xx, junk): the write may have been applied.
                return self._lost(outcome, obj, meta_wanted + spec_wanted, error)
            kept = [f for f in meta_wanted + spec_wanted if f in returned]
            if dry_run:
                outcome.result, outcome.message = "dry-run", "the API server accepted the change (dryRun=All)"
                outcome.removed = [f for f in meta_wanted + spec_wanted if f not in kept]
                if kept:
                    outcome.result, outcome.after = "put-back", returned
                    outcome.message = self._at_admission(current, kept, "dryRun=All")
                return outcome
            outcome.removed = meta_wanted + spec_wanted
            done = self._done(outcome, current, wanted, "removed", "")
            if kept and done.result == "failed":  # the server's own answer says who: admission put it back
                done.message = self._at_admission(current, kept, "")
            elif done.result == "failed" and done.after is not None and not current.terminating:
                # the write's answer had them gone and the read after it holds them: a writer was quicker
                return self._put_back(done, obj, [f for f in meta_wanted + spec_wanted if f not in kept], wait=False)
            if done.result == "removed" and done.after is not None and not current.terminating:
                return self._put_back(done, obj, done.removed)
            return done
        outcome.result = "failed"
        outcome.message = f"the object kept changing: gave up after {MAX_ATTEMPTS} attempts"
        return outcome

    def _force_delete(self, obj: KubeObject, outcome: Outcome, dry_run: bool) -> Outcome:
        """DELETE with gracePeriodSeconds 0, guarded by the uid read: the API forgets the Pod without
        waiting for its kubelet. Read again afterwards, as after any write."""
        options = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": obj.uid},
        }
        outcome.attempts = self.attempts = 1
        try:
            self._send(
                "DELETE", lambda: self.kube.delete_object(obj.type, obj.namespace or None, obj.name, options, dry_run)
            )
        except NotFoundError:
            return self._done(outcome, obj, set(), "gone", "it was already gone: done")
        except APIError as error:
            if error.status == 409:
                outcome.result, outcome.message = "failed", "it was deleted and created again: nothing done"
                return outcome
            raise
        if dry_run:
            outcome.result, outcome.message = "dry-run", "the API server accepted the forced deletion (dryRun=All)"
            return outcome
        outcome.removed = [FORCE_DELETION]
        after = self._read(obj)
        if after is None or (after.get("metadata") or {}).get("uid") != obj.uid:
            outcome.result, outcome.after = "force-deleted", None
            outcome.message = "force-deleted (gracePeriodSeconds 0): the Pod is gone from the API"
        else:
            outcome.result, outcome.after = "failed", list((after.get("metadata") or {}).get("finalizers") or [])
            outcome.message = "the API server accepted the forced deletion, but the Pod is still there"
        return outcome

    def _not_found(self, outcome: Outcome, obj: KubeObject, wanted: set[str], error: NotFoundError) -> Outcome:
        """A 404 on a write is no proof that the object is gone: read it again. An object left in a
        namespace forced through /finalize is still stored, but every write to it answers 404 for its
        namespace until the namespace exists again."""
        if self._read(obj) is None:
            return self._done(outcome, obj, wanted, "gone", "it was already gone: done")
        outcome = self._done(outcome, obj, wanted, "failed", "")
        outcome.result = "failed"
        if error.kind == "namespaces" and obj.namespace:
            outcome.message = (
                f"nothing was removed: the API server refuses every write to it because its namespace "
                f'"{obj.namespace}" no longer exists (a ghost left by a namespace forced through '
                f'/finalize). Recreate namespace "{obj.namespace}", then deal with its content'
            )
        else:
            outcome.message = (
                f"nothing was removed: the write answered 404 ({error.message}) but the object is still there"
            )
        return outcome

    def _lost(self, outcome: Outcome, obj: KubeObject, attempted: list[str], error: KfinError) -> Outcome:
        """After a write whose answer is not a clean success: read the object again and record what really
        changed, never `removed: []` for a change the server may have made."""
        try:
            after = self._read(obj)
        except KfinError as unread:
            outcome.result, outcome.after = "unknown", None
            outcome.message = (
                f"the answer to the write was lost ({error.message}) and the object could not be read again "
                f"({unread.message}): whether {', '.join(attempted)} was removed is unknown; kfin explain shows it"
            )
            return outcome
        if after is None or (after.get("metadata") or {}).get("uid") != obj.uid:
            outcome.result, outcome.after, outcome.removed = "gone", None, list(attempted)
            outcome.message = f"the answer to the write was lost ({error.message}); read again: the object is gone"
            return outcome
        again = KubeObject(obj.type, after)
        outcome.after = again.finalizers + again.spec_finalizers
        outcome.removed = [f for f in attempted if f not in outcome.after]
        if outcome.removed == attempted:
            outcome.result = "removed"
            outcome.message = f"the answer to the write was lost ({error.message}); read again: removed"
        else:
            outcome.result = "failed"
            outcome.message = f"{error.message}; read again: " + (
                f"only {', '.join(outcome.removed)} removed" if outcome.removed else "nothing was removed"
            )
        return outcome

    def _done(self, outcome: Outcome, obj: KubeObject, wanted: set[str], result: Result, message: str) -> Outcome:
        """Read again and report the real state, never a hoped-for one."""
        after = self._read(obj)
        outcome.result = result
        if after is None:
            outcome.after = None
            outcome.message = message or "removed; the object is gone"
            return outcome
        again = KubeObject(obj.type, after)
        outcome.after = again.finalizers + again.spec_finalizers
        left = [f for f in outcome.removed if f in outcome.after]
        outcome.removed = [f for f in outcome.removed if f not in outcome.after]  # what is gone, as read back
        if left:
            outcome.result = "failed"
            outcome.message = f"the server answered OK but {', '.join(left)} is still there"
        else:
            outcome.message = message or _state_after_removal(again)
        return outcome

    def _send(self, write: str, request: Callable[[], object]) -> object:
        """One write, named in `in_flight` until its answer (or its error) has come; its answer."""
        self.in_flight = write
        try:
            answer = request()
        except KfinError:
            self.in_flight = None
            raise
        self.in_flight = None
        return answer

    def _at_admission(self, obj: KubeObject, kept: list[str], dry_run: str) -> str:
        """The server accepted the removal but the object it returned still holds `kept`: what puts them back
        at admission (kfin.core.explain.causes.mutating), in a sentence."""
        facts = self.facts_for(obj)
        who = "; ".join(said(putting_back(facts, obj, f, None), f) for f in kept)
        accepted = "the API server accepted the change" + (f" ({dry_run})" if dry_run else "")
        return (
            f"{accepted}, but the object it returned still holds {', '.join(kept)}: put back at admission: {who}. "
            "Removing it cannot hold until that lets go"
        )

    def read_back(self, plan_: Plan, before: list[str]) -> Outcome:
        """After Ctrl-C stopped apply(): one read of the object, bounded by READ_BACK_SECONDS, to say (and
        record) whether the write in flight took effect. A second Ctrl-C ends the read: then it is unknown."""
        obj = plan_.obj
        forced = any(f.family == FORCE_DELETION for f in plan_.selected)
        attempted = [FORCE_DELETION] if forced else [f.finalizer for f in plan_.selected]
        outcome = Outcome("interrupted", "", before=before, attempts=self.attempts)
        outcome.resource_version = obj.meta.get("resourceVersion", "")
        pending = self.in_flight
        names = ", ".join(attempted)
        try:
            after = self.kube.bounded(READ_BACK_SECONDS).read_object_or_none(obj.type, obj.namespace or None, obj.name)
        except (KfinError, KeyboardInterrupt) as error:
            why = error.message if isinstance(error, KfinError) else "interrupted again"
            outcome.message = (
                f"could not read it back ({why}): whether {'the Pod was deleted' if forced else names + ' was removed'}"
                " is unknown; kfin explain shows it"
            )
            return outcome
        if after is None or (after.get("metadata") or {}).get("uid") != obj.uid:
            outcome.removed = list(attempted)
            outcome.message = "read back: the object is gone"
            return outcome
        again = KubeObject(obj.type, after)
        outcome.after = again.finalizers + again.spec_finalizers
        if forced:
            outcome.message = "read back: the Pod is still there"
        else:
            outcome.removed = [f for f in attempted if f not in outcome.after]
            kept = [f for f in attempted if f in outcome.after]
            said = [_are(outcome.removed, "removed"), _are(kept, "still there")]
            outcome.message = "read back: " + ", ".join(part for part in said if part)
            if not kept:
                return outcome
        outcome.message += (
            f", but the server may still apply the {pending} it received (kfin explain shows the state)"
            if pending
            else " (no write was in flight)"
        )
        return outcome

    def _patch_metadata(self, obj: KubeObject, remove: list[str], dry_run: bool) -> object:
        ops = metadata_patch(obj.uid, obj.finalizers, remove)
        try:
            return self._send(
                "PATCH", lambda: self.kube.patch_object(obj.type, obj.namespace or None, obj.name, ops, dry_run)
            )
        except APIError as error:
            if error.status in (409, 422) and self._changed(obj):
                raise _RacedError() from None
            if error.status == 403 and not NAMED_REFUSAL.search(error.message):
                raise refused_by_admission_plugin(error, remove) from None
            raise

    def _put_back(self, outcome: Outcome, obj: KubeObject, removed: list[str], wait: bool = True) -> Outcome:
        """Read a live object again (a little later, unless it was already seen back): a finalizer the write's
        answer had removed and a live controller put back names its writer (the field manager, and its
        workload), and kfin stops there (it never removes it again by itself)."""
        if wait:
            time.sleep(PUT_BACK_SECONDS)
        after = self._read(obj)
        if after is None or (after.get("metadata") or {}).get("uid") != obj.uid:
            return outcome
        again = KubeObject(obj.type, after)
        back = [f for f in removed if f in again.finalizers]
        if not back:
            return outcome
        outcome.removed = list(removed)  # the server's answer to the write had them gone: kfin did remove them
        managers = finalizer_managers(after.get("metadata") or {})
        writers = []
        for manager in dict.fromkeys(managers.get(f) for f in back):
            if manager is None:
                writers.append("a writer its managedFields do not name (the API server's audit log does)")
                continue
            workloads = workloads_of_manager(self.facts_for(again), manager) or []
            runs = ", ".join(
                f"{w.type.kind} {w.namespace}/{w.name}, {ready}/{want} ready" for w, ready, want in workloads
            )
            writers.append(f'field manager "{manager}"' + (f" ({runs})" if runs else ""))
        outcome.result, outcome.after = "put-back", again.finalizers + again.spec_finalizers
        outcome.message = (
            f"{', '.join(back)} was removed, then put back within {PUT_BACK_SECONDS:g} s by {'; '.join(writers)}: "
            "a live controller wants it, so kfin stops here. Stop that controller, or make it let go, before "
            "removing it again"
        )
        return outcome

    def _changed(self, obj: KubeObject) -> bool:
        fresh = self._read(obj)
        if fresh is None:
            raise NotFoundError("gone")
        meta = fresh.get("metadata") or {}
        return (
            meta.get("uid") != obj.uid
            or list(meta.get("finalizers") or []) != obj.finalizers
            or list((fresh.get("spec") or {}).get("finalizers") or []) != obj.spec_finalizers
        )

    def _finalize(self, obj: KubeObject, remove: list[str], dry_run: bool) -> object:
        """PUT /finalize with the whole Namespace as read now: its resourceVersion guards the change."""
        whole = self.kube.read_object(obj.type, None, obj.name)
        if (
            whole["metadata"].get("uid") != obj.uid
            or list((whole.get("spec") or {}).get("finalizers") or []) != obj.spec_finalizers
        ):
            raise _RacedError()
        whole.setdefault("spec", {})["finalizers"] = [f for f in obj.spec_finalizers if f not in remove]
        try:
            return self._send("PUT /finalize", lambda: self.kube.finalize_namespace(obj.type, obj.name, whole, dry_run))
        except APIError as error:
            if error.status == 409:
                raise _RacedError() from None
            raise


def _finalizers_of(answer: object, where: str) -> list[str]:
    """The finalizers (metadata's, or a Namespace's spec's) of the object a write returned; none when it returned
    no object."""
    if not isinstance(answer, dict):
        return []
    if where == "metadata":
        return list(returned_finalizers(answer) or ())
    spec = answer.get("spec")
    found = spec.get("finalizers") if isinstance(spec, dict) else None
    return [f for f in found if isinstance(f, str)] if isinstance(found, list) else []


def _are(names: list[str], what: str) -> str:
    """'a is removed', 'a, b are removed', or nothing."""
    return f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} {what}" if names else ""


class _RacedError(Exception):
    """The object changed between read and write."""


def recreate_namespace(kube: Kube, namespace: str) -> dict[str, Any]:
    """--recreate-namespace: create the namespace of a ghost again, so that writes to what was left in it
    are accepted; the audit record of that creation is returned (the namespace is left for the operator
    to delete once its content is dealt with)."""
    meta = kube.create_namespace(namespace).get("metadata") or {}
    return {
        "time": format_time(datetime.now(UTC)),
        "kfinVersion": __version__,
        "context": kube.context,
        "server": kube.shown,  # as every audit record: never a password in it
        "user": kube.whoami(),
        "object": {
            "apiVersion": "v1",
            "kind": "Namespace",
            "namespace": None,
            "name": namespace,
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "finalizersBefore": [],
        "finalizersAfter": [],
        "selected": [],
        "removed": [],
        "verdicts": {},
        "forced": False,
        "result": "created",
        "attempts": 1,
        "message": "created again (--recreate-namespace) so that what was left in it can be written",
    }


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
