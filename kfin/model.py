"""Plain values the analysis works on, whether they came from a live cluster or a snapshot."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from msgspec import Struct, field
from msgspec.structs import asdict

# A Kubernetes object, or any JSON object, as the API server sends it: string keys, any JSON value. Values stay
# Any rather than a recursive union because the code reads nested fields with .get() and checks the shapes
# that matter where it reads them (what a server sends is not checked against a schema).
JSON = dict[str, Any]


def kind_display(kind: str, group: str) -> str:
    """A kind as kfin shows it: with its group when it is not core (Deployment.apps, Database.acme.io)."""
    return f"{kind}.{group}" if group else kind


class ResourceType(Struct, frozen=True):
    """One listable API resource, as discovery describes it."""

    group: str
    version: str
    resource: str  # plural, as in the URL
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    singular: str = ""
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """kubectl's resource.group form: persistentvolumeclaims, deployments.apps."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def kind_display(self) -> str:
        """The KIND column: the kind, with its group when it is not core (Deployment.apps)."""
        return kind_display(self.kind, self.group)

    @property
    def name_prefix(self) -> str:
        """kubectl -o name's prefix: configmap, deployment.apps."""
        return f"{self.kind.lower()}.{self.group}" if self.group else self.kind.lower()

    def to_dict(self) -> JSON:
        # msgspec's asdict is shallow (dataclasses' deep-copied field by field: a tenth of a small cluster's discovery)
        return {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: JSON) -> ResourceType:
        return cls(
            d["group"],
            d["version"],
            d["resource"],
            d["kind"],
            d["namespaced"],
            tuple(d.get("verbs") or ()),
            tuple(d.get("short_names") or ()),
            d.get("singular") or "",
            tuple(d.get("categories") or ()),
        )


# A dataclass, not a Struct as kfin's other records: its subclasses (ThinObject, OwnedObject) are slotted classes of
# their own, the most numerous objects of a scan, which a Struct's metaclass would take over
@dataclass(slots=True)
class KubeObject:
    """An object's metadata (and, for the kinds explanations need, a reduced spec and status)."""

    type: ResourceType
    raw: JSON

    @property
    def meta(self) -> JSON:
        meta: JSON = self.raw.get("metadata") or {}
        return meta

    @property
    def name(self) -> str:
        name: str = self.meta.get("name", "")
        return name

    @property
    def namespace(self) -> str:
        namespace: str = self.meta.get("namespace", "")
        return namespace

    @property
    def uid(self) -> str:
        uid: str = self.meta.get("uid", "")
        return uid

    @property
    def finalizers(self) -> list[str]:
        return list(self.meta.get("finalizers") or [])

    @property
    def spec_finalizers(self) -> list[str]:
        """A namespace's spec.finalizers (the `kubernetes` entry the namespace controller removes)."""
        return list(((self.raw.get("spec") or {}).get("finalizers")) or [])

    @property
    def owner_references(self) -> list[JSON]:
        return list(self.meta.get("ownerReferences") or [])

    def owner_uids(self, blocking: bool = False) -> list[str]:
        """The uids this object names as owners (only those with blockOwnerDeletion, with `blocking`)."""
        return [
            r.get("uid", "")
            for r in self.meta.get("ownerReferences") or ()
            if isinstance(r, dict) and (not blocking or r.get("blockOwnerDeletion"))
        ]

    @property
    def deletion_timestamp(self) -> datetime | None:
        return parse_time(self.meta.get("deletionTimestamp"))

    @property
    def terminating(self) -> bool:
        return bool(self.meta.get("deletionTimestamp"))

    @property
    def deletion_requested_at(self) -> datetime | None:
        """When deletion was asked for: a graceful deletion's deletionTimestamp lies its grace period ahead."""
        moment = self.deletion_timestamp
        if moment is None:
            return None
        return moment - timedelta(seconds=self.meta.get("deletionGracePeriodSeconds") or 0)

    @property
    def ref(self) -> str:
        return f"{self.type.kind_display}/{self.namespace + '/' if self.namespace else ''}{self.name}"


