"""Listing every resource type in parallel, metadata-only, page by page, failures reported per type."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Sequence, Set
from dataclasses import dataclass
from functools import partial
from itertools import compress
from types import MappingProxyType
from typing import Any, Protocol, TypeVar, cast

from kfin.api.connection import Kube
from kfin.api.discovery import failure_of, no_longer_served
from kfin.api.paths import resource_path
from kfin.api.protobuf import OwnerRef, owners_of
from kfin.errors import KfinError, NotFoundError
from kfin.model import (
    CRDS,
    JSON,
    MANAGERS,
    NAMESPACES,
    Failure,
    KubeObject,
    OwnedObject,
    OwnerTuple,
    ResourceType,
    ThinObject,
    owner_tuples,
)
from kfin.util.gcpause import paused_gc
from kfin.util.parallel import completed

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# OwnerEdges' rows: (types, namespaces, names, uids, owners' uids, masks), a column each, filled, then packed
OpenRows = tuple[list[ResourceType], list[str], list[str], list[str], list[str], bytearray]
PackedRows = tuple[list[ResourceType], list[str], str, str, str, bytes]

# What explanations need of the few kinds read as full objects, and nothing more: a snapshot never holds
# Secret data, environment values, or container specs. A command's catalog keeps a few more fields of what its
# related holders read on demand (KeptFields, kfin.core.read.catalog.Catalog.kept_fields), never by writing here.
_REDUCED_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "namespaces"): ("spec", "status"),
    ("", "persistentvolumeclaims"): (
        "spec.volumeName",
        "spec.storageClassName",
        "spec.volumeAttributesClassName",
        "spec.dataSource",
        "spec.dataSourceRef",
        "status.phase",
        "status.currentVolumeAttributesClassName",
        "status.modifyVolumeStatus",
        "status.conditions",  # Unused (1.36+, PersistentVolumeClaimUnusedSinceTime): the server's word on its use
    ),
    ("", "persistentvolumes"): (
        "spec.claimRef",
        "spec.persistentVolumeReclaimPolicy",
        "spec.storageClassName",
        "spec.csi.driver",
        "spec.csi.volumeHandle",
        "spec.volumeAttributesClassName",
        "status.phase",
    ),
    ("", "pods"): (
        "spec.nodeName",
        "spec.serviceAccountName",
        "spec.volumes",
        "spec.schedulingGroup",  # the PodGroup it belongs to (1.36+, GenericWorkload)
        "status.phase",
        "status.conditions",
        "status.containerStatuses",
    ),
    ("apps", "deployments"): ("spec.replicas", "spec.template.spec.serviceAccountName", "status.readyReplicas"),
    ("apps", "statefulsets"): ("spec.replicas", "spec.template.spec.serviceAccountName", "status.readyReplicas"),
    ("apps", "daemonsets"): ("spec.template.spec.serviceAccountName", "status.numberReady"),
    ("apiregistration.k8s.io", "apiservices"): ("spec.service", "spec.group", "spec.version", "status.conditions"),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        "spec.group",
        "spec.names",
        "spec.scope",
        "spec.conversion.strategy",
        "spec.conversion.webhook.clientConfig.service",
        "spec.conversion.webhook.clientConfig.url",
        "status.conditions",
    ),
    ("storage.k8s.io", "volumeattachments"): ("spec", "status.attached"),
    ("", "nodes"): ("spec.taints", "status.conditions"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): ("webhooks",),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): ("webhooks",),
    ("discovery.k8s.io", "endpointslices"): ("endpoints",),
    ("coordination.k8s.io", "leases"): ("spec.holderIdentity", "spec.renewTime", "spec.leaseDurationSeconds"),
    ("rbac.authorization.k8s.io", "clusterroles"): ("rules",),
    ("rbac.authorization.k8s.io", "roles"): ("rules",),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): ("roleRef", "subjects"),
    ("rbac.authorization.k8s.io", "rolebindings"): ("roleRef", "subjects"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): ("spec",),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): ("spec",),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): ("spec",),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): ("spec",),
    ("networking.k8s.io", "servicecidrs"): ("spec.cidrs", "status.conditions"),
    ("snapshot.storage.k8s.io", "volumesnapshots"): (
        "spec.source",
        "status.readyToUse",
        "status.boundVolumeSnapshotContentName",
    ),
    ("snapshot.storage.k8s.io", "volumesnapshotcontents"): (
        "spec.volumeSnapshotRef",
        "spec.deletionPolicy",
        "status.readyToUse",
    ),
    ("networking.k8s.io", "ipaddresses"): ("spec.parentRef",),
    ("resource.k8s.io", "resourceclaims"): ("status.reservedFor", "status.allocation.devices.results"),
    ("policy", "poddisruptionbudgets"): ("spec.selector", "status.disruptionsAllowed"),
}
REDUCED_FIELDS = MappingProxyType(_REDUCED_FIELDS)  # read-only: what one command keeps never reaches the next


class KeptFields(Protocol):
    """The fields to keep too when objects of a type are read whole, beyond REDUCED_FIELDS (a command's catalog:
    kfin.core.read.catalog.Catalog, handed in by the reader that reads them)."""

    def kept_fields(self, group: str, resource: str) -> tuple[str, ...]: ...


def kept_of(key: tuple[str, str], kept: KeptFields | None) -> tuple[str, ...]:
    """The catalog's fields to keep too of objects of `key` read whole (none without a catalog)."""
    return kept.kept_fields(*key) if kept is not None else ()


