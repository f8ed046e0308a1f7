"""Where an Inventory comes from: a live cluster, a kfin snapshot, or `kubectl get -o json` output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Set
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.connection import PARSING, Kube
from kfin.api.discovery import discover
from kfin.api.jsonstream import members
from kfin.api.resources import KindLookup, one_object_per_storage, one_per_storage
from kfin.api.scan import REDUCED_FIELDS, Lean, Listed, finished, scan, scan_steps, to_object
from kfin.api.shapes import object_problem, resource_problem, type_name
from kfin.errors import UsageError
from kfin.model import JSON, NAMESPACES, Failure, Inventory, KubeObject, ResourceType, format_time, parse_time
from kfin.util.gcpause import paused_gc
from kfin.util.parallel import in_background

EARLY_NAMESPACES = ResourceType("", "v1", "namespaces", "Namespace", False)  # asked for with discovery
SNAPSHOT_KIND = "Snapshot"
SNAPSHOT_API_VERSION = "kfin.dev/v1"
# `stuck` reads namespaces whole: their spec.finalizers and status conditions say what holds them. And the
# admission configuration, which every stuck object's explanation reads (a webhook or policy that fails closed
# gates its finalizers' removal: kfin.core.explain.causes.webhooks, policies): a few small objects, read once whole
# instead of as metadata and then again.
ADMISSION = "admissionregistration.k8s.io"
STUCK_FULL = {
    ("", "namespaces"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    (ADMISSION, "validatingwebhookconfigurations"),
    (ADMISSION, "mutatingwebhookconfigurations"),
    (ADMISSION, "validatingadmissionpolicies"),
    (ADMISSION, "validatingadmissionpolicybindings"),
    (ADMISSION, "mutatingadmissionpolicies"),
    (ADMISSION, "mutatingadmissionpolicybindings"),
}
SNAPSHOT_FULL = set(REDUCED_FIELDS)
FAILURE_FIELDS = ("what", "target", "reason", "message")


def live(
    kube: Kube,
    namespace: str | None,
    *,
    full: Set[tuple[str, str]] = frozenset(STUCK_FULL),
    refresh: bool = False,
    progress: Callable[[int, int], None] | None = None,
    concurrency: int = 16,
    chunk_size: int = 500,
    lean: bool = False,
) -> Inventory:
    """What a scan of the cluster finds; `lean` keeps only what finding stuck objects needs (scan.Lean)."""
    return finished(
        live_steps(
            kube,
            namespace,
            full=full,
            refresh=refresh,
            progress=progress,
            concurrency=concurrency,
            chunk_size=chunk_size,
            lean=lean,
        )
    )


@dataclass
class TypeListed:
    """A step of a live scan: the types discovered, and what is kept of one of them as soon as it is listed."""

    resources: list[ResourceType]
    objects: list[KubeObject]


@dataclass
class BeforeLastList:
    """A step of a lean live scan, while its last list still pages: an Inventory of everything else (that list's
    type counted as listed, though none of its objects is in it yet) and that list's type."""

    inventory: Inventory
    last: ResourceType