class ThinObject(KubeObject):
    """An object nothing reads beyond who it is and who owns it: not being deleted, without finalizers, of a
    kind read metadata-only. A scan keeps most of a cluster's objects this way, in about 300 bytes each
    instead of the 2 KB of their parsed metadata (so that a scan of half a million objects fits in memory).
    Owner references keep what the garbage collector reads: (apiVersion, kind, name, uid, controller,
    blockOwnerDeletion)."""

    __slots__ = ("_name", "_namespace", "_owners", "_uid")

    def __init__(self, rtype: ResourceType, name: str, namespace: str, uid: str, owners: Any = ()):
        """`owners`: owner_tuples() of its metadata (an OwnedObject keeps owner uids only, see there)."""
        self.type, self._name, self._namespace, self._uid, self._owners = rtype, name, namespace, uid, owners

    def __reduce__(self) -> tuple[Any, ...]:  # pickled by what it keeps (a fleet's worker sends it to the parent)
        return (type(self), (self.type, self._name, self._namespace, self._uid, self._owners))

    @property
    def raw(self) -> JSON:  # type: ignore[override]  # read-only here: made up from the few fields kept
        return {"apiVersion": self.type.api_version, "kind": self.type.kind, "metadata": self.meta}

    @property
    def meta(self) -> JSON:
        meta: JSON = {"name": self._name, "uid": self._uid}
        if self._namespace:
            meta["namespace"] = self._namespace
        if self._owners:
            meta["ownerReferences"] = self.owner_references
        return meta

    @property
    def name(self) -> str:
        return self._name

    @property
    def namespace(self) -> str:
        return self._namespace

    @property
    def uid(self) -> str:
        return self._uid

    @property
    def finalizers(self) -> list[str]:
        return []

    @property
    def spec_finalizers(self) -> list[str]:
        return []

    @property
    def owner_references(self) -> list[JSON]:
        out = []
        for api_version, kind, name, uid, controller, block in self._owners:
            ref: JSON = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
            if controller is not None:
                ref["controller"] = controller
            if block is not None:
                ref["blockOwnerDeletion"] = block
            out.append(ref)
        return out

    def owner_uids(self, blocking: bool = False) -> list[str]:
        return [owner[3] for owner in self._owners if not blocking or owner[5]]

    @property
    def terminating(self) -> bool:
        return False

    @property
    def deletion_timestamp(self) -> None:
        return None


class OwnedObject(ThinObject):
    """A ThinObject as a scan for stuck objects keeps it: of its owners only what the garbage collector's
    blocking reads (uid, blockOwnerDeletion), in the fewest objects, because most of a cluster's objects
    are kept this way (a few hundred bytes each). Owner references list uid and
    blockOwnerDeletion only; graphs, which name owners, are drawn from files or full scans."""

    __slots__ = ("_blocking",)

    def __init__(
        self, rtype: ResourceType, name: str, namespace: str, uid: str, owners: str | tuple[str, ...], blocking: int
    ):
        """`owners`: the owner's uid, or a tuple of uids when several; `blocking`: bit i set when owner i has
        blockOwnerDeletion: true."""
        super().__init__(rtype, name, namespace, uid, owners)
        self._blocking = blocking

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.type, self._name, self._namespace, self._uid, self._owners, self._blocking))

    def _uids(self) -> tuple[str, ...]:
        uids: tuple[str, ...] = (self._owners,) if isinstance(self._owners, str) else self._owners
        return uids

    @property
    def owner_references(self) -> list[JSON]:
        return [
            {"uid": uid, "blockOwnerDeletion": bool(self._blocking >> at & 1)} for at, uid in enumerate(self._uids())
        ]

    def owner_uids(self, blocking: bool = False) -> list[str]:
        return [uid for at, uid in enumerate(self._uids()) if not blocking or self._blocking >> at & 1]


# A ThinObject's owner reference: (apiVersion, kind, name, uid, controller, blockOwnerDeletion)
OwnerTuple = tuple[str, str, str, str, bool | None, bool | None]


