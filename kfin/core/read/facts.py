"""What an explanation may ask of a cluster, answered from an inventory and, when live, read on demand.

A snapshot and a live cluster feed the same questions: `objects(group, resource, namespace)` answers
from what the inventory already holds, reads the rest from the API server when there is one, and
answers None when it cannot be known (not in the snapshot, or not readable), so that an explanation
says "could not check" instead of guessing. What is missing is read through the command's reader
(kfin.core.read.reader.Reader), which keeps what the server answered; what is worked out of the objects is kept here,
one cache per kind of answer (Worked).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

from msgspec import Struct, field

from kfin.api.connection import Kube
from kfin.api.discovery import failure_of
from kfin.api.resources import KindLookup, stored_as
from kfin.core.read.catalog import Catalog
from kfin.core.read.reader import Reader
from kfin.errors import KfinError
from kfin.model import JSON, MANAGERS, Answer, Failure, Inventory, KubeObject, ResourceType, Write

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
# (group, resource, namespace) of what is read: namespace "" for everywhere, and for a cluster-scoped type
TypeWhere = tuple[str, str, str]
# {(group, resource): {namespace: [objects]}}
TypeIndex = dict[tuple[str, str], dict[str, list[KubeObject]]]


@dataclass(frozen=True)
class Worked(Generic[K, V]):
    """One kind of answer worked out of the facts' objects (explanations, a namespace's role bindings, the stuck
    rows found before a scan's last list ended...), by key: declared once by the module that works it out, kept by
    each Facts in a cache of its own (Facts.kept). The rule: forgotten whenever a read on demand changes the
    objects; kept when a scan's last list adds nothing asked of (kfin.core.read.before_last); never carried to other
    facts (what the server answered is: kfin.core.read.reader.ServerAnswers). Known by its name, unique among them: a
    fleet's facts come back from their worker process with what was worked out there
    (kfin.core.explain.fleet_processes)."""

    name: str


class Asked(Struct):
    """What explanations asked of an inventory made before a scan's last list ended (kfin.core.read.before_last): the
    types (objects, find), the namespaces whose content they read (everything: None for the whole cluster, "" for its
    cluster-scoped objects), and the owners whose dependents they read."""

    types: set[tuple[str, str]] = field(default_factory=set)
    namespaces: set[str | None] = field(default_factory=set)
    owners: set[str] = field(default_factory=set)


class ClusterFacts(Protocol):
    """What causes, blocking chains and stuck-finding ask of a cluster, alike for a snapshot and a live
    cluster (Facts is the one implementation; a test may bring its own)."""

    inventory: Inventory
    unreadable: dict[TypeWhere, Failure]  # (group, resource, namespace) that could not be read, and why

    @property
    def kube(self) -> Kube | None: ...
    @property
    def dry_runs_allowed(self) -> bool: ...  # whether writes may be sent as dry runs (dryRun=All) to explain
    @property
    def catalog(self) -> Catalog: ...  # the command's catalog of ecosystem finalizers (kfin.core.read.catalog)

    def kept(self, kind: Worked[K, V]) -> dict[K, V]: ...
    def remember(self, kind: Worked[K, V], key: K, work: Callable[[], V]) -> V: ...

    def resource(self, group: str, resource: str) -> ResourceType | None: ...
    def type_of_kind(self, api_version: str, kind: str) -> ResourceType | None: ...
    def objects(
        self, group: str, resource: str, namespace: str | None = None, *, full: bool = False
    ) -> list[KubeObject] | None: ...
    def find(
        self, group: str, resource: str, namespace: str, name: str, *, full: bool = False
    ) -> KubeObject | None: ...
    def listed(self, namespace: str | None) -> bool: ...
    def everything(self, namespace: str | None, cluster_scoped_only: bool = False) -> list[KubeObject] | None: ...
    def dependents(self, uid: str) -> list[KubeObject]: ...
    def blocking_dependents(self, uid: str) -> list[KubeObject]: ...
    def namespaces_by_name(self) -> dict[str, KubeObject] | None: ...
    def warnings_about(self, obj: KubeObject, most: int = 5) -> list[JSON] | None: ...
    def events_about(self, obj: KubeObject) -> list[JSON] | None: ...
    def whole(self, obj: KubeObject) -> JSON | None: ...
    def claim_users(self, claim: KubeObject) -> list[KubeObject] | None: ...
    def prefetch(self, wanted: set[tuple[str, str, str | None, bool]], concurrency: int = 8) -> None: ...
    def dry_run(self, write: Write) -> Answer | None: ...
    def may(
        self, verb: str, group: str, resource: str, namespace: str | None = None, name: str | None = None
    ) -> bool | None: ...


# After this many namespaces read one by one for the same type, a cluster-wide scan's facts read that type
# once everywhere: explaining stuck objects in hundreds of namespaces costs a few lists, not hundreds.
WIDEN_AFTER = 4


class Facts:
    """The questions the causes ask of one inventory, answered once each, what is missing read on demand through
    the command's reader (kfin.core.read.reader.Reader; one that reads nothing for a snapshot)."""

    def __init__(self, inventory: Inventory, reader: Reader | None = None, scanned: bool = True):
        """`scanned`: the inventory holds every object of its types and scope (a scan or a snapshot);
        False for an inventory that starts empty and is filled on demand (kfin explain)."""
        self.inventory = inventory
        self.reader = reader if reader is not None else Reader()
        self.kinds = KindLookup(inventory.resources)
        self.unreadable: dict[TypeWhere, Failure] = {}
        self._listed: set[TypeWhere] = set()
        if scanned:  # types listed without failure are known in full for the inventory's scope
            failed = {f.target for f in inventory.failures if f.what == "list"}
            scope = inventory.namespace or ""
            self._listed = {
                (r.group, r.resource, scope if r.namespaced else "")
                for r in inventory.resources
                if _target(r, inventory.namespace) not in failed
            }
        self._dropped = set(inventory.dropped)  # left out by a lean scan: read again when asked for
        self._dropped_types = {(g, r) for g, r, _ in self._dropped}
        self._blocking: dict[str, list[KubeObject]] | None = None
        self._index: TypeIndex | None = None  # see _by_type
        # the inventory's objects by type, until a read on demand changes them (see _of_type)
        self._grouped: dict[tuple[str, str], list[KubeObject]] | None = inventory.by_type
        self._types: dict[tuple[str, str], ResourceType] | None = None  # see resource
        self._namespaces_read: Counter[tuple[str, str]] = Counter()  # (group, resource) -> namespaces read one by one
        # what was worked out of the objects, one cache per kind of answer (Worked): forgotten on a read on demand
        self._worked: dict[Worked[Any, Any], dict[Any, Any]] = {}
        # every object in a namespace (None: the cluster), or every cluster-scoped one, by (namespace, cluster-scoped
        # only): asked again and again of the same facts (a prediction asks three times; kfin guard's facts answer
        # many reviews)
        self._everything: dict[tuple[str | None, bool], list[KubeObject]] = {}
        self._namespaces: dict[str, KubeObject] | object | None = _NOT_YET  # see namespaces_by_name
        # Facts made before a scan's last list ended (kfin.core.read.before_last): what was asked of them
        self.asked: Asked | None = None

    @property
    def kube(self) -> Kube | None:
        """The connection to the cluster; None for a snapshot."""
        return self.reader.kube

    @property
    def catalog(self) -> Catalog:
        """The command's catalog of ecosystem finalizers (kfin.core.read.catalog)."""
        return self.reader.catalog

    @property
    def dry_runs_allowed(self) -> bool:
        """Whether writes may be sent as dry runs (dryRun=All) to explain (not --no-dry-run)."""
        return self.reader.dry_runs_allowed

    @property
    def reads(self) -> int:
        """Reads from the API server on demand: an answer that made none is current from watches."""
        return self.reader.reads

    def kept(self, kind: Worked[K, V]) -> dict[K, V]:
        """What was worked out of these facts of one kind so far, by key (empty again after a read on demand)."""
        return cast(dict[K, V], self._worked.setdefault(kind, {}))

    def remember(self, kind: Worked[K, V], key: K, work: Callable[[], V]) -> V:
        """`work()`, once per key of one kind for these facts."""
        if key not in self.kept(kind):
            done = work()
            self.kept(kind)[key] = done  # a read on demand meanwhile forgot what was kept: this is what was read
        return self.kept(kind)[key]

    def _forget_worked(self) -> None:
        self._worked = {}
        self._everything = {}
        self._namespaces = _NOT_YET
        self.reader.answers.forget_reviewed()

    # ----- types -----------------------------------------------------------------------------------
    def resource(self, group: str, resource: str) -> ResourceType | None:
        if self._types is None:  # the first of each, as a search of the list in discovery's order would find
            self._types = {}
            for r in self.inventory.resources:
                self._types.setdefault((r.group, r.resource), r)
        return self._types.get((group, resource))

    def type_of_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return self.kinds.for_kind(api_version, kind)

    # ----- objects ---------------------------------------------------------------------------------
    def _known(self, key: TypeWhere, full: bool) -> bool:
        group, resource, namespace = key
        if full:
            return self.inventory.has_details(group, resource, namespace)
        if key in self._dropped or (not namespace and (group, resource) in self._dropped_types):
            return False
        return (
            key in self._listed
            or (group, resource, "") in self._listed
            or self.inventory.has_details(group, resource, namespace)
        )

    def listed(self, namespace: str | None) -> bool:
        """Whether every type of a namespace (None: of the whole cluster) was listed without failure, so that
        every object there with owners, finalizers or a deletion is known (a lean scan keeps all of those)."""
        scope = namespace or ""
        return all(
            (r.group, r.resource, scope if r.namespaced else "") in self._listed
            or (r.group, r.resource, "") in self._listed
            for r in self.inventory.resources
            if namespace is None or r.namespaced
        )

    def objects(
        self, group: str, resource: str, namespace: str | None = None, *, full: bool = False
    ) -> list[KubeObject] | None:
        """Objects of a type (in one namespace, or everywhere with None); None when unknowable."""
        group, resource = stored_as(group, resource)  # Events of events.k8s.io are core's, read once
        if self.asked is not None:
            self.asked.types.add((group, resource))
        rtype = self.resource(group, resource)
        if rtype is None:
            return None if self.kube is None else []  # a live server without the type has none of it
        ns = (namespace or "") if rtype.namespaced else ""
        key = (group, resource, ns)
        if not self._known(key, full):
            if self.kube is None or key in self.unreadable:
                return None
            widen = ns and self.inventory.namespace is None and self._namespaces_read[(group, resource)] >= WIDEN_AFTER
            self._read(rtype, None if widen else ns or None, full)
            if ns and not widen:
                self._namespaces_read[(group, resource)] += 1
            if key in self.unreadable or (widen and (group, resource, "") in self.unreadable):
                return None
        by_namespace = self._of_type(group, resource)
        if ns:
            return list(by_namespace.get(ns, ()))
        return [o for found in by_namespace.values() for o in found]

    def _by_type(self) -> TypeIndex:
        """{(group, resource): {namespace: [objects]}}, built once and kept up to date by reads: causes ask
        for one type in one namespace many times, and a cluster holds hundreds of thousands of objects."""
        if self._index is None:
            self._grouped = None  # the whole index is wanted: the grouping is no longer needed
            index: TypeIndex = {}
            rtype: ResourceType | None = None
            namespace: str | None = None
            bucket: list[KubeObject] = []
            for o in self.inventory.objects:  # in runs of one type and namespace, as lists and informers give them
                if o.type is not rtype or o.namespace != namespace:
                    rtype, namespace = o.type, o.namespace
                    bucket = index.setdefault((rtype.group, rtype.resource), {}).setdefault(namespace, [])
                bucket.append(o)
            self._index = index
        return self._index

    def _of_type(self, group: str, resource: str) -> dict[str, list[KubeObject]]:
        """{namespace: [objects]} of one type. From an inventory already grouped by type (informers), only the
        types asked for are indexed: an answer of a watching serve asks for a few of a cluster's types."""
        if self._grouped is None:
            return self._by_type().get((group, resource), {})
        if self._index is None:
            self._index = {}
        if (group, resource) not in self._index:
            by_namespace: dict[str, list[KubeObject]] = {}
            for o in self._grouped.get((group, resource), ()):
                by_namespace.setdefault(o.namespace, []).append(o)
            self._index[(group, resource)] = by_namespace
        return self._index[(group, resource)]

    def _forget_indexes(self) -> None:
        self._index = self._blocking = self._grouped = None
        self._forget_worked()

    def find(self, group: str, resource: str, namespace: str, name: str, *, full: bool = False) -> KubeObject | None:
        found = self.objects(group, resource, namespace, full=full)
        return next((o for o in found or [] if o.name == name and o.namespace == (namespace or "")), None)

    def _read(self, rtype: ResourceType, namespace: str | None, full: bool) -> None:
        self._apply_all([(rtype, namespace, self.reader.fetch(rtype, namespace, full))], full)

    def _record(self, failures: list[Failure]) -> None:
        """Keep each failed read once: a read asked for again (a namespace's content, by several causes) fails
        again, and would be warned about as many times."""
        seen = {(f.what, f.target) for f in self.inventory.failures}
        for failure in failures:
            if (failure.what, failure.target) not in seen:
                seen.add((failure.what, failure.target))
                self.inventory.failures.append(failure)

    def _apply_all(
        self, reads: list[tuple[ResourceType, str | None, list[KubeObject] | KfinError]], full: bool
    ) -> None:
        done = []
        for rtype, namespace, fresh in reads:
            key = (rtype.group, rtype.resource, namespace or "")
            if isinstance(fresh, KfinError):
                failure = failure_of("list", _target(rtype, namespace), fresh)
                self.unreadable[key] = failure
                self._record([failure])
                continue
            done.append((rtype, namespace, fresh))
            self._listed.add(key)
            if key[:2] in self._dropped_types:
                self._dropped = {
                    d
                    for d in self._dropped
                    if d[:2] != key[:2] or (namespace is not None and d[2] not in ("", namespace))
                }
                self._dropped_types = {(g, r) for g, r, _ in self._dropped}
            if full:
                self.inventory.detailed.add(key)
        if done:
            self._replace(done)
        self._forget_worked()

    def prefetch(self, wanted: set[tuple[str, str, str | None, bool]], concurrency: int = 8) -> None:
        """Read in parallel what explanations are about to ask for one by one ((group, resource, namespace or
        None, whole or metadata only), as causes declare it: kfin.core.explain.causes.reads_for): a few round trips at
        once instead of one after another. What is already known, or not served, is skipped."""
        if self.kube is None:
            return
        by_type: dict[tuple[str, str, bool], set[str | None]] = {}
        for group, resource, namespace, full in wanted:
            by_type.setdefault((group, resource, full), set()).add(namespace)
        tasks = []
        for (group, resource, full), namespaces in sorted(by_type.items()):
            if not full and (group, resource, True) in by_type:
                continue  # read whole anyway
            rtype = self.resource(group, resource)
            if rtype is None:
                continue
            if (
                not rtype.namespaced
                or None in namespaces
                or (self.inventory.namespace is None and len(namespaces) > WIDEN_AFTER)
            ):
                namespaces = {None}
            tasks += [
                (rtype, ns, full)
                for ns in sorted(namespaces, key=str)
                if not self._known((group, resource, (ns or "") if rtype.namespaced else ""), full)
                and (group, resource, ns or "") not in self.unreadable
            ]
        fetched = self.reader.fetch_all(tasks, concurrency)
        if not tasks:
            return  # all known: what was worked out from it still holds
        for full in (True, False):
            self._apply_all([(rtype, ns, result) for (rtype, ns, whole), result in fetched if whole is full], full)

    def _replace(self, reads: list[tuple[ResourceType, str | None, list[KubeObject]]]) -> None:
        """Put what was read again of some types (each everywhere or in one namespace) in place of what was
        known: one pass over every object for the whole batch (prefetch applies its reads together), and
        the indexes updated rather than rebuilt."""
        if self._grouped is not None:  # what is read replaces objects: from here on, one index of them all
            self._forget_indexes()
        inv, index = self.inventory, self._by_type()
        old: list[KubeObject] = []
        for rtype, namespace, fresh in reads:
            by_namespace = index.setdefault((rtype.group, rtype.resource), {})
            for ns in [ns for ns in by_namespace if namespace is None or ns == namespace]:
                old += by_namespace.pop(ns)
            for obj in fresh:
                by_namespace.setdefault(obj.namespace, []).append(obj)
        gone = {id(o) for o in old}
        inv.objects = [o for o in inv.objects if id(o) not in gone] + [o for _, _, fresh in reads for o in fresh]
        inv.by_type = inv.kept = None  # no longer the same objects
        if self._blocking is not None:  # the same objects read again: same owners, new instances
            newer = {o.uid: o for _, _, fresh in reads for o in fresh if o.uid}
            for dependents in self._blocking.values():
                dependents[:] = [
                    newer[d.uid] if id(d) in gone else d for d in dependents if id(d) not in gone or d.uid in newer
                ]
            known = {o.uid for o in old}
            for _, _, fresh in reads:
                for obj in fresh:
                    if obj.uid not in known:
                        self._add_blocking(obj)

    def add_last_list(self, objects: list[KubeObject], dropped: dict[tuple[str, str, str], int]) -> None:
        """What a scan's last list added (its objects and the dependents they revealed) and what it left out
        (`dropped`: the scan's counts, all of them), put in an inventory made before it ended, which these facts
        hold (kfin.core.read.before_last): what was worked out stays, the indexes are made again when next asked."""
        inv = self.inventory
        inv.objects += objects
        inv.by_type = inv.kept = None
        added = set(dropped) - set(inv.dropped)
        inv.dropped = dict(dropped)
        self._dropped |= added
        self._dropped_types = {(g, r) for g, r, _ in self._dropped}
        self._index = self._blocking = self._grouped = None
        self.asked, self.reader.recording = None, None

    def succeeding(self, inventory: Inventory) -> Facts:
        """Facts of `inventory` that take what these read from the server (lists read whole, dry runs, access
        reviews, whole objects) instead of asking again: these were made before the scan's last list ended, and
        what that list added was asked of them (kfin.core.read.before_last)."""
        return Facts(inventory, self.reader.succeeding())

    def listed_kinds(self) -> set[tuple[str, str]]:
        """(group, kind) of every type whose objects are known completely somewhere."""
        keys = {(g, r) for g, r, _ in self._listed} | {(g, r) for g, r, _ in self.inventory.detailed}
        return {(t.group, t.kind) for t in self.inventory.resources if (t.group, t.resource) in keys}

    def cluster_scoped(self) -> list[KubeObject] | None:
        """Every cluster-scoped object (of every listable cluster-scoped type)."""
        return self.everything(None, cluster_scoped_only=True)

    def everything(self, namespace: str | None, cluster_scoped_only: bool = False) -> list[KubeObject] | None:
        """Every object in a namespace (None: the whole cluster), of every listable type; read in
        parallel when live. None when a snapshot does not cover that scope."""
        if self.asked is not None:
            self.asked.namespaces.add("" if cluster_scoped_only else namespace)
        scope = namespace or ""
        types = [
            r
            for r in self.inventory.resources
            if (namespace is None or r.namespaced) and not (cluster_scoped_only and r.namespaced)
        ]

        def wanted(o: KubeObject) -> bool:
            return (not cluster_scoped_only or not o.type.namespaced) and (
                namespace is None or o.namespace == namespace
            )

        if all(self._known((r.group, r.resource, scope if r.namespaced else ""), False) for r in types):
            # worked out once until a read changes them
            key = (namespace, cluster_scoped_only)
            if key not in self._everything:
                if namespace is None:
                    self._everything[key] = [o for o in self.inventory.objects if wanted(o)]
                else:  # one namespace: from the index by type (built once), not a pass over the whole cluster
                    kinds = dict.fromkeys((r.group, r.resource) for r in types)
                    self._everything[key] = [o for g, r in kinds for o in self._of_type(g, r).get(namespace, ())]
            return list(self._everything[key])
        if self.kube is None:
            return None
        found, failures = self.reader.list_everything(types, namespace)
        inv, listed_types = self.inventory, set(types)

        def replaced(o: KubeObject) -> bool:  # whole (reduced) objects already read are richer: kept
            return (
                o.type in listed_types
                and (namespace is None or o.namespace == namespace)
                and not inv.has_details(o.type.group, o.type.resource, o.namespace)
            )

        inv.objects = [o for o in inv.objects if not replaced(o)] + [o for o in found if replaced(o)]
        inv.by_type = inv.kept = None  # no longer the same objects
        self._record(failures)
        failed = {f.target for f in failures}
        self._listed |= {
            (r.group, r.resource, scope if r.namespaced else "") for r in types if _target(r, namespace) not in failed
        }
        self._forget_indexes()
        return [o for o in inv.objects if wanted(o)]

    # ----- dry runs --------------------------------------------------------------------------------
    def dry_run(self, write: Write) -> Answer | None:
        """The server's answer to `write` sent with dryRun=All (kfin.core.read.reader.Reader.dry_run)."""
        return self.reader.dry_run(write)

    def may(
        self, verb: str, group: str, resource: str, namespace: str | None = None, name: str | None = None
    ) -> bool | None:
        """Whether kfin's user may `verb` the resource (kfin.core.read.reader.Reader.may)."""
        return self.reader.may(verb, group, resource, namespace, name)

    # ----- derived ---------------------------------------------------------------------------------
    def blocking_dependents(self, uid: str) -> list[KubeObject]:
        """Dependents whose ownerReference to `uid` has blockOwnerDeletion: true."""
        if self.asked is not None:
            self.asked.owners.add(uid)
        if self._blocking is None:
            self._blocking = {}
            for obj in self.inventory.objects:
                self._add_blocking(obj)
        return self._blocking.get(uid, [])

    def _add_blocking(self, obj: KubeObject) -> None:
        assert self._blocking is not None  # built by blocking_dependents
        for owner in obj.owner_uids(blocking=True):
            self._blocking.setdefault(owner, []).append(obj)

    def dependents(self, uid: str) -> list[KubeObject]:
        if self.asked is not None:
            self.asked.owners.add(uid)
        return [o for o in self.inventory.objects if uid in o.owner_uids()]

    def namespaces_by_name(self) -> dict[str, KubeObject] | None:
        """Every Namespace by name (None when they cannot be known), kept until the facts change: causes ask
        for an object's namespace once per object explained."""
        if self._namespaces is _NOT_YET:
            listed = self.objects("", "namespaces")
            self._namespaces = None if listed is None else {o.name: o for o in listed}
        return cast(dict[str, KubeObject] | None, self._namespaces)

    def warnings_about(self, obj: KubeObject, most: int = 5) -> list[JSON] | None:
        """The object's recent Warning Events, newest first (kfin.api.events); None when they cannot be read
        (a snapshot holds none)."""
        events = self.events_about(obj)
        return None if events is None else [e for e in events if e.get("type") == "Warning"][:most]

    def events_about(self, obj: KubeObject) -> list[JSON] | None:
        """The object's recent Events of every type, newest first, read once per object for these facts: an
        explanation reads them to tell a controller that reports progress from one that reports it cannot finish,
        and explain shows them. None when they cannot be read (a snapshot holds none)."""
        return self.reader.events_about(obj)

    def whole(self, obj: KubeObject) -> JSON | None:
        """The object as the server has it now, every field (what a catalog entry's holders read of it); from a
        snapshot, the object as kept when it holds more than metadata; None for a Secret (its data stays on
        the server), or when it cannot be read."""
        if (obj.type.group, obj.type.resource) == ("", "secrets"):
            return None
        if self.kube is None:
            return obj.raw if set(obj.raw) - {"apiVersion", "kind", "metadata", MANAGERS} else None
        return self.reader.whole(obj)

    def claim_users(self, claim: KubeObject) -> list[KubeObject] | None:
        """Scheduled Pods that use the claim, in any phase (as the pvc-protection controller counts them);
        None when the Pods of its namespace cannot be read."""
        pods = self.objects("", "pods", claim.namespace, full=True)
        if pods is None:
            return None
        return [pod for pod in pods if (pod.raw.get("spec") or {}).get("nodeName") and claim.name in pod_claims(pod)]


def pod_claims(pod: KubeObject) -> set[str]:
    """Claims a Pod uses: persistentVolumeClaim volumes and generic ephemeral volumes (<pod>-<volume>)."""
    claims = set()
    for volume in (pod.raw.get("spec") or {}).get("volumes") or []:
        if volume.get("persistentVolumeClaim"):
            claims.add(volume["persistentVolumeClaim"].get("claimName"))
        elif volume.get("ephemeral") is not None:
            claims.add(f"{pod.name}-{volume.get('name')}")
    return claims


_NOT_YET = object()  # not worked out yet (None is an answer: they cannot be known)


def _target(rtype: ResourceType, namespace: str | None) -> str:
    return rtype.qualified + (f" in namespace {namespace}" if namespace and rtype.namespaced else "")