def finalizer_managers(meta: JSON) -> dict[str, str]:
    """Which field manager added each finalizer, from managedFields (`f:metadata/f:finalizers/v:"NAME"`):
    evidence of a finalizer's owner that even a user who may not read RBAC can see."""
    out: dict[str, str] = {}
    for entry in meta.get("managedFields") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("manager"), str):
            continue
        owned = ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:finalizers") or {}
        for key in owned if isinstance(owned, dict) else ():
            if key.startswith('v:"') and key.endswith('"'):
                out[key[3:-1]] = entry["manager"]
    return out


def with_managers(raw: JSON, meta: JSON) -> JSON:
    """`raw` with the finalizer managers of `meta` (when it names any), before managedFields are dropped."""
    managers = finalizer_managers(meta) if meta.get("finalizers") else {}
    if managers:
        raw[MANAGERS] = managers
    return raw


def slim_metadata(meta: JSON) -> JSON:
    """Metadata without server bookkeeping (managedFields) and without kubectl's copy of the object.
    Copies only when there is something to drop: this runs once for every object of a scan."""
    if "managedFields" in meta:
        meta = {k: v for k, v in meta.items() if k != "managedFields"}
    annotations = meta.get("annotations")
    if annotations and LAST_APPLIED in annotations:
        meta = dict(meta, annotations={k: v for k, v in annotations.items() if k != LAST_APPLIED})
    return meta


def _pod_volume(volume: JSON) -> JSON | None:
    if volume.get("persistentVolumeClaim"):
        return {
            "name": volume.get("name"),
            "persistentVolumeClaim": {"claimName": volume["persistentVolumeClaim"].get("claimName")},
        }
    if volume.get("ephemeral") is not None:
        return {"name": volume.get("name"), "ephemeral": {}}
    return None


WEBHOOK_FIELDS = ("name", "rules", "failurePolicy", "namespaceSelector", "objectSelector", "matchConditions")


def _webhook(hook: JSON) -> JSON:
    """What decides whether a webhook gates an object, and where its backend is (never its CA bundle)."""
    out = {k: hook[k] for k in WEBHOOK_FIELDS if k in hook}
    config: JSON = hook["clientConfig"] if isinstance(hook.get("clientConfig"), dict) else {}
    out["clientConfig"] = {k: config[k] for k in ("service", "url") if k in config}
    return out