def owner_tuples(meta: JSON, intern: Callable[[str], str] = str) -> tuple[OwnerTuple, ...]:
    """A ThinObject's owners from metadata.ownerReferences (apiVersion and kind interned: few distinct)."""
    refs = meta.get("ownerReferences")
    if not refs:
        return ()
    return tuple(
        (
            intern(r.get("apiVersion") or ""),
            intern(r.get("kind") or ""),
            r.get("name") or "",
            r.get("uid") or "",
            r.get("controller"),
            r.get("blockOwnerDeletion"),
        )
        for r in refs
        if isinstance(r, dict)
    )


class Failure(Struct, frozen=True):
    """Something that could not be read: the result is partial, and says so."""

    what: str  # "discovery", "list", "get"
    target: str  # group/version, or resource[.group] with namespace
    reason: str  # Forbidden, ServiceUnavailable, Timeout, Unreachable, StorageReadError, Error
    message: str
    keys: tuple[str, ...] = ()  # the storage keys the server could not read (a StorageReadError names them)

    def line(self) -> str:
        return f"{self.what} of {self.target} failed: {self.message}"

    def to_dict(self) -> JSON:
        out = asdict(self)
        out["keys"] = list(self.keys)
        if not self.keys:
            del out["keys"]
        return out


class Inventory(Struct):
    """What kfin knows of a cluster: its resource types, its objects, and what could not be read."""

    resources: list[ResourceType]
    objects: list[KubeObject]
    failures: list[Failure] = field(default_factory=list)
    observed_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    context: str = ""
    server: str = ""
    namespace: str | None = None  # None: all namespaces and cluster-scoped objects
    # (group, resource, namespace) read as reduced full objects; namespace "" means everywhere
    detailed: set[tuple[str, str, str]] = field(default_factory=set)
    # (group, resource, namespace) -> objects a lean scan counted but did not keep (kfin.api.scan.Lean)
    dropped: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # the same objects by (group, resource), when the source holds them so (informers), or None
    by_type: dict[tuple[str, str], list[KubeObject]] | None = None
    # of the same objects, those that are not ThinObjects, when the source keeps them apart (informers), or None
    kept: list[KubeObject] | None = None

    @property
    def complete(self) -> bool:
        return not self.failures

    def has_details(self, group: str, resource: str, namespace: str = "") -> bool:
        return (group, resource, "") in self.detailed or (group, resource, namespace) in self.detailed

    def kept_objects(self) -> list[KubeObject]:
        """The objects that are not ThinObjects: all that can be stuck or be read whole (a watching answer holds
        them apart, rather than walking every thin object of a large cluster at each answer)."""
        if self.kept is not None:
            return self.kept
        return [o for o in self.objects if not isinstance(o, ThinObject)]

    def of_type(self, group: str, resource: str, namespace: str | None = None) -> list[KubeObject]:
        return [
            o
            for o in self.objects
            if o.type.group == group and o.type.resource == resource and (namespace is None or o.namespace == namespace)
        ]


def parse_time(text: str | None) -> datetime | None:
    """RFC 3339 as the API server writes it: Time (seconds) or MicroTime (fractions, e.g. in Leases)."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def format_time(moment: datetime) -> str:
    """RFC 3339 to the second, in UTC, as Kubernetes writes times. isoformat, not strftime: glibc's %Y writes the
    year 1 as "1", not "0001"."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


# Names Kubernetes itself defines, shared by what reads a cluster (kfin.api) and what reasons on it (kfin.core)
NAMESPACES = ("", "namespaces")
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
NAMESPACE_CONTROLLER = "system:serviceaccount:kube-system:namespace-controller"
GARBAGE_COLLECTOR = "system:serviceaccount:kube-system:generic-garbage-collector"
# The reason kube-apiserver gives a read that found stored objects it cannot decode or decrypt, with the
# AllowUnsafeMalformedObjectDeletion feature gate on (apimachinery's metav1.StatusReasonStoreReadError; without
# the gate the decoder's bare error, no reason): seen on a real v1.36.2 control plane
STORAGE_READ_ERROR = "StorageReadError"
MANAGERS = "finalizerManagers"  # kept beside an object's metadata: {finalizer: the field manager that added it}


