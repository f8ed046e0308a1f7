"""Resource types from discovery, and the kubectl forms a user types to name them."""

from __future__ import annotations

import difflib

from kfin.errors import NotFoundError
from kfin.model import ResourceType


def parse_discovery(core: dict | None, group_lists: list[tuple[str, str, dict]]) -> list[ResourceType]:
    """Listable resource types from /api/v1 and each group's preferred /apis/GROUP/VERSION.

    Subresources (pods/log) and types without `list` (bindings, reviews) are left out.
    """
    out = []
    documents = ([("", "v1", core)] if core else []) + group_lists
    for group, version, doc in documents:
        for r in (doc or {}).get("resources") or []:
            if "/" in r["name"] or "list" not in r.get("verbs", []):
                continue
            out.append(ResourceType(group, version, r["name"], r["kind"], bool(r.get("namespaced")),
                                    tuple(r.get("verbs", ())), tuple(r.get("shortNames") or ()),
                                    r.get("singularName") or r["kind"].lower(), tuple(r.get("categories") or ())))
    return out


class Catalog:
    """Finds a resource type by what a user types: pvc, persistentvolumeclaims, PersistentVolumeClaim,
    deploy.apps, deployments.v1.apps, widgets.example.com. Earlier types win a tie, as in kubectl
    (core first, then groups in the server's priority order)."""

    def __init__(self, resources: list[ResourceType]):
        self.resources = list(resources)

    def _names(self, r: ResourceType) -> set[str]:
        return {r.resource, r.singular, r.kind.lower(), *r.short_names}

    def find(self, text: str) -> ResourceType:
        wanted = text.strip().lower()
        if not wanted:
            raise NotFoundError("empty resource type")
        for r in self.resources:
            if wanted in self._names(r):
                return r
        for r in self.resources:  # name.group and name.version.group
            for name in self._names(r):
                if wanted in (f"{name}.{r.group}", f"{name}.{r.version}.{r.group}") and r.group:
                    return r
        raise NotFoundError(f'the server doesn\'t have a resource type "{text}"{self._suggestion(wanted)}')

    def _suggestion(self, wanted: str) -> str:
        """The nearest type, named by its plural (kubectl's canonical form)."""
        plural_of: dict[str, str] = {}
        for r in reversed(self.resources):  # earlier types win
            for name in self._names(r) | {r.qualified}:
                plural_of[name] = r.qualified
        close = difflib.get_close_matches(wanted, sorted(plural_of), n=1, cutoff=0.75)
        return f" (did you mean {plural_of[close[0]]}?)" if close else ""

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group = api_version.rpartition("/")[0]
        for r in self.resources:
            if r.group == group and r.kind == kind:
                return r
        return None
