"""What kfin holds against an answer that progress is under way: the object's own failure conditions, kfin's
failed reads of what its causes read, and what the object's controller reports of its work on it (its Warning and
Normal Events, and the conditions it writes: Crossplane's Ready and Synced, Cluster API's Deleting and Paused). A
cause that says WAITING ("its controller should remove it") while any of these says otherwise has not accounted for
it: the registry turns such an answer into STALLED (the remover is known and says it cannot finish) or UNKNOWN, with
the evidence quoted (never "the namespace is empty ... within seconds" while the namespace controller reported a
failure and kfin's own list of its content had failed)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime

from msgspec import Struct, field

from kfin.core.read.facts import ClusterFacts
from kfin.model import JSON, KubeObject, parse_time

# A condition whose type says something failed (the namespace controller's NamespaceDeletionDiscoveryFailure,
# NamespaceDeletionGroupVersionParsingFailure and NamespaceDeletionContentFailure; an operator's ...Failed,
# ...Error), reported True.
FAILURE_TYPE = re.compile(r"(Failure|Failed|Error)$")


def failure_conditions(obj: KubeObject) -> list[str]:
    """The object's conditions that report a failure, each as evidence."""
    return _failures(_conditions(obj.raw))


def _conditions(raw: JSON) -> list[JSON]:
    status = raw.get("status")
    found = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _failures(conditions: list[JSON]) -> list[str]:
    out = []
    for condition in conditions:
        kind = str(condition.get("type") or "")
        if condition.get("status") == "True" and FAILURE_TYPE.search(kind):
            out.append(f"condition {kind}: {condition.get('message') or condition.get('reason') or 'True'}")
    return out


# The conditions a controller writes of its own work on an object, as Crossplane (crossplane-runtime's
# apis/common/v1/condition.go: Ready False "Deleting" while it deletes, Synced False "ReconcileError" with the error,
# Synced False "ReconcilePaused") and Cluster API (api/core/v1beta2/condition_consts.go: Deleting True with the step
# it is at, Paused True) write them: a reason that says it failed, or that it is paused, means it cannot finish.
HEALTHY_TYPES = ("Ready", "Synced", "Available", "Reconciled", "Healthy")  # True when all is well
FAILED_REASON = re.compile(
    r"(Error|Fail|Failed|Failure|Denied|Forbidden|Unauthori[sz]ed|Invalid|NotFound|DoesNotExist)$"
)
PAUSED_REASON = re.compile(r"Paused$")


class Reports(Struct):
    """What an object's controller reports of its work on it, as evidence lines: that it cannot finish (a Warning
    Event since the deletion that no later Normal one answers, a condition whose reason says it failed or is
    paused), Warning Events from before the deletion that nothing answers since (`doubts`), and progress (Normal
    Events since the deletion, a Deleting condition)."""

    cannot_finish: list[str] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)


def condition_reports(conditions: list[JSON]) -> Reports:
    """What the conditions a controller writes say of its work (Reports), each line with its type, status, reason
    and message as written."""
    out = Reports()
    for c in conditions:
        kind, status, reason = str(c.get("type") or ""), str(c.get("status") or ""), str(c.get("reason") or "")
        line = (
            f"condition {kind} {status}"
            + (f" ({reason})" if reason else "")
            + (f": {c.get('message')}" if c.get("message") else "")
        )
        failed = bool(FAILED_REASON.search(reason))
        unhealthy = kind in HEALTHY_TYPES and status == "False"
        if (kind == "Paused" and status == "True") or (kind in HEALTHY_TYPES and PAUSED_REASON.search(reason)):
            out.cannot_finish.append(f"{line} (its reconciliation is paused)")
        elif failed and (unhealthy or (kind == "Deleting" and status != "False")):  # Deleting: negative polarity
            out.cannot_finish.append(line)
        elif (kind == "Deleting" and status == "True") or (unhealthy and kind == "Ready" and reason == "Deleting"):
            out.progress.append(line)
    return out


def event_reports(events: Iterable[JSON] | None, deleted: datetime | None) -> Reports:
    """What the object's Events say (Reports): a Warning since the deletion (`deleted`) that no later Normal Event
    answers says its controller cannot finish; a Warning from before it that nothing answers since is a doubt; a
    Normal Event since the deletion, progress."""
    out = Reports()
    listed = [(parse_time(e.get("lastTimestamp")), e) for e in events or []]

    def since_deletion(when: datetime | None) -> bool:
        return deleted is None or when is None or when >= deleted

    answered = max((w for w, e in listed if e.get("type") != "Warning" and w and since_deletion(w)), default=None)
    for when, event in listed:
        if event.get("type") != "Warning":
            if since_deletion(when) and len(out.progress) < 2:
                out.progress.append(_event_line(event, "Normal"))
        elif answered is None or when is None or when > answered:  # no progress reported since
            (out.cannot_finish if since_deletion(when) else out.doubts).append(_event_line(event, "Warning"))
    return out


def _event_line(event: JSON, kind: str) -> str:
    count = event.get("count") or 1
    return f"{kind} event {event.get('reason')}: {event.get('message')}" + (f" (x{count})" if count > 1 else "")