WriteVerb = Literal["delete", "patch", "update"]
PatchType = Literal["json", "merge", "strategic"]  # JSON Patch, JSON merge patch, strategic merge patch


class Write(Struct, frozen=True):
    """One write to send as a dry run: a DELETE with DeleteOptions, a JSON Patch (guarded by `test` ops), a JSON
    merge or strategic merge patch (the garbage collector's), or an UPDATE of the whole object (guarded by its
    resourceVersion)."""

    verb: WriteVerb
    rtype: ResourceType
    namespace: str | None
    name: str
    body: str  # DeleteOptions, the patch (a JSON Patch's operations) or the object, as JSON (hashable: answers are
    # kept by Write)
    actor: str | None = None  # the user who would send it; None: kfin's own user (the user's own DELETE)
    patch_type: PatchType = "json"  # a patch's kind

    @classmethod
    def delete(
        cls, rtype: ResourceType, namespace: str | None, name: str, options: JSON, actor: str | None = None
    ) -> Write:
        return cls("delete", rtype, namespace, name, json.dumps(options, sort_keys=True), actor)

    @classmethod
    def patch(
        cls, rtype: ResourceType, namespace: str | None, name: str, ops: list[JSON], actor: str | None = None
    ) -> Write:
        return cls("patch", rtype, namespace, name, json.dumps(ops), actor)

    @classmethod
    def merge_patch(
        cls, rtype: ResourceType, namespace: str | None, name: str, patch: JSON, actor: str | None, strategic: bool
    ) -> Write:
        """A JSON merge patch, or a strategic merge patch (built-in types only: a custom resource's answer is 415)."""
        kind: PatchType = "strategic" if strategic else "merge"
        return cls("patch", rtype, namespace, name, json.dumps(patch, sort_keys=True), actor, kind)

    @classmethod
    def update(
        cls, rtype: ResourceType, namespace: str | None, name: str, obj: JSON, actor: str | None = None
    ) -> Write:
        return cls("update", rtype, namespace, name, json.dumps(obj, sort_keys=True), actor)

    @property
    def shown(self) -> str:
        """How evidence names it: DELETE configmaps/x in namespace y."""
        where = f" in namespace {self.namespace}" if self.namespace and self.rtype.namespaced else ""
        how = {"merge": " (JSON merge patch)", "strategic": " (strategic merge patch)"}.get(self.patch_type, "")
        return f"{'PUT' if self.verb == 'update' else self.verb.upper()}{how} {self.rtype.qualified}/{self.name}{where}"


def metadata_patch(uid: str, finalizers: list[str], remove: list[str]) -> list[JSON]:
    """kfin's removal of finalizers, the smallest guarded JSON Patch: the uid and the whole list as read, then
    each removal (sent by kfin remove, and first as a dry run to check that the removal holds)."""
    ops: list[JSON] = [
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
    ]
    for index in sorted((i for i, f in enumerate(finalizers) if f in remove), reverse=True):
        ops.append({"op": "remove", "path": f"/metadata/finalizers/{index}"})
    return ops


class Answer(Struct, frozen=True):
    """What the server answered a dry run: accepted (2xx), with the finalizers of the object it returned (the
    object as admission left it: a mutating webhook or policy may have put a removed finalizer back), or its
    Status."""

    code: int
    reason: str  # the Status's reason: Forbidden, Invalid, InternalError, NotFound, Conflict...
    message: str
    sent_as: str | None  # the user it was sent as (impersonated); None: as kfin's user
    details: JSON  # the Status's details (name, kind, causes)
    # metadata.finalizers of the object returned; None when the answer held no object (a Status: a DELETE that
    # would delete at once, or a rejection)
    finalizers: tuple[str, ...] | None = None

    @property
    def accepted(self) -> bool:
        return 200 <= self.code < 300

    def keeps(self, finalizer: str) -> bool:
        """Whether the server accepted the write and the object it returned still holds `finalizer`."""
        return self.accepted and self.finalizers is not None and finalizer in self.finalizers