def reduce_object(key: tuple[str, str], obj: JSON, kept: tuple[str, ...] = ()) -> JSON:
    """The fields of REDUCED_FIELDS (and `kept`, kept_of) that the object has, at their places, and nothing else."""
    out: JSON = {}
    for path in dict.fromkeys((*REDUCED_FIELDS.get(key, ()), *kept)) if kept else REDUCED_FIELDS.get(key, ()):
        node: Any = obj
        parts = path.split(".")
        for part in parts:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            continue
        if key == ("", "pods") and path == "spec.volumes":
            node = [v for v in map(_pod_volume, node) if v]
        elif path == "webhooks" and isinstance(node, list):
            node = [_webhook(w) for w in node if isinstance(w, dict)]
        elif path == "status.containerStatuses" and isinstance(node, list):  # whether it runs, never its image
            node = [
                {
                    "name": c.get("name"),
                    "ready": c.get("ready"),
                    "restartCount": c.get("restartCount"),
                    "state": {
                        k: {"reason": (v or {}).get("reason")}
                        for k, v in (c.get("state") or {}).items()
                        if isinstance(v, dict)
                    },
                }
                for c in node
                if isinstance(c, dict)
            ]
        elif path == "endpoints" and isinstance(node, list):  # whether each is ready, not where it is
            node = [{"conditions": e.get("conditions")} for e in node if isinstance(e, dict)]
        target = out
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = node
    return out


class OwnerEdges:
    """Objects a lean scan knows only as edges of the owner graph: name, uid and their owners' uids, for
    every object with owners that is neither being deleted nor carries a finalizer (most of a cluster:
    Pods, ReplicaSets, EndpointSlices...). Rows are packed a thousand at a time into a few strings
    (about 110 bytes a row instead of an object's 400), and only the dependents of Terminating objects
    come out again as OwnedObjects (dependents_of), which is all the garbage collector's causes read."""

    CHUNK = 1000
    SEPARATOR = "/"  # never in a name (a path segment) nor in a uid; rows that have one are kept as objects

    def __init__(self) -> None:
        self.chunks: list[PackedRows] = []
        self._open: OpenRows = ([], [], [], [], [], bytearray())

    def add(self, rtype: ResourceType, namespace: str, name: str, uid: str, owners: Sequence[str], mask: int) -> bool:
        """False when the row cannot be packed (a separator in it, or more than 8 owners)."""
        sep, joined = self.SEPARATOR, owners[0] if len(owners) == 1 else ",".join(owners)
        if len(owners) > 8 or sep in name or sep in uid or sep in joined or joined.count(",") != len(owners) - 1:
            return False  # (a comma in an owner's uid shows as one comma too many)
        types, namespaces, names, uids, owner_uids, masks = self._open
        types.append(rtype)
        namespaces.append(namespace)
        names.append(name)
        uids.append(uid)
        owner_uids.append(joined)
        masks.append(mask)
        if len(names) >= self.CHUNK:
            self._close()
        return True

    def _close(self) -> None:
        types, namespaces, names, uids, owner_uids, masks = self._open
        if names:
            sep = self.SEPARATOR
            self.chunks.append((types, namespaces, sep.join(names), sep.join(uids), sep.join(owner_uids), bytes(masks)))
        self._open = ([], [], [], [], [], bytearray())

    def names_owner_since(self, mark: int, uids: set[str]) -> bool:
        """Whether a row added after the first `mark` chunks names one of `uids` as an owner."""
        self._close()
        return any(_naming(owners, owners.split(self.SEPARATOR), uids) for *_, owners, _ in self.chunks[mark:])

    def dependents_of(self, uids: set[str], depth: int = 5) -> list[KubeObject]:
        """The objects that name one of `uids` as owner, and theirs, down to `depth` levels (the garbage
        collector's causes follow blocking dependents four deep)."""
        self._close()
        found: list[KubeObject] = []
        seen: set[str] = set()
        frontier = set(uids)
        unpacked: dict[int, tuple[list[str], list[str], list[str]]] = {}  # a chunk's rows, split once a call
        for _ in range(depth):
            if not frontier:
                break
            following = set()
            for at, (types, namespaces, names, ids, owners, masks) in enumerate(self.chunks):
                if at not in unpacked:
                    sep = self.SEPARATOR
                    unpacked[at] = (owners.split(sep), names.split(sep), ids.split(sep))
                rows, name_list, id_list = unpacked[at]
                for i in _naming(owners, rows, frontier):
                    uid = id_list[i]
                    if uid in seen:
                        continue
                    seen.add(uid)
                    split = rows[i].split(",")
                    found.append(
                        OwnedObject(
                            types[i],
                            name_list[i],
                            namespaces[i],
                            uid,
                            split[0] if len(split) == 1 else tuple(split),
                            masks[i],
                        )
                    )
                    following.add(uid)
            frontier = following
        return found


