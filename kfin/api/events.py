"""An object's recent Events, from events.k8s.io/v1 or core v1, in one shape."""

from __future__ import annotations

from kfin.api.connection import Kube
from kfin.api.paths import api_path
from kfin.errors import KfinError
from kfin.model import JSON

SOURCES = (("events.k8s.io", "regarding", ("apis", "events.k8s.io", "v1")), ("", "involvedObject", ("api", "v1")))


def object_events(
    kube: Kube, namespace: str, kind: str, name: str, uid: str, most: int = 5, warnings_only: bool = True
) -> list[JSON] | None:
    """The object's recent Events (its Warning Events only, with `warnings_only`), newest first, as {type, reason,
    message, count, lastTimestamp, source}: from events.k8s.io/v1, falling back to core v1 (as kubectl describe
    reads them); None when neither API answers."""
    for group, about, prefix in SOURCES:
        selector = f"{about}.name={name},{about}.kind={kind}" + (",type=Warning" if warnings_only else "")
        query = {"fieldSelector": selector, "limit": 200}
        try:
            page = kube.request(
                "GET", api_path(*prefix, "namespaces", namespace, "events"), query, what=("list", "events", namespace)
            )
        except KfinError:
            continue  # not served, or that field selector is not supported: the other API
        items = [
            _event(e, group)
            for e in (page or {}).get("items") or []
            if isinstance(e, dict) and isinstance(e.get(about), dict) and e[about].get("uid") in (None, "", uid)
        ]
        items.sort(key=lambda e: str(e["lastTimestamp"] or ""), reverse=True)
        return items[:most]
    return None


def _event(event: JSON, group: str) -> JSON:
    """An Event of either API in one shape; `source` is who reported it (its reporting controller or component)."""
    if group:
        return {
            "type": event.get("type"),
            "reason": event.get("reason"),
            "message": event.get("note"),
            "count": event.get("deprecatedCount") or 1,
            "lastTimestamp": event.get("deprecatedLastTimestamp") or event.get("eventTime"),
            "source": event.get("reportingController") or (event.get("deprecatedSource") or {}).get("component"),
        }
    return {
        "type": event.get("type"),
        "reason": event.get("reason"),
        "message": event.get("message"),
        "count": event.get("count") or 1,
        "lastTimestamp": event.get("lastTimestamp") or event.get("eventTime"),
        "source": event.get("reportingComponent") or (event.get("source") or {}).get("component"),
    }
