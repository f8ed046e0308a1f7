"""Resource types from discovery, and the kubectl forms a user types to name them."""

from __future__ import annotations

import re
from typing import Any

from kfin.api.shapes import ShapeError
from kfin.errors import NotFoundError
from kfin.model import JSON, KubeObject, ResourceType
from kfin.names import nearest, quoted

DISCOVERY_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
KIND_NAME = re.compile(r"[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?")  # CRDs: a DNS-1035 label once lower-cased
# (group, resource) served from another's storage -> that other: the same objects, same uids, under two APIs.
# kube-apiserver builds events.k8s.io's Events on core v1's event storage (pkg/registry/events/rest). A scan
# or a watch reads them once, under the first (often a cluster's largest list, and its busiest watch).
SAME_STORAGE = {("events.k8s.io", "events"): ("", "events")}


def stored_as(group: str, resource: str) -> tuple[str, str]:
    """The (group, resource) under which a scan reads the objects of this one."""
    return SAME_STORAGE.get((group, resource), (group, resource))


def one_per_storage(resources: list[ResourceType]) -> list[ResourceType]:
    """The types to scan or watch: those another served type stores left out (they are that type's objects)."""
    served = {(r.group, r.resource) for r in resources}
    return [r for r in resources if SAME_STORAGE.get((r.group, r.resource)) not in served]


def one_object_per_storage(objects: list[KubeObject]) -> list[KubeObject]:
    """A file's objects without the twins of objects it also holds under the storing type: a snapshot of an
    older kfin, or a kubectl List of both APIs, holds each Event twice (same namespace and name, one object)."""
    if not any((o.type.group, o.type.resource) in SAME_STORAGE for o in objects):
        return objects
    stored = {(o.type.group, o.type.resource, o.namespace, o.name) for o in objects}
    return [
        o
        for o in objects
        if (o.type.group, o.type.resource) not in SAME_STORAGE
        or (*SAME_STORAGE[(o.type.group, o.type.resource)], o.namespace, o.name) not in stored
    ]


def _resource_type(
    group: str,
    version: str,
    name: Any,
    kind: Any,
    namespaced: Any,
    verbs: Any,
    short_names: Any,
    singular: Any,
    categories: Any,
    where: str,
) -> ResourceType:
    if (
        not isinstance(name, str)
        or not name
        or not isinstance(kind, str)
        or not kind
        or not isinstance(namespaced, bool)
        or not _strings(verbs)
        or not _strings(short_names or [])
        or not _strings(categories or [])
        or not isinstance(singular or "", str)
    ):
        raise ShapeError(f"{where} answered a malformed resource entry ({str(name)[:60]})")
    # What becomes a path segment is checked as the API server names them (a DNS subdomain for a group, DNS
    # labels for a version and a resource, a kind of letters and digits): an aggregated API naming a resource
    # ".." or "%2e%2e" never turns into a request for something else.
    for text, pattern, what in (
        (group, DISCOVERY_NAME, "group"),
        (version, DISCOVERY_NAME, "version"),
        *((part, DISCOVERY_NAME, "resource") for part in name.split("/")),
        (kind, KIND_NAME, "kind"),
    ):
        if (text or what != "group") and (len(text) > 253 or not pattern.fullmatch(text)):
            raise ShapeError(f"{where} answered a {what} named {quoted(text)}, which the API server never serves")
    return ResourceType(
        group,
        version,
        name,
        kind,
        namespaced,
        tuple(verbs),
        tuple(short_names or ()),
        singular or kind.lower(),
        tuple(categories or ()),
    )


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def parse_resource_list(group: str, version: str, doc: JSON) -> list[ResourceType]:
    """Listable resource types of a legacy discovery document (APIResourceList).

    Subresources (pods/log) and types without `list` (bindings, reviews) are left out.
    """
    where = f"discovery of {group + '/' if group else ''}{version}"
    entries = doc.get("resources")
    if not isinstance(entries, list) or not all(isinstance(r, dict) for r in entries):
        raise ShapeError(f"{where} answered without a list of resources")
    out = []
    for r in entries:
        t = _resource_type(
            group,
            version,
            r.get("name"),
            r.get("kind"),
            r.get("namespaced"),
            r.get("verbs"),
            r.get("shortNames"),
            r.get("singularName"),
            r.get("categories"),
            where,
        )
        if "/" not in t.resource and "list" in t.verbs:
            out.append(t)
    return out