def _naming(owners: str, rows: list[str], uids: set[str]) -> list[int]:
    """The rows of a packed chunk (`owners`, its owners' column; `rows`, that column split) that name one of `uids`
    as an owner."""
    if "," in owners:  # some row has several owners
        return [i for i, o in enumerate(rows) if o in uids or ("," in o and not uids.isdisjoint(o.split(",")))]
    if uids.isdisjoint(rows):  # decided without a loop in Python
        return []
    return list(compress(range(len(rows)), map(uids.__contains__, rows)))


def blocking_bits(flags: Iterable[bool | None]) -> int:
    """Owners' blockOwnerDeletion, in order, as OwnerEdges and OwnedObject keep them: bit i for owner i."""
    return sum(1 << at for at, flag in enumerate(flags) if flag)


class Lean:
    """What a scan for stuck objects may leave out, and what it left out.

    Objects that are not being deleted and carry no finalizer are not kept as objects: those with owners
    become rows of OwnerEdges (their dependents of Terminating objects come back as OwnedObjects after the
    scan), those without owners are only counted; except in the namespaces whose content an explanation
    lists (Terminating ones), and CRDs (a few hundred at most), which are kept thin. What stays is what the
    report and the blocking graph need: Terminating objects, objects with finalizers, the owner edges that
    lead to them, and the whole kinds explanations read. Facts read a left-out (type, namespace) again, on
    demand, if an explanation asks.

    `for_file`: a file cannot be read again, so nothing is left out and owners keep kind and name (the
    graph names them): ThinObjects.
    """

    def __init__(self, whole_namespaces: set[str] | None = None, for_file: bool = False):
        self.whole_namespaces = whole_namespaces  # None: not known yet, nothing is left out
        self.for_file = for_file
        self.dropped: Counter[tuple[str, str, str]] = Counter()  # (group, resource, namespace) -> objects not kept
        self.edges = OwnerEdges()

    def keep(self, r: ResourceType, meta: JSON) -> KubeObject | None:
        return self.keep_parts(
            r, meta.get("name") or "", meta.get("namespace") or "", meta.get("uid") or "", owner_tuples(meta)
        )

    def keep_parts(
        self, r: ResourceType, name: str, namespace: str, uid: str, owners: tuple[OwnerTuple, ...]
    ) -> KubeObject | None:
        """keep, from the fields themselves; `owners`: kfin.model.owner_tuples."""
        if self.for_file:
            interned = tuple((sys.intern(a), sys.intern(k), *rest) for a, k, *rest in owners)
            return ThinObject(r, name, sys.intern(namespace), uid, interned)
        blocking = blocking_bits(owner[5] for owner in owners)
        return self._lean(r, name, namespace, uid, tuple([owner[3] for owner in owners]), blocking)

    def keep_refs(
        self, r: ResourceType, name: str, namespace: str, uid: str, refs: Sequence[OwnerRef]
    ) -> KubeObject | None:
        """keep, from a protobuf page's fields (protobuf.Keep): of the owners' messages only the uid and
        blockOwnerDeletion are read, unless the owners are kept whole (`for_file`)."""
        if self.for_file:
            return self.keep_parts(r, name, namespace, uid, owners_of(refs) if refs else ())
        if len(refs) == 1:  # most objects with owners: one (a Pod's ReplicaSet), read without a loop
            ref = refs[0]
            return self._lean(r, name, namespace, uid, (ref.uid,), 1 if ref.blockOwnerDeletion else 0)
        blocking = blocking_bits(ref.blockOwnerDeletion for ref in refs)
        return self._lean(r, name, namespace, uid, tuple([ref.uid for ref in refs]), blocking)

    def _lean(
        self, r: ResourceType, name: str, namespace: str, uid: str, owners: tuple[str, ...], blocking: int
    ) -> KubeObject | None:
        """An object of a lean scan: `owners`, its owners' uids; bit i of `blocking` set when owner i has
        blockOwnerDeletion."""
        namespace = sys.intern(namespace)
        # every CRD is kept (thin): explanations ask whether a custom resource's CRD is still there
        whole = self.whole_namespaces is None or namespace in self.whole_namespaces or (r.group, r.resource) == CRDS
        if owners:
            if whole or not self.edges.add(r, namespace, name, uid, owners, blocking):
                return OwnedObject(r, name, namespace, uid, owners[0] if len(owners) == 1 else owners, blocking)
        elif whole:
            return ThinObject(r, name, namespace, uid)
        self.dropped[(r.group, r.resource, namespace if r.namespaced else "")] += 1
        return None


