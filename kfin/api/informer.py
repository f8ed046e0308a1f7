"""Every type kept up to date the way informers do: listed once, then watched.

Each type is listed (metadata-only, or whole and reduced for the kinds explanations read), then watched from
the list's resourceVersion with bookmarks. A watch that ends is started again from the last version seen; one
whose version expired (410) lists again; an error backs off (1 s, doubling to a minute); a type that cannot
be watched is listed again every `relist` seconds. What is kept of each object is what a scan keeps
(kfin.api.scan.to_object): most objects thin, so memory is that of one lean scan, and flat under churn.

A change counts (`Informers.version` moves, waiters wake) only when kfin would see it: a thin object's name,
uid or owners, or a kept object's fields other than its resourceVersion. A Pod's status or a ConfigMap's
data changing is not a change to kfin, since kfin never reads them.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from kfin.api.connection import METADATA_ACCEPT, Kube
from kfin.api.discovery import discover, failure_of
from kfin.api.paths import resource_path
from kfin.api.protobuf import OwnerRef
from kfin.api.resources import one_per_storage
from kfin.api.scan import Lean, to_object
from kfin.api.transport import APPLICATION_JSON, ByteStream
from kfin.errors import APIError, ForbiddenError, KfinError
from kfin.model import CRDS, JSON, NAMESPACES, Failure, Inventory, KubeObject, ResourceType, ThinObject

# Each watch asks for a random 30 to 60 minutes, what kube-apiserver gives a watch that asks for nothing
# (--min-request-timeout 1800 s, times 1 to 2), so that watches do not all end at once and a steady state
# costs a few requests an hour. A watch silent for WATCH_IDLE seconds is taken as lost and started again:
# the server's bookmarks (about one a minute from kube-apiserver's watch cache) keep a healthy one talking.
WATCH_SECONDS = (1800, 3600)
WATCH_IDLE = 300.0
BACKOFF_FIRST, BACKOFF_MOST = 1.0, 60.0
APISERVICES = ("apiregistration.k8s.io", "apiservices")
KEEP_ALL = Lean(for_file=True)  # every object kept, thin unless it has finalizers or is being deleted

Key = tuple[str, str]  # (namespace, name): unique within a type, as the API server makes it


class ExpiredError(Exception):
    """The watch's resourceVersion is too old (410): the type is listed again."""


def _comparable(obj: KubeObject) -> object:
    """What kfin sees of an object: thin ones by identity and owners, kept ones by every field but the
    resourceVersion (which moves on every write, even one that changes nothing kfin reads)."""
    if isinstance(obj, ThinObject):
        return (obj.uid, obj.owner_uids(), obj.owner_uids(blocking=True))
    meta = {k: v for k, v in obj.meta.items() if k != "resourceVersion"}
    return dict(obj.raw, metadata=meta)