def aggregated_versions(doc: JSON, where: str, core: bool = False) -> dict[tuple[str, str], JSON]:
    """{(group, version): version entry} of an APIGroupDiscoveryList; {} for a legacy document."""
    if doc.get("kind") != "APIGroupDiscoveryList":
        return {}
    items = doc.get("items")
    if not isinstance(items, list):
        raise ShapeError(f"{where} answered aggregated discovery without a list of groups")
    out = {}
    for item in items:
        name = "" if core else ((item.get("metadata") or {}).get("name") if isinstance(item, dict) else None)
        versions = item.get("versions") if isinstance(item, dict) else None
        if not isinstance(name, str) or not isinstance(versions, list):
            raise ShapeError(f"{where} answered a malformed group in aggregated discovery")
        for entry in versions:
            if not isinstance(entry, dict) or not isinstance(entry.get("version"), str):
                raise ShapeError(f"{where} answered a malformed version of group {name or 'core'}")
            out[(name, entry["version"])] = entry
    return out


def parse_aggregated(group: str, version: str, entry: JSON) -> list[ResourceType]:
    """Listable resource types of one version entry of aggregated discovery (apidiscovery.k8s.io/v2).
    Subresources are nested in their resource's entry there; one named as a resource is left out, as the
    legacy documents' are."""
    where = f"discovery of {group + '/' if group else ''}{version}"
    entries = entry.get("resources") or []
    if not isinstance(entries, list) or not all(isinstance(r, dict) for r in entries):
        raise ShapeError(f"{where} answered without a list of resources")
    out = []
    for r in entries:
        kind = (r.get("responseKind") or {}).get("kind") if isinstance(r.get("responseKind"), dict) else None
        scope = r.get("scope")
        t = _resource_type(
            group,
            version,
            r.get("resource"),
            kind,
            scope == "Namespaced" if scope in ("Namespaced", "Cluster") else None,
            r.get("verbs"),
            r.get("shortNames"),
            r.get("singularResource"),
            r.get("categories"),
            where,
        )
        if "/" not in t.resource and "list" in t.verbs:  # a subresource (pods/exec) is no type of its own
            out.append(t)
    return out


class KindLookup:
    """Finds a resource type by what a user types: pvc, persistentvolumeclaims, PersistentVolumeClaim,
    deploy.apps, deployments.v1.apps, widgets.example.com. Earlier types win a tie, as in kubectl
    (core first, then groups in the server's priority order)."""

    def __init__(self, resources: list[ResourceType]):
        self.resources = list(resources)

    def _names(self, r: ResourceType) -> set[str]:
        return {r.resource, r.singular, r.kind.lower(), *r.short_names}

    def find(self, text: str) -> ResourceType:
        named = self.all_named(text)
        if named:
            return named[0]
        wanted = text.strip().lower()
        if not wanted:
            raise NotFoundError("empty resource type")
        raise NotFoundError(f'the server doesn\'t have a resource type "{text}"{self._suggestion(wanted)}')

    def all_named(self, text: str) -> list[ResourceType]:
        """Every type `text` names, the one `find` picks first: `widget` may name the widgets of two groups."""
        wanted = text.strip().lower()
        if not wanted:
            return []
        named = [r for r in self.resources if wanted in self._names(r)]
        for r in self.resources:  # name.group and name.version.group
            qualified = {
                form for name in self._names(r) for form in (f"{name}.{r.group}", f"{name}.{r.version}.{r.group}")
            }
            if r.group and r not in named and wanted in qualified:
                named.append(r)
        return named

    def _suggestion(self, wanted: str) -> str:
        """The nearest type, named by its plural (kubectl's canonical form)."""
        plural_of: dict[str, str] = {}
        for r in reversed(self.resources):  # earlier types win
            for name in self._names(r) | {r.qualified}:
                plural_of[name] = r.qualified
        close = nearest(wanted, plural_of)
        return f" (did you mean {plural_of[close]}?)" if close else ""

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group = api_version.rpartition("/")[0]
        for r in self.resources:
            if r.group == group and r.kind == kind:
                return r
        return None
