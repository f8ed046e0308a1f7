"""Request paths, the only place they are built: percent-encoded segments, so that no name, namespace or
group can add a segment, a query or a fragment (`../secrets/x`, `a?b`, `a#b` stay one segment)."""

from __future__ import annotations

from urllib.parse import quote

from kfin.model import ResourceType


def segment(text: str) -> str:
    """One path segment, percent-encoded: nothing in it can reach another path, query or fragment."""
    return quote(text, safe="")


def api_path(*segments: str) -> str:
    """`/seg/seg/...`, each segment percent-encoded."""
    return "".join("/" + segment(s) for s in segments)


def resource_path(
    rtype: ResourceType, namespace: str | None = None, name: str | None = None, subresource: str | None = None
) -> str:
    """The path of a resource type's collection (in a namespace when it is namespaced and one is given),
    of one object in it, or of one of its subresources."""
    segments = ["apis", rtype.group, rtype.version] if rtype.group else ["api", rtype.version]
    if rtype.namespaced and namespace:
        segments += ["namespaces", namespace]
    segments.append(rtype.resource)
    if name:
        segments.append(name)
        if subresource:
            segments.append(subresource)
    return api_path(*segments)


def group_version_path(group: str, version: str) -> str:
    """Legacy discovery of one group version: /api/v1 or /apis/GROUP/VERSION."""
    return api_path("apis", group, version) if group else api_path("api", version)
