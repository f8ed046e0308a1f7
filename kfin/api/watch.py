"""Following a deletion to its end with a watch: from the list's resourceVersion, with bookmarks; a watch
that ends is started again from the last version seen, and one whose version expired (410) lists again."""

from __future__ import annotations

import time
from collections.abc import Callable

from kfin.api.connection import METADATA_ACCEPT, METADATA_LIST_ACCEPT, Kube
from kfin.api.paths import resource_path
from kfin.api.shapes import check_page
from kfin.api.transport import APPLICATION_JSON
from kfin.model import JSON, ResourceType

LONGEST_WATCH = 60  # seconds asked of the server per watch; kfin starts the next one from where it was


def _state(obj: JSON) -> str:
    """What is left to go, in a line: a namespace's remaining content, or an object's finalizers."""
    meta = obj.get("metadata") or {}
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if (
            condition.get("type") in ("NamespaceContentRemaining", "NamespaceFinalizersRemaining")
            and condition.get("status") == "True"
        ):
            return condition.get("message") or ""
    finalizers = (meta.get("finalizers") or []) + ((obj.get("spec") or {}).get("finalizers") or [])
    if not meta.get("deletionTimestamp"):
        return "not being deleted"
    return "finalizers left: " + ", ".join(finalizers) if finalizers else "waiting for it to go"


def wait_gone(
    kube: Kube,
    rtype: ResourceType,
    namespace: str | None,
    name: str,
    uid: str,
    timeout: float,
    report: Callable[[str], None],
) -> bool:
    """True once the object (that uid) is gone; False when `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    path = resource_path(rtype, namespace)
    query = {"fieldSelector": f"metadata.name={name}"}
    # Namespaces are watched whole: their conditions count the remaining content down.
    whole = (rtype.group, rtype.resource) == ("", "namespaces")
    what = ("watch", rtype.qualified, namespace)
    last = None
    while True:
        page = check_page(
            kube.request(
                "GET",
                path,
                query,
                accept=APPLICATION_JSON if whole else METADATA_LIST_ACCEPT,
                what=("list", rtype.qualified, namespace),
            ),
            f"GET {path}",
        )
        found = [i for i in page.get("items") or [] if (i.get("metadata") or {}).get("name") == name]
        if not found or (uid and found[0]["metadata"].get("uid") != uid):
            return True
        last = _report(found[0], last, report)
        version = (page.get("metadata") or {}).get("resourceVersion") or ""
        expired = False
        while not expired:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for event in kube.watch(
                path,
                dict(query, resourceVersion=version),
                max(1, min(int(left), LONGEST_WATCH)),
                accept=APPLICATION_JSON if whole else METADATA_ACCEPT,
                what=what,
            ):
                obj: JSON = event["object"] if isinstance(event.get("object"), dict) else {}
                meta: JSON = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
                if event.get("type") == "ERROR":
                    expired = True  # 410 Expired: list again
                    break
                version = meta.get("resourceVersion") or version
                if event.get("type") == "DELETED" and (not uid or meta.get("uid") == uid):
                    return True
                if event.get("type") in ("ADDED", "MODIFIED"):
                    last = _report(obj, last, report)
                if time.monotonic() >= deadline:
                    return False


def _report(obj: JSON, last: str | None, report: Callable[[str], None]) -> str:
    state = _state(obj)
    if state != last:
        report(state)
    return state