def live_steps(
    kube: Kube,
    namespace: str | None,
    *,
    full: Set[tuple[str, str]] = frozenset(STUCK_FULL),
    refresh: bool = False,
    progress: Callable[[int, int], None] | None = None,
    concurrency: int = 16,
    chunk_size: int = 500,
    lean: bool = False,
    listed: bool = False,
    before_last: bool = False,
) -> Generator[TypeListed | BeforeLastList, None, Inventory]:
    """What a scan of the cluster finds (live), returned once it ends; meanwhile, in the caller's thread while the
    lists go on, a step `TypeListed` for each type listed (`listed`), and (`before_last`, a lean scan's) one
    `BeforeLastList` while the last list still pages: the Inventory returned is made afresh. The caller works on
    the steps (kfin.core.read.reads_ahead, kfin.core.read.before_last); the scan calls nothing back."""
    left_out = Lean() if lean else None
    # A lean scan reads Namespaces before anything else (scan.Lean): they are asked for with discovery, not after
    # it, since every API server serves core v1 Namespaces. What discovery says then decides what they count for.
    early = None
    if left_out is not None:
        early = in_background(
            partial(scan, kube, [EARLY_NAMESPACES], namespace, full=full, page_size=chunk_size, lean=left_out)
        )
    served, failures = discover(kube, refresh)
    resources = one_per_storage(served)  # events.k8s.io's Events are core's: read once
    first: tuple[list[KubeObject], list[Failure]] = ([], [])
    listed_first = None
    if early is not None:
        listed_first = next((r for r in resources if _same_type(r, EARLY_NAMESPACES)), None)
        read, read_failures = early.result()
        if listed_first is not None:  # as discovery describes them, and not listed again below
            first = ([KubeObject(listed_first, o.raw) for o in read], read_failures)
            if listed and first[0]:
                yield TypeListed(resources, first[0])
        elif left_out is not None:  # not served as kfin expected: nothing is left out, nothing read early kept
            left_out.whole_namespaces = None
    wide = []
    if namespace is not None and full == SNAPSHOT_FULL:
        # A namespace's snapshot still needs what explains it from elsewhere (RBAC and the controllers it
        # names, volumes, nodes, APIServices, CRDs, leases): those kinds are read cluster-wide, reduced.
        wide = [r for r in resources if (r.group, r.resource) in full and (r.group, r.resource) != NAMESPACES]
    local = [r for r in resources if r not in wide and r is not listed_first]

    before: list[tuple[set[str], list[KubeObject], int]] = []  # what `without` found: see the end

    def without(last: ResourceType, so_far: list[KubeObject], failed: list[Failure]) -> BeforeLastList:
        assert left_out is not None  # asked for only then
        kept = first[0] + so_far
        terminating = {o.uid for o in kept if o.terminating and o.uid}
        with PARSING:  # the last list's pages add owner edges and counts meanwhile
            dependents = left_out.edges.dependents_of(terminating)
            before.append((terminating, dependents, len(left_out.edges.chunks)))
            dropped = dict(left_out.dropped)
        kept += dependents
        everything_else = Inventory(
            resources,
            kept,
            failures=failures + first[1] + failed,  # discovery's, the Namespaces', the other lists'
            observed_at=datetime.now(UTC),
            context=kube.context,
            server=kube.shown,
            namespace=namespace,
            detailed=_detailed(resources, wide, namespace, full, first[1] + failed),
            dropped=dropped,
        )
        return BeforeLastList(everything_else, last)

    steps = scan_steps(
        kube,
        local,
        namespace,
        full=full,
        concurrency=concurrency,
        page_size=chunk_size,
        progress=progress,
        lean=left_out,
        listed=listed,
        last=before_last and left_out is not None and not wide,
    )
    while True:
        try:
            step = next(steps)
        except StopIteration as done:
            objects, list_failures = done.value
            break
        if isinstance(step, Listed):
            yield TypeListed(resources, step.objects)
        else:
            yield without(step.last, step.objects, step.failures)
    objects, list_failures = first[0] + objects, first[1] + list_failures
    if wide:
        more, more_failures = scan(kube, wide, None, full=full, concurrency=concurrency, page_size=chunk_size)
        objects, list_failures = objects + more, list_failures + more_failures
    if left_out is not None:  # of the objects kept only as owner edges, the dependents of Terminating ones
        terminating = {o.uid for o in objects if o.terminating and o.uid}
        found = None
        if before:  # those found before the last list ended, if it added no Terminating object nor an edge to them
            earlier, dependents, mark = before[0]
            if earlier == terminating and not left_out.edges.names_owner_since(
                mark, earlier | {o.uid for o in dependents}
            ):
                found = dependents
        objects += found if found is not None else left_out.edges.dependents_of(terminating)
    return Inventory(
        resources,
        objects,
        failures=failures + list_failures,
        observed_at=datetime.now(UTC),
        context=kube.context,
        server=kube.shown,  # a snapshot is shared: never a password in it
        namespace=namespace,
        detailed=_detailed(resources, wide, namespace, full, list_failures),
        dropped=dict(left_out.dropped) if left_out else {},
    )