def to_object(
    r: ResourceType, item: JSON, full: bool, lean: Lean | None = None, kept: tuple[str, ...] = ()
) -> KubeObject | None:
    """One listed item as kfin keeps it: metadata without bookkeeping (plus the reduced fields of `full`
    kinds, and `kept`), or, for a lean scan, thin or not at all when nothing will read it."""
    meta = item.get("metadata") or {}
    if lean is not None and not full and not meta.get("deletionTimestamp") and not meta.get("finalizers"):
        return lean.keep(r, meta)
    raw = {"apiVersion": r.api_version, "kind": r.kind, "metadata": slim_metadata(meta)}
    if full:
        raw.update(reduce_object((r.group, r.resource), item, kept))
    return KubeObject(r, with_managers(raw, meta))


def read_objects(
    kube: Kube,
    r: ResourceType,
    namespace: str | None,
    page_size: int = 500,
    full: bool = False,
    lean: Lean | None = None,
    kept: KeptFields | None = None,
) -> list[KubeObject]:
    """Every object of one type: metadata-only, or whole and reduced to REDUCED_FIELDS (`full`; with the fields
    `kept` keeps of the type). Each page is turned into what is kept as it is parsed (Kube._pages), so a page's
    parsed JSON never outlives it."""
    what = ("list", r.qualified, namespace if r.namespaced else None)
    fields = kept_of((r.group, r.resource), kept) if full else ()

    def kept_objects(page: JSON) -> list[KubeObject]:
        found = (to_object(r, item, full, lean, fields) for item in page.get("items") or [])
        already: list[KubeObject] = page.get("kept", [])  # kept as the page was parsed (Lean.keep_refs)
        return [obj for obj in found if obj is not None] + already

    path = resource_path(r, namespace)
    if full:
        pages = kube.list_pages(path, page_size, what=what, reduce=kept_objects)
    else:
        keep = partial(lean.keep_refs, r) if lean is not None else None
        pages = kube.list_metadata_pages(path, page_size, what=what, reduce=kept_objects, keep=keep)
    return [obj for objects in pages for obj in objects]


def scan(
    kube: Kube,
    resources: list[ResourceType],
    namespace: str | None,
    *,
    full: Set[tuple[str, str]] = frozenset(),
    concurrency: int = 16,
    page_size: int = 500,
    lean: Lean | None = None,
    progress: Callable[[int, int], None] | None = None,
    kept: KeptFields | None = None,
) -> tuple[list[KubeObject], list[Failure]]:
    """Every object of `resources` in `namespace` (None: all namespaces and cluster-scoped types): scan_steps
    run to their end."""
    return finished(
        scan_steps(
            kube,
            resources,
            namespace,
            full=full,
            concurrency=concurrency,
            page_size=page_size,
            lean=lean,
            progress=progress,
            kept=kept,
        )
    )


@dataclass
class Listed:
    """A step of a scan: what is kept of one type, as soon as it is listed."""

    objects: list[KubeObject]


@dataclass
class LastLeft:
    """A step of a scan: a single list is left in flight, of type `last`; what is kept so far and the failures so
    far. What is known without that list may be worked on while it still pages."""

    last: ResourceType
    objects: list[KubeObject]
    failures: list[Failure]


T = TypeVar("T")