class Informer:
    """One type in one scope: its objects by (namespace, name), kept current by a thread of its own."""

    def __init__(
        self,
        kube: Kube,
        rtype: ResourceType,
        namespace: str | None,
        full: bool,
        changed: Callable[[Informer, KubeObject | None, KubeObject | None], None],
        *,
        page_size: int = 500,
        relist: float = 60.0,
        listed: Callable[[], None] | None = None,
    ):
        """`listed`: called after the first list (CRDs and APIServices: a kind may have come meanwhile)."""
        self.kube, self.rtype, self.full, self.changed = kube, rtype, full, changed
        self.on_first_list = listed
        self.page_size, self.relist = page_size, relist
        self.namespace = namespace if rtype.namespaced else None
        # in one namespace's scope, only the Namespace itself of the cluster-scoped types
        self.only_name = namespace if namespace is not None and (rtype.group, rtype.resource) == NAMESPACES else None
        self.path = resource_path(rtype, self.namespace)
        self.objects: dict[Key, KubeObject] = {}
        # of those, the ones that are not ThinObjects (being deleted, with finalizers, or read whole): what an
        # answer walks, without passing over every thin object each time
        self.kept: dict[Key, KubeObject] = {}
        self.lock = threading.Lock()  # objects and kept change together: an answer copies both at once
        self.version = ""
        self.synced = False  # listed, and current since (False again when it must be listed again)
        self.listed = False  # listed at least once: its objects are known
        self.failure: Failure | None = None  # of the last attempt, None once it worked again
        self.lists = self.watches = 0
        self.stopped = threading.Event()
        self.watchable = "watch" in rtype.verbs
        self._stream: ByteStream | None = None  # of the watch in progress

    def stop(self) -> None:
        """At once: the watch in progress is ended, not waited out."""
        self.stopped.set()
        self._end(self._stream)

    @staticmethod
    def _end(stream: ByteStream | None) -> None:
        try:
            if stream is not None:
                stream.shutdown()
        except (ValueError, RuntimeError, OSError):
            pass  # that watch has ended already

    # ----- what is known -----------------------------------------------------------------------------
    def _keep(self, item: JSON) -> KubeObject | None:
        return to_object(self.rtype, item, self.full, KEEP_ALL)

    def _keep_refs(self, name: str, namespace: str, uid: str, refs: Sequence[OwnerRef]) -> KubeObject | None:
        return KEEP_ALL.keep_refs(self.rtype, name, namespace, uid, refs)

    def _query(self) -> JSON:
        return {"fieldSelector": f"metadata.name={self.only_name}"} if self.only_name else {}

    def _set(self, key: Key, new: KubeObject | None) -> None:
        with self.lock:
            old = self.objects.pop(key, None) if new is None else self.objects.get(key)
            if new is not None:
                self.objects[key] = new
            if new is None or isinstance(new, ThinObject):
                self.kept.pop(key, None)
            else:
                self.kept[key] = new
        if (old is None) != (new is None) or (
            old is not None and new is not None and _comparable(old) != _comparable(new)
        ):
            self.changed(self, old, new)

    # ----- reading -----------------------------------------------------------------------------------
    def list(self) -> None:
        """Every object again: those gone since are dropped, as a DELETED event would."""
        what = ("list", self.rtype.qualified, self.namespace)
        versions: list[str] = []

        def kept(page: JSON) -> list[KubeObject]:
            versions.append(str((page.get("metadata") or {}).get("resourceVersion") or ""))
            found = (self._keep(item) for item in page.get("items") or [])
            kept_whole: list[KubeObject] = page.get("kept", [])
            return [obj for obj in found if obj is not None] + kept_whole

        if self.full:
            pages = self.kube.list_pages(self.path, self.page_size, what=what, reduce=kept, query=self._query())
        else:
            pages = self.kube.list_metadata_pages(
                self.path, self.page_size, what=what, reduce=kept, query=self._query(), keep=self._keep_refs
            )
        fresh = {(o.namespace, o.name): o for objects in pages for o in objects}
        self.lists += 1
        for key in [k for k in self.objects if k not in fresh]:
            self._set(key, None)
        for key, obj in fresh.items():
            self._set(key, obj)
        first = not self.listed
        self.version, self.synced, self.listed = versions[0] if versions else "", True, True
        if first and self.on_first_list is not None:
            self.on_first_list()

    def watch(self) -> None:
        """One watch, from the last version seen, until the server ends it (or the type is stopped)."""
        seconds = random.randint(*WATCH_SECONDS)
        self.watches += 1
        events = self.kube.watch(
            self.path,
            dict(self._query(), resourceVersion=self.version or None),
            seconds,
            accept=APPLICATION_JSON if self.full else METADATA_ACCEPT,
            what=("watch", self.rtype.qualified, self.namespace),
            opened=self._opened,
            idle=WATCH_IDLE,
        )
        for event in events:
            if self.stopped.is_set():
                return
            kind, obj = event.get("type"), event.get("object")
            if not isinstance(obj, dict):
                continue
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise ExpiredError()
                raise APIError(f"the watch of {self.rtype.qualified} ended: {obj.get('message') or obj}")
            meta: JSON = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
            self.version = str(meta.get("resourceVersion") or self.version)
            if kind == "BOOKMARK":
                continue
            key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            if kind == "DELETED":
                self._set(key, None)
            elif kind in ("ADDED", "MODIFIED"):
                self._set(key, self._keep(obj))

    def _opened(self, stream: ByteStream) -> None:
        self._stream = stream
        if self.stopped.is_set():  # stopped while it was being opened
            self._end(stream)

    def run(self) -> None:
        """List, then watch for as long as the informer is not stopped; back off after a failure."""
        backoff = BACKOFF_FIRST
        while not self.stopped.is_set():
            watching = self.synced and self.watchable
            try:
                if not self.synced or not self.watchable:
                    self.list()
                    self._recovered()
                if self.watchable:
                    watching = True
                    self.watch()
                else:
                    self.stopped.wait(self.relist)
                backoff = BACKOFF_FIRST
            except ExpiredError:
                self.synced = False  # list again, at once: the server forgot the version, not the objects
            except KfinError as error:
                if watching and (isinstance(error, ForbiddenError) or getattr(error, "status", 0) == 405):
                    self.watchable = False  # listed but not watched (RBAC without watch): lists every `relist`
                    continue
                failed = self.failure is None
                self.failure = failure_of("watch" if watching else "list", _target(self.rtype, self.namespace), error)
                if failed:
                    self.changed(self, None, None)  # a failure is news: the result is partial until it heals
                self.synced = False  # list again once it answers: what changed meanwhile is caught up
                self.stopped.wait(backoff * random.uniform(0.8, 1.2))
                backoff = min(backoff * 2, BACKOFF_MOST)

    def _recovered(self) -> None:
        if self.failure is not None:
            self.failure = None
            self.changed(self, None, None)


