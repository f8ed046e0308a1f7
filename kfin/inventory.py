"""Where an Inventory comes from: a live cluster, a kfin snapshot, or `kubectl get -o json` output."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from kfin.builtin_kinds import builtin_resources
from kfin.discovery import discover
from kfin.errors import UsageError
from kfin.gcpause import paused_gc
from kfin.model import Failure, Inventory, KubeObject, ResourceType, format_time, parse_time
from kfin.resources import Catalog
from kfin.scan import NAMESPACES, REDUCED_FIELDS, reduce_object, scan, slim_metadata, with_managers
from kfin.shapes import object_problem, resource_problem, type_name

SNAPSHOT_KIND = "Snapshot"
SNAPSHOT_API_VERSION = "kfin.dev/v1"
# `stuck` reads namespaces whole: their spec.finalizers and status conditions say what holds them.
STUCK_FULL = {("", "namespaces"), ("", "persistentvolumeclaims"), ("", "persistentvolumes")}
SNAPSHOT_FULL = set(REDUCED_FIELDS)
FAILURE_FIELDS = ("what", "target", "reason", "message")


def live(kube, namespace: str | None, *, full: set = frozenset(STUCK_FULL), refresh: bool = False,
         progress=None, concurrency: int = 16, chunk_size: int = 500) -> Inventory:
    resources, failures = discover(kube, refresh)
    wide = []
    if namespace is not None and full == SNAPSHOT_FULL:
        # A namespace's snapshot still needs what explains it from elsewhere (RBAC and the controllers it
        # names, volumes, nodes, APIServices, CRDs, leases): those kinds are read cluster-wide, reduced.
        wide = [r for r in resources if (r.group, r.resource) in full and (r.group, r.resource) != NAMESPACES]
    local = [r for r in resources if r not in wide]
    objects, list_failures = scan(kube, local, namespace, full=full, concurrency=concurrency,
                                  page_size=chunk_size, progress=progress)
    if wide:
        more, more_failures = scan(kube, wide, None, full=full, concurrency=concurrency, page_size=chunk_size)
        objects, list_failures = objects + more, list_failures + more_failures
    unread = {f.target.split(" ")[0] for f in list_failures}
    detailed = {(r.group, r.resource, "" if r in wide else namespace or "") for r in resources
                if (r.group, r.resource) in full and r.qualified not in unread}
    inv = Inventory(resources, objects, failures + list_failures, datetime.now(timezone.utc), kube.context,
                    kube.server, namespace, detailed)
    return inv


def save_snapshot(inventory: Inventory, path: str) -> None:
    document = {
        "apiVersion": SNAPSHOT_API_VERSION, "kind": SNAPSHOT_KIND,
        "observedAt": format_time(inventory.observed_at), "context": inventory.context, "server": inventory.server,
        "namespace": inventory.namespace,
        "resources": [r.to_dict() for r in inventory.resources],
        "failures": [f.to_dict() for f in inventory.failures],
        "detailed": sorted([list(d) for d in inventory.detailed]),
        "objects": sorted((o.raw for o in inventory.objects),
                          key=lambda raw: (raw["apiVersion"], raw["kind"], raw["metadata"].get("namespace", ""),
                                           raw["metadata"].get("name", ""))),
    }
    text = json.dumps(document, indent=1, sort_keys=False) + "\n"
    if path == "-":
        import sys
        sys.stdout.write(text)
    else:
        Path(path).write_text(text)


def load(path: str) -> Inventory:
    """A kfin snapshot, or a kubectl `List` (kubectl get ... -o json)."""
    with paused_gc():
        return _load(path)


def _load(path: str) -> Inventory:
    try:
        document = json.loads(Path(path).read_text())
    except OSError as error:
        raise UsageError(f"cannot read snapshot {path}: {error.strerror or error}") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise UsageError(f"{path} is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise UsageError(f"{path} is neither a kfin snapshot nor a kubectl List")
    if document.get("kind") == SNAPSHOT_KIND and document.get("apiVersion") == SNAPSHOT_API_VERSION:
        return _from_snapshot(document, path)
    if isinstance(document.get("items"), list) and str(document.get("kind", "")).endswith("List"):
        return _from_list(document, path)
    raise UsageError(f"{path} is neither a kfin snapshot nor a kubectl List")


def _entries(document: dict, key: str, path: str) -> list:
    value = document.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise UsageError(f"{path}: {key} is {type_name(value)}, not a list")
    return value


def _bad(path: str, where: str, problem: str) -> UsageError:
    return UsageError(f"{path}: {where} is malformed: {problem}")


def _from_snapshot(document: dict, path: str) -> Inventory:
    for key in ("observedAt", "context", "server", "namespace"):
        if document.get(key) is not None and not isinstance(document[key], str):
            raise UsageError(f"{path}: {key} is {type_name(document[key])}, not a string")
    resources = []
    for index, entry in enumerate(_entries(document, "resources", path)):
        problem = resource_problem(entry)
        if problem:
            raise _bad(path, f"resources[{index}]", problem)
        resources.append(ResourceType.from_dict(entry))
    failures = []
    for index, entry in enumerate(_entries(document, "failures", path)):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in FAILURE_FIELDS):
            raise _bad(path, f"failures[{index}]", "a failure has string " + ", ".join(FAILURE_FIELDS))
        failures.append(Failure(**{k: entry[k] for k in FAILURE_FIELDS}))
    detailed = set()
    for index, entry in enumerate(_entries(document, "detailed", path)):
        if not isinstance(entry, list) or len(entry) != 3 or not all(isinstance(v, str) for v in entry):
            raise _bad(path, f"detailed[{index}]", "each entry is [group, resource, namespace]")
        detailed.add(tuple(entry))
    catalog = Catalog(resources + builtin_resources())
    objects = []
    for index, raw in enumerate(_entries(document, "objects", path)):
        problem = object_problem(raw) or _identity_problem(raw)
        if problem:
            raise _bad(path, f"objects[{index}]", problem)
        objects.append(KubeObject(_type_of(catalog, raw), raw))
    return Inventory(resources, objects, failures, parse_time(document.get("observedAt")) or datetime.now(timezone.utc),
                     document.get("context") or "", document.get("server") or "", document.get("namespace"), detailed)


def _identity_problem(raw: dict) -> str | None:
    for key in ("apiVersion", "kind"):
        if not raw.get(key):
            return f"{key} is missing"
    return None


def _from_list(document: dict, path: str) -> Inventory:
    list_kind = document.get("kind", "List")
    if not isinstance(document.get("apiVersion", "v1"), str):
        raise UsageError(f"{path}: apiVersion is {type_name(document['apiVersion'])}, not a string")
    catalog = Catalog(builtin_resources())
    objects, seen = [], {}
    for index, item in enumerate(document["items"]):
        problem = object_problem(item)
        if problem:
            raise _bad(path, f"items[{index}]", problem)
        api_version = item.get("apiVersion") or document.get("apiVersion") or "v1"
        kind = item.get("kind") or (list_kind[:-4] if list_kind != "List" else "")
        if not kind:
            raise _bad(path, f"items[{index}]", "it has no kind")
        meta = item.get("metadata") or {}
        if not meta.get("name"):
            raise _bad(path, f"items[{index}]", "metadata.name is missing")
        rtype = catalog.for_kind(api_version, kind) or seen.get((api_version, kind)) or _guess_type(
            api_version, kind, bool(meta.get("namespace")))
        seen[(api_version, kind)] = rtype
        raw = with_managers({"apiVersion": api_version, "kind": kind, "metadata": slim_metadata(meta)}, meta)
        raw.update(reduce_object((rtype.group, rtype.resource), item))  # Secret data and specs are dropped here
        objects.append(KubeObject(rtype, raw))
    resources = list(dict.fromkeys(o.type for o in objects))
    # Items of a List are whole objects: the kinds explanations read are known in full where present.
    detailed = {(r.group, r.resource, "") for r in resources if (r.group, r.resource) in REDUCED_FIELDS}
    return Inventory(resources, objects, [], datetime.now(timezone.utc), "", f"file:{path}", None, detailed)


def _type_of(catalog: Catalog, raw: dict) -> ResourceType:
    meta = raw.get("metadata") or {}
    return catalog.for_kind(raw["apiVersion"], raw["kind"]) or _guess_type(raw["apiVersion"], raw["kind"],
                                                                          bool(meta.get("namespace")))


def _guess_type(api_version: str, kind: str, namespaced: bool) -> ResourceType:
    """A custom kind from a file without discovery: kubectl's default plural (lower case, + s/es/ies)."""
    group, _, version = api_version.rpartition("/")
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        plural = lower[:-1] + "ies"
    elif lower.endswith(("s", "x", "z", "ch", "sh")):
        plural = lower + "es"
    else:
        plural = lower + "s"
    return ResourceType(group, version, plural, kind, namespaced, ("get", "list"), (), lower)


def restrict(inventory: Inventory, namespace: str | None) -> Inventory:
    """A saved inventory seen through -n NS: that namespace's objects, the Namespace itself, and what
    explanations read elsewhere (cluster-scoped objects, the kinds kept whole). Only objects of the
    namespace are reported stuck (kfin.stuck keeps to the inventory's namespace)."""
    if namespace is None:
        return inventory
    kept = [o for o in inventory.objects if o.namespace == namespace or not o.type.namespaced
            or (o.type.group, o.type.resource) in REDUCED_FIELDS]
    return Inventory(inventory.resources, kept, inventory.failures, inventory.observed_at, inventory.context,
                     inventory.server, namespace, inventory.detailed)
