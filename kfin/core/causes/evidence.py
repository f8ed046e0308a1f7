"""What kfin holds against an answer that progress is under way: the object's own failure conditions, kfin's
failed reads of what its causes read, and the Warning events of the object. A cause that says WAITING ("its
controller should remove it") while any of these says otherwise has not accounted for it: the registry turns
such an answer into UNKNOWN, with the evidence quoted (issue 40: "the namespace is empty ... within seconds"
while the namespace controller reported a failure and kfin's own list of its content had failed)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kfin.core.facts import ClusterFacts
from kfin.model import JSON, KubeObject

# A condition whose type says something failed (the namespace controller's NamespaceDeletionDiscoveryFailure,
# NamespaceDeletionGroupVersionParsingFailure and NamespaceDeletionContentFailure; an operator's ...Failed,
# ...Error), reported True.
FAILURE_TYPE = re.compile(r"(Failure|Failed|Error)$")


def failure_conditions(obj: KubeObject) -> list[str]:
    """The object's conditions that report a failure, each as evidence."""
    out = []
    for condition in (obj.raw.get("status") or {}).get("conditions") or []:
        if not isinstance(condition, dict) or condition.get("status") != "True":
            continue
        kind = str(condition.get("type") or "")
        if FAILURE_TYPE.search(kind):
            out.append(f"condition {kind}: {condition.get('message') or condition.get('reason') or 'True'}")
    return out


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


def warning_lines(events: Iterable[JSON] | None) -> list[str]:
    """Warning events, each as evidence."""
    return [
        f"Warning event {e.get('reason')}: {e.get('message')}"
        + (f" (x{e['count']})" if (e.get("count") or 1) > 1 else "")
        for e in events or []
    ]


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