def controller_reports(obj: KubeObject, facts: ClusterFacts, events: list[JSON] | None = None) -> Reports:
    """What the object's controller reports of its work on it: its Events (`events` when given, else read once
    through the facts) and the conditions it writes, from the object whole where what kfin holds has no status (a
    custom resource: read once more)."""
    conditions = _conditions(obj.raw)
    if not conditions and "status" not in obj.raw and _writes_conditions(obj):
        whole = facts.whole(obj)
        conditions = _conditions(whole) if whole else []
    from_events = event_reports(events if events is not None else facts.events_about(obj), obj.deletion_requested_at)
    from_conditions = condition_reports(conditions)
    failed = [line for line in _failures(conditions) if line not in failure_conditions(obj)]
    recorded = annotation_reports(obj, facts)
    return Reports(
        cannot_finish=failed + from_conditions.cannot_finish + recorded + from_events.cannot_finish,
        doubts=from_events.doubts,
        progress=from_conditions.progress + from_events.progress,
    )


def annotation_reports(obj: KubeObject, facts: ClusterFacts) -> list[str]:
    """What the controller of one of its finalizers records of its own work on the object in annotations, where its
    catalog entry says it does (`reportsIn`: kopf keeps each handler's state as JSON in an annotation named after
    it): each step not done that holds the words of an error, as a line saying it cannot finish."""
    specs = {}
    for finalizer in obj.finalizers:
        entry = facts.catalog.match(finalizer)
        if entry is not None and entry.controller.reports_in:
            specs[entry.name] = dict(entry.controller.reports_in)
    if not specs:
        return []
    annotations = obj.meta.get("annotations")
    if annotations is None:  # a scan keeps no annotations: the object as the server has it
        annotations = ((facts.whole(obj) or {}).get("metadata") or {}).get("annotations")
    out = []
    for spec in specs.values():
        prefix = spec["annotationPrefix"]
        for key, value in sorted((annotations or {}).items()) if isinstance(annotations, dict) else ():
            if not key.startswith(prefix) or not isinstance(value, str) or not value.startswith("{"):
                continue
            try:
                state = json.loads(value)
            except ValueError:
                continue
            message = state.get(spec["message"]) if isinstance(state, dict) else None
            if not message or (spec.get("done") and state.get(spec["done"]) is True):
                continue
            retries = state.get(spec["retries"]) if spec.get("retries") else None
            tried = f", tried {retries} times" if isinstance(retries, int) and retries > 1 else ""
            out.append(f"annotation {key} (its own record of that step{tried}): {message}")
    return out


def _writes_conditions(obj: KubeObject) -> bool:
    """Whether the object is of an operator's kind (a custom resource's group: domain-qualified, not Kubernetes'
    own), whose controller may write its deletion status on it; kfin keeps the status of Kubernetes' own kinds it
    reads."""
    group = obj.type.group
    return "." in group and not group.endswith(".k8s.io") and group != "k8s.io"


def _qualified(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def failed_reads(
    facts: ClusterFacts, obj: KubeObject, reads: Iterable[tuple[str, str, str | None, bool]]
) -> tuple[list[str], list[str]]:
    """kfin's own failed reads of what explaining the object reads (its causes' declared reads, and its own
    type), each as evidence: (those that say something may be wrong, those that are only a gap in kfin's view).
    A read the server failed (an error, a timeout), or any failed read of the object's own type, may hide what
    holds it; a read of another type that kfin was forbidden is a gap its causes answer for themselves (they
    fall back to other evidence, or say UNKNOWN), quoted but not held against them."""
    wanted = {_qualified(group, resource): namespace for group, resource, namespace, _ in reads}
    wanted.setdefault(obj.type.qualified, obj.namespace or None)
    against: list[str] = []
    gaps: list[str] = []
    for failure in facts.inventory.failures:
        if failure.what not in ("list", "get"):
            continue
        resource, _, where = failure.target.partition(" in namespace ")
        if resource not in wanted:
            continue
        namespace = wanted[resource]
        if where and namespace and where != namespace:
            continue  # another namespace's list of the same type
        line = f"kfin could not {failure.what} {failure.target}: {failure.message}"
        gap = failure.reason == "Forbidden" and resource != obj.type.qualified
        (gaps if gap else against).append(line)
    return against, gaps


# kube-apiserver's NamespaceLifecycle admission: "<kind> \"<name>\" is forbidden: unable to create new content in
# namespace <ns> because it is being terminated" (a controller's status condition or Warning event quoting it)
TERMINATING_CREATE = re.compile(
    r'(?:(\S+) "([^"]*)" is forbidden: )?unable to create new content in namespace (\S+) because it is being terminated'
)


def creates_refused(lines: Iterable[str]) -> list[str]:
    """What a controller tried to create in a namespace being terminated, from evidence that quotes kube-apiserver's
    refusal: "<resource> <name> in namespace <ns>" (or "content in namespace <ns>" where the refusal names none)."""
    out = []
    for line in lines:
        for resource, name, namespace in TERMINATING_CREATE.findall(line):
            what = f"{resource} {name}".strip() if resource else "content"
            out.append(f"{what} in namespace {namespace}")
    return list(dict.fromkeys(out))