def finished(steps: Generator[object, None, T]) -> T:
    """What a generator of steps returns, its steps passed over."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return cast(T, done.value)


def scan_steps(
    kube: Kube,
    resources: list[ResourceType],
    namespace: str | None,
    *,
    full: Set[tuple[str, str]] = frozenset(),
    concurrency: int = 16,
    page_size: int = 500,
    lean: Lean | None = None,
    progress: Callable[[int, int], None] | None = None,
    kept: KeptFields | None = None,
    listed: bool = False,
    last: bool = False,
) -> Generator[Listed | LastLeft, None, tuple[list[KubeObject], list[Failure]]]:
    """Every object of `resources` in `namespace` (None: all namespaces and cluster-scoped types), returned once
    every list has ended; meanwhile, in the caller's thread while the lists go on, a step `Listed` for each type
    listed (`listed`) and one `LastLeft` when a single list is left (`last`).

    Types in `full` are read as whole objects and reduced to REDUCED_FIELDS (and the fields `kept` keeps of
    them); all others metadata-only.
    Within one namespace, cluster-scoped types are skipped, except the Namespace itself. With `lean`,
    Namespaces are read first, so that the content of Terminating ones is kept whole (see Lean).
    """
    tasks = [r for r in resources if namespace is None or r.namespaced or (r.group, r.resource) == NAMESPACES]
    objects: list[KubeObject] = []
    failures: list[Failure] = []

    def read(r: ResourceType) -> list[KubeObject]:
        key = (r.group, r.resource)
        if key == NAMESPACES and namespace is not None:
            try:
                item = kube.read_object(r, None, namespace)
            except NotFoundError:
                return []
            return [
                KubeObject(
                    r,
                    {
                        "apiVersion": r.api_version,
                        "kind": r.kind,
                        "metadata": slim_metadata(item.get("metadata") or {}),
                        **reduce_object(key, item, kept_of(key, kept)),
                    },
                )
            ]
        return read_objects(kube, r, namespace, page_size, full=key in full, lean=lean, kept=kept)

    def collect(r: ResourceType, result: Callable[[], list[KubeObject]]) -> list[KubeObject]:
        """What is kept of one type; a failure is counted, not raised."""
        try:
            found = result()
        except KfinError as error:
            if isinstance(error, NotFoundError) and no_longer_served(kube, r):
                return []  # a type gone since discovery (a CRD deleted during the scan) holds nothing
            target = r.qualified + (f" in namespace {namespace}" if namespace and r.namespaced else "")
            failures.append(failure_of("list", target, error))
            return []
        objects.extend(found)
        return found

    with paused_gc():
        first = [r for r in tasks if (r.group, r.resource) == NAMESPACES] if lean is not None else []
        for r in first:
            found = collect(r, partial(read, r))
            if listed and found:
                yield Listed(found)
            if not failures and lean is not None:
                lean.whole_namespaces = {o.name for o in found if o.terminating}
        rest = [r for r in tasks if r not in first]
        pending = dict.fromkeys(rest) if last and len(rest) > 1 else {}
        for done, (r, future) in enumerate(completed(read, rest, concurrency), len(first) + 1):
            found = collect(r, future.result)
            if listed and found:
                yield Listed(found)
            if progress:
                progress(done, len(tasks))
            pending.pop(r, None)
            if last and len(pending) == 1:
                yield LastLeft(next(iter(pending)), list(objects), list(failures))
                pending.clear()
    return objects, failures


def names_listed(
    kube: Kube, rtype: ResourceType, namespace: str | None, name: str | None = None, page_size: int = 500
) -> list[tuple[str, str]]:
    """(namespace, name) of every object of a type in a namespace (None: in all of them), metadata-only; with
    `name`, only the objects of that name (a field selector every type serves: the server sends no others)."""
    what = ("list", rtype.qualified, namespace if rtype.namespaced else None)
    query = {"fieldSelector": f"metadata.name={escaped_field_value(name)}"} if name is not None else None

    def names(page: JSON) -> list[tuple[str, str]]:
        metas = ((item.get("metadata") or {}) for item in page.get("items") or [])
        return [(str(m.get("namespace") or ""), str(m.get("name") or "")) for m in metas]

    pages = kube.list_metadata_pages(resource_path(rtype, namespace), page_size, what, reduce=names, query=query)
    return [found for page in pages for found in page]


def escaped_field_value(value: str) -> str:
    """A value in a field selector as apimachinery's fields.EscapeValue writes it: `\\`, `,` and `=` escaped."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