def _target(rtype: ResourceType, namespace: str | None) -> str:
    return rtype.qualified + (f" in namespace {namespace}" if namespace and rtype.namespaced else "")


class Informers:
    """Every type of a cluster (or of one namespace) kept current: what `kfin serve` and `kfin stuck
    --watch` read instead of scanning again. `inventory()` is what a scan would have returned, from memory.

    New kinds are found by watching CRDs and APIServices: when one comes or goes, discovery is asked again
    and informers are started or stopped to match."""

    def __init__(
        self,
        kube: Kube,
        namespace: str | None,
        full: Iterable[tuple[str, str]],
        *,
        page_size: int = 500,
        relist: float = 60.0,
        changes: threading.Condition | None = None,
        explaining: Iterable[tuple[str, str]] = (),
    ):
        """`full`: the kinds kept whole (reduced); of those, `explaining` are kept only to explain other objects
        (RBAC, webhooks, workloads): their changes count only while something is being deleted.
        `changes`: notified at each change; several Informers (one per context) may share one."""
        self.kube, self.namespace, self.full = kube, namespace, set(full)
        self.explaining = set(explaining)
        self.page_size, self.relist = page_size, relist
        self.informers: dict[ResourceType, Informer] = {}
        self.resources: list[ResourceType] = []
        self.discovery_failures: list[Failure] = []
        self.error: KfinError | None = None  # discovery failed: nothing can be known until it answers
        self._stop = threading.Event()
        self.version = 0  # moves on each change kfin would see
        self.changes = changes or threading.Condition()
        self._rediscover = threading.Event()
        self._hot_namespaces: set[str] = set()  # Terminating: any change of their content counts
        self._hot_uids: set[str] = set()  # being deleted: a change of their dependents counts

    # ----- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        """Discover and start an informer per type, in the background; discovery is retried until it
        answers, and asked again when a kind may have come or gone."""
        threading.Thread(target=self._keep_discovering, daemon=True, name="kfin-discovery").start()

    def stop(self) -> None:
        self._stop.set()
        self._rediscover.set()
        for informer in list(self.informers.values()):
            informer.stop()

    def _discover(self) -> None:
        served, failures = discover(self.kube, refresh=True)
        resources = one_per_storage(served)  # one watch for events, not two on the same objects
        wanted = [r for r in resources if self.namespace is None or r.namespaced or (r.group, r.resource) == NAMESPACES]
        for rtype in [r for r in self.informers if r not in wanted]:
            self.informers.pop(rtype).stop()
        for rtype in wanted:
            if rtype not in self.informers and not self._stop.is_set():
                informer = Informer(
                    self.kube,
                    rtype,
                    self.namespace,
                    (rtype.group, rtype.resource) in self.full,
                    self._changed,
                    page_size=self.page_size,
                    relist=self.relist,
                    # between discovery and this first list, a kind may have come: discovery is asked again
                    listed=self._rediscover.set if (rtype.group, rtype.resource) in (CRDS, APISERVICES) else None,
                )
                self.informers[rtype] = informer
                threading.Thread(target=informer.run, daemon=True, name=f"kfin-watch-{rtype.qualified}").start()
        news = (resources, failures) != (self.resources, self.discovery_failures) or self.error is not None
        with self.changes:  # the version moves before the types show: whoever sees them sees the change too
            self.version += news
            self.resources, self.discovery_failures, self.error = resources, failures, None
            self.changes.notify_all()

    def _keep_discovering(self) -> None:
        backoff, due = BACKOFF_FIRST, True
        while not self._stop.is_set():
            if due:
                try:
                    self._discover()
                    backoff = BACKOFF_FIRST
                except KfinError as error:
                    if self.resources:  # the types known keep being watched; the result says it may miss some
                        self.discovery_failures = [failure_of("discovery", "the API server's types", error)]
                    else:
                        self.error = error
                    self._changed(None, None, None)
                    self._stop.wait(backoff * random.uniform(0.8, 1.2))
                    backoff = min(backoff * 2, BACKOFF_MOST)
                    continue
            # also every `relist` while part of discovery fails: an APIService that comes back serves its kinds
            due = self._rediscover.wait(self.relist if self.discovery_failures else None)
            self._rediscover.clear()
            due = due or bool(self.discovery_failures)

    # ----- changes -----------------------------------------------------------------------------------
    def _changed(self, informer: Informer | None, old: KubeObject | None, new: KubeObject | None) -> None:
        if informer is not None and (old is not None or new is not None):
            key = (informer.rtype.group, informer.rtype.resource)
            if key in (CRDS, APISERVICES) and (old is None or new is None) and informer.listed:
                self._rediscover.set()  # a kind may have come or gone (not at the first list: discovery is new)
            if not any(self._counts(o) for o in (old, new) if o is not None):
                return
        with self.changes:
            self.version += 1
            self.changes.notify_all()

    def _counts(self, obj: KubeObject) -> bool:
        """Whether a change of `obj` can change what kfin reports: it is kept whole (being deleted, with
        finalizers, or of a kind explanations read), it is content of a Terminating namespace, or it
        depends on an object being deleted."""
        if not isinstance(obj, ThinObject):
            if (obj.type.group, obj.type.resource) in self.explaining and not obj.terminating and not obj.finalizers:
                return bool(self._hot_uids)  # a Role or a Deployment only explains what is being deleted
            return True
        return obj.namespace in self._hot_namespaces or not self._hot_uids.isdisjoint(obj.owner_uids())

    def wait(self, since: int, timeout: float | None) -> int:
        """The version once it moved past `since`, or after `timeout` seconds, whichever is first."""
        with self.changes:
            self.changes.wait_for(lambda: self.version != since, timeout)
            return self.version

    def synced(self) -> bool:
        """Discovered and every type listed, or failing (a failure is reported, not waited for)."""
        if self.error is not None:
            return True
        return bool(self.resources) and all(i.listed or i.failure is not None for i in list(self.informers.values()))

    def wait_synced(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.synced():
            if self._stop.wait(0.05) or (deadline is not None and time.monotonic() > deadline):
                return False
        return True

    # ----- the answer -------------------------------------------------------------------------------
    def inventory(self) -> Inventory:
        """What a scan would have found, from memory: the same Inventory, with what cannot be read now
        (a type not listed yet, a watch failing) as failures, so that nothing unread is called clear.
        Raises what discovery answered while it fails: without the types, nothing is known."""
        if self.error is not None:
            raise self.error
        informers = list(self.informers.values())
        objects: list[KubeObject] = []
        by_type: dict[tuple[str, str], list[KubeObject]] = {}
        failures = list(self.discovery_failures)
        kept: list[KubeObject] = []
        for informer in informers:
            with informer.lock:  # its thread changes them meanwhile
                found = list(informer.objects.values())
                kept.extend(informer.kept.values())
            objects.extend(found)
            by_type.setdefault((informer.rtype.group, informer.rtype.resource), []).extend(found)
            if informer.failure is not None:
                failures.append(informer.failure)
            elif not informer.listed:
                failures.append(Failure("list", _target(informer.rtype, self.namespace), "Pending", "not listed yet"))
        if informers and all(i.failure is not None for i in informers):  # nothing at all: no answer, an error
            first = informers[0].failure
            assert first is not None
            raise APIError(f"no type could be read: {first.line()}", 0, first.reason)
        deleted = [o for o in kept if o.terminating]  # never a thin one
        self._hot_namespaces = {o.name for o in deleted if (o.type.group, o.type.resource) == NAMESPACES}
        self._hot_uids = {o.uid for o in deleted if o.uid}
        detailed = {
            (i.rtype.group, i.rtype.resource, i.namespace or "")
            for i in informers
            if i.full and i.listed and i.failure is None
        }
        return Inventory(
            self.resources,
            objects,
            failures=failures,
            observed_at=datetime.now(UTC),
            context=self.kube.context,
            server=self.kube.shown,
            namespace=self.namespace,
            detailed=detailed,
            by_type=by_type,
            kept=kept,
        )

    def requests(self) -> tuple[int, int]:
        """(lists, watches) asked so far, for kfin serve's own metrics."""
        informers = list(self.informers.values())
        return sum(i.lists for i in informers), sum(i.watches for i in informers)