def _detailed(
    resources: list[ResourceType],
    wide: list[ResourceType],
    namespace: str | None,
    full: Set[tuple[str, str]],
    list_failures: list[Failure],
) -> set[tuple[str, str, str]]:
    """(group, resource, namespace) of the types read whole, and read without failure: Inventory.detailed."""
    unread = {f.target.split(" ")[0] for f in list_failures}
    return {
        (r.group, r.resource, "" if r in wide else namespace or "")
        for r in resources
        if (r.group, r.resource) in full and r.qualified not in unread
    }


def _same_type(discovered: ResourceType, expected: ResourceType) -> bool:
    return (discovered.group, discovered.version, discovered.resource, discovered.kind, discovered.namespaced) == (
        expected.group,
        expected.version,
        expected.resource,
        expected.kind,
        expected.namespaced,
    )


def save_snapshot(inventory: Inventory, path: str) -> None:
    document = {
        "apiVersion": SNAPSHOT_API_VERSION,
        "kind": SNAPSHOT_KIND,
        "observedAt": format_time(inventory.observed_at),
        "context": inventory.context,
        "server": inventory.server,
        "namespace": inventory.namespace,
        "resources": [r.to_dict() for r in inventory.resources],
        "failures": [f.to_dict() for f in inventory.failures],
        "detailed": sorted([list(d) for d in inventory.detailed]),
        "objects": sorted(
            (o.raw for o in inventory.objects),
            key=lambda raw: (
                raw["apiVersion"],
                raw["kind"],
                raw["metadata"].get("namespace", ""),
                raw["metadata"].get("name", ""),
            ),
        ),
    }
    text = json.dumps(document, indent=1, sort_keys=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        Path(path).write_text(text)


def load(path: str) -> Inventory:
    """A kfin snapshot, or a kubectl `List` (kubectl get ... -o json), read item by item: each is reduced to
    what kfin keeps (ThinObjects for most) before the next is parsed, so memory stays below the file's size.
    `-` is standard input (`kfin snapshot -f - | kfin stuck --from-snapshot -`), read once per run."""
    if path == "-":
        if "-" not in _STDIN:
            _STDIN["-"] = _load_from(sys.stdin, "standard input")
        return _STDIN["-"]
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed below, after the read it guards
    except OSError as error:
        raise UsageError(f"cannot read snapshot {path}: {error.strerror or error}") from None
    with handle:
        return _load_from(handle, path)


_STDIN: dict[str, Inventory] = {}  # standard input can be read only once; a command may load twice


def _load_from(handle: TextIO, shown: str) -> Inventory:
    with paused_gc():
        try:
            return _load(handle, shown)
        except OSError as error:
            raise UsageError(f"cannot read snapshot {shown}: {error.strerror or error}") from None
        except (ValueError, UnicodeDecodeError) as error:
            raise UsageError(f"{shown} is not JSON: {error}") from None
        except RecursionError:  # json's decoder recurses: a hostile file nests arrays by the hundred thousand
            raise UsageError(f"{shown} is nested too deeply to be a snapshot") from None


STREAMED = frozenset({"items", "objects"})
KEEP_ALL = Lean(for_file=True)  # thin, never dropped: a file cannot be read again on demand


def _load(handle: TextIO, path: str) -> Inventory:

    document: JSON = {}
    items: _ListItems | None = None
    kept: list[KubeObject] | None = None
    for key, value in members(handle, STREAMED):
        if key == "items" and isinstance(value, Iterator):
            items = _ListItems(path, document.get("apiVersion"))
            for index, item in enumerate(value):
                items.add(index, item)
        elif key == "objects" and isinstance(value, Iterator):
            if "resources" in document:  # kfin writes its types first: each object is kept as it is read
                kept = _snapshot_objects(value, _snapshot_resources(document, path), path)
            else:
                document[key] = list(value)
        else:
            document[key] = value
    if document.get("kind") == SNAPSHOT_KIND and document.get("apiVersion") == SNAPSHOT_API_VERSION:
        return _from_snapshot(document, path, kept)
    if items is not None and str(document.get("kind", "")).endswith("List"):
        return items.inventory(document)
    if isinstance(document.get("items"), list) and str(document.get("kind", "")).endswith("List"):
        listed = _ListItems(path, document.get("apiVersion"))
        for index, item in enumerate(document["items"]):
            listed.add(index, item)
        return listed.inventory(document)
    raise UsageError(f"{path} is neither a kfin snapshot nor a kubectl List")


def _kept(rtype: ResourceType, raw: JSON) -> KubeObject:
    """A loaded object as a scan would keep it: whole (reduced) kinds, Terminating objects and objects with
    finalizers as they are, the rest thin."""
    meta = raw.get("metadata") or {}
    if (rtype.group, rtype.resource) in REDUCED_FIELDS or meta.get("deletionTimestamp") or meta.get("finalizers"):
        return KubeObject(rtype, raw)
    kept = KEEP_ALL.keep(rtype, meta)
    assert kept is not None  # a file's Lean keeps everything
    return kept


def _entries(document: JSON, key: str, path: str) -> list[Any]:
    value = document.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise UsageError(f"{path}: {key} is {type_name(value)}, not a list")
    return value


def _bad(path: str, where: str, problem: str) -> UsageError:
    return UsageError(f"{path}: {where} is malformed: {problem}")


def _from_snapshot(document: JSON, path: str, kept: list[KubeObject] | None = None) -> Inventory:
    """A kfin snapshot; `kept`: its objects, when they were already turned into KubeObjects as read."""
    for key in ("observedAt", "context", "server", "namespace"):
        if document.get(key) is not None and not isinstance(document[key], str):
            raise UsageError(f"{path}: {key} is {type_name(document[key])}, not a string")
    resources = _snapshot_resources(document, path)
    failures = []
    for index, entry in enumerate(_entries(document, "failures", path)):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in FAILURE_FIELDS):
            raise _bad(path, f"failures[{index}]", "a failure has string " + ", ".join(FAILURE_FIELDS))
        keys = entry.get("keys") or []
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise _bad(path, f"failures[{index}].keys", "a failure's keys are strings")
        failures.append(Failure(**{k: entry[k] for k in FAILURE_FIELDS}, keys=tuple(keys)))
    detailed = set()
    for index, entry in enumerate(_entries(document, "detailed", path)):
        if not isinstance(entry, list) or len(entry) != 3 or not all(isinstance(v, str) for v in entry):
            raise _bad(path, f"detailed[{index}]", "each entry is [group, resource, namespace]")
        detailed.add(tuple(entry))
    objects = kept if kept is not None else _snapshot_objects(_entries(document, "objects", path), resources, path)
    objects = one_object_per_storage(objects)  # an older kfin wrote each Event under both APIs
    return Inventory(
        resources,
        objects,
        failures=failures,
        observed_at=parse_time(document.get("observedAt")) or datetime.now(UTC),
        context=document.get("context") or "",
        server=document.get("server") or "",
        namespace=document.get("namespace"),
        detailed=detailed,
    )


def _snapshot_resources(document: JSON, path: str) -> list[ResourceType]:
    resources = []
    for index, entry in enumerate(_entries(document, "resources", path)):
        problem = resource_problem(entry)
        if problem:
            raise _bad(path, f"resources[{index}]", problem)
        resources.append(ResourceType.from_dict(entry))
    return resources


def _snapshot_objects(raws: Iterable[Any], resources: list[ResourceType], path: str) -> list[KubeObject]:
    lookup = KindLookup(resources + builtin_resources())
    objects = []
    for index, raw in enumerate(raws):
        problem = object_problem(raw) or _identity_problem(raw)
        if problem:
            raise _bad(path, f"objects[{index}]", problem)
        objects.append(_kept(_type_of(lookup, raw), raw))
    return objects


def _identity_problem(raw: JSON) -> str | None:
    for key in ("apiVersion", "kind"):
        if not raw.get(key):
            return f"{key} is missing"
    return None


class _ListItems:
    """The items of a kubectl List, turned into kept objects one by one as they are read. The List's own
    kind (kubectl writes it after the items) is needed only for an item without a kind: those wait."""

    def __init__(self, path: str, api_version: object):
        if api_version is not None and not isinstance(api_version, str):
            raise UsageError(f"{path}: apiVersion is {type_name(api_version)}, not a string")
        self.path, self.api_version = path, api_version
        self.kinds = KindLookup(builtin_resources())
        self.objects: list[KubeObject] = []
        self.seen: dict[tuple[str, str], ResourceType] = {}
        self.kindless: list[tuple[int, JSON]] = []

    def add(self, index: int, item: Any, list_kind: str | None = None) -> None:
        problem = object_problem(item)
        if problem:
            raise _bad(self.path, f"items[{index}]", problem)
        kind = item.get("kind") or (list_kind[:-4] if list_kind and list_kind != "List" else "")
        if not kind and list_kind is None:
            self.kindless.append((index, item))
            return
        if not kind:
            raise _bad(self.path, f"items[{index}]", "it has no kind")
        meta = item.get("metadata") or {}
        if not meta.get("name"):
            raise _bad(self.path, f"items[{index}]", "metadata.name is missing")
        api_version = item.get("apiVersion") or self.api_version or "v1"
        rtype = (
            self.kinds.for_kind(api_version, kind)
            or self.seen.get((api_version, kind))
            or _guess_type(api_version, kind, bool(meta.get("namespace")))
        )
        self.seen[(api_version, kind)] = rtype
        # Secret data and specs are dropped here; most objects are kept thin (scan.to_object)
        kept = to_object(
            rtype,
            dict(item, apiVersion=api_version, kind=kind),
            (rtype.group, rtype.resource) in REDUCED_FIELDS,
            KEEP_ALL,
        )
        assert kept is not None  # a file's Lean keeps everything
        self.objects.append(kept)

    def inventory(self, document: JSON) -> Inventory:
        list_kind = str(document.get("kind") or "List")
        waiting, self.kindless = self.kindless, []
        for index, item in waiting:
            self.add(index, item, list_kind)
        self.objects = one_object_per_storage(self.objects)
        resources = list(dict.fromkeys(o.type for o in self.objects))
        # Items of a List are whole objects: the kinds explanations read are known in full where present.
        detailed = {(r.group, r.resource, "") for r in resources if (r.group, r.resource) in REDUCED_FIELDS}
        return Inventory(
            resources,
            self.objects,
            failures=[],
            observed_at=datetime.now(UTC),
            context="",
            server=f"file:{self.path}",
            namespace=None,
            detailed=detailed,
        )


def _type_of(lookup: KindLookup, raw: JSON) -> ResourceType:
    meta = raw.get("metadata") or {}
    return lookup.for_kind(raw["apiVersion"], raw["kind"]) or _guess_type(
        raw["apiVersion"], raw["kind"], bool(meta.get("namespace"))
    )


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
    namespace are reported stuck (kfin.core.explain.stuck keeps to the inventory's namespace)."""
    if namespace is None:
        return inventory
    kept = [
        o
        for o in inventory.objects
        if o.namespace == namespace or not o.type.namespaced or (o.type.group, o.type.resource) in REDUCED_FIELDS
    ]
    return Inventory(
        inventory.resources,
        kept,
        failures=inventory.failures,
        observed_at=inventory.observed_at,
        context=inventory.context,
        server=inventory.server,
        namespace=namespace,
        detailed=inventory.detailed,
    )
