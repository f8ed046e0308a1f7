"""Every read one command makes of one cluster: lists and gets on demand, reads started ahead while a scan still
lists, what facts made before a scan's last list ended read (reused by the facts of the whole scan), dry runs and
the impersonation they use, access reviews, whole objects and Events. Each kind of answer is kept in a cache of its
own (ServerAnswers); the questions the causes ask (kfin.core.read.facts.Facts) read through one Reader.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Set
from dataclasses import dataclass, field
from typing import Protocol, cast

from kfin.api import inventory
from kfin.api.access import may
from kfin.api.connection import Kube
from kfin.api.discovery import discover
from kfin.api.dryrun import may_impersonate
from kfin.api.dryrun import send as send_dry_run
from kfin.api.events import object_events
from kfin.api.scan import Lean, read_objects, scan
from kfin.core.read.catalog import Catalog
from kfin.core.read.scope import Scope
from kfin.errors import KfinError
from kfin.model import JSON, Answer, Failure, Inventory, KubeObject, ResourceType, Write
from kfin.util.parallel import completed

# (group, resource, namespace or None for everywhere, whole): a read, as Reader.fetch and reads_for give it; its answer
ReadKey = tuple[str, str, str | None, bool]
Read = list[KubeObject] | KfinError
# (verb, group, resource, namespace, name): a question of access review
AccessQuestion = tuple[str, str, str, str | None, str | None]
# (group, resource, namespace, name): an object read whole
ObjectName = tuple[str, str, str, str]
# (group, resource, namespace, name, uid): an object whose Events were read
ObjectIdentity = tuple[str, str, str, str, str]

# Events of one object read (one page, newest kept): its Warnings among them, whatever Normal ones come after
MOST_EVENTS = 200
# Dry runs one reader sends at most (kfin stuck -A over many namespaces): each explanation sends a few.
MOST_DRY_RUNS = 40

MISSING = object()  # not kept (None is a kept answer: the object could not be read)
MOST_WHOLES = 10_000  # whole objects a watch keeps between its facts: forgotten all at once beyond


class Ahead(Protocol):
    """Reads started before the facts existed, while the scan still listed (kfin.core.read.reads_ahead.ReadsAhead)."""

    def take(self, rtype: ResourceType, namespace: str | None, full: bool) -> Read | None: ...
    def close(self) -> None: ...


class WholeObjects:
    """Whole objects read on demand, kept across the facts a watch builds one after another (kfin serve, kfin guard,
    stuck -w): each by the resourceVersion the watch showed when it was read, so that an object is read again only
    once the watch shows it changed."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str, str, str, str], JSON | None] = {}

    @staticmethod
    def _key(obj: KubeObject) -> tuple[str, str, str, str, str] | None:
        version = str(obj.meta.get("resourceVersion") or "")
        return (obj.type.group, obj.type.resource, obj.namespace, obj.name, version) if version else None

    def get(self, obj: KubeObject) -> object:
        """The object as read when the watch showed it at this resourceVersion, or MISSING."""
        key = self._key(obj)
        return MISSING if key is None else self._kept.get(key, MISSING)

    def keep(self, obj: KubeObject, whole: JSON | None) -> None:
        key = self._key(obj)
        if key is None:
            return
        if len(self._kept) >= MOST_WHOLES:
            self._kept.clear()
        self._kept[key] = whole


@dataclass
class ServerAnswers:
    """What the server answered besides the lists, one cache per kind of answer. The rule for a scan's last list:
    these answers survive it (the facts of the whole scan take them: Reader.succeeding), since none of them depends
    on what the list adds; what was worked out of the objects (kfin.core.read.facts.Worked) does not."""

    access: dict[AccessQuestion, bool | None] = field(default_factory=dict)  # access reviews
    wholes: dict[ObjectName, JSON | None] = field(default_factory=dict)  # objects read whole
    dry_runs: dict[Write, Answer | None] = field(default_factory=dict)
    impersonable: dict[str, bool] = field(default_factory=dict)  # whom kfin's user may impersonate
    events: dict[ObjectIdentity, list[JSON] | None] = field(default_factory=dict)  # each object's Events

    def copy(self) -> ServerAnswers:
        return ServerAnswers(
            dict(self.access), dict(self.wholes), dict(self.dry_runs), dict(self.impersonable), dict(self.events)
        )

    def forget_reviewed(self) -> None:
        """Access reviews and whole objects are asked again once a read on demand changed the facts (as what was
        worked out of them); dry runs and Events are not."""
        self.access.clear()
        self.wholes.clear()


class Reader:
    """Every read of one cluster for one command (None for a snapshot: nothing is read), with what it answered."""

    def __init__(
        self,
        kube: Kube | None = None,
        chunk_size: int = 500,
        catalog: Catalog | None = None,
        *,
        dry_runs_allowed: bool = False,
        wholes: WholeObjects | None = None,
    ):
        """`catalog`: the command's (its related holders' fields are kept of objects read whole); `dry_runs_allowed`:
        writes may be sent as dry runs (dryRun=All) to explain (not --no-dry-run); `wholes`: whole objects read by
        the readers before this one (a watch's)."""
        self._kube = kube
        self._connect: Callable[[], Kube] | None = None  # see connect_when_needed
        self.chunk_size = chunk_size
        self.catalog = catalog if catalog is not None else Catalog()
        self.dry_runs_allowed = dry_runs_allowed
        self.wholes = wholes
        self.answers = ServerAnswers()
        self.reads = 0  # reads from the API server on demand: an answer that made none is current from watches
        self.ahead: Ahead | None = None  # the scan's reads ahead, taken by the first fetch_all
        # While facts are made before a scan's last list ended (kfin.core.read.before_last): what they read, for the
        # reader of the facts that may succeed them; and what the reader of those takes instead of reading again.
        self.recording: dict[ReadKey, Read] | None = None
        self._reuse: dict[ReadKey, Read] = {}

    @property
    def kube(self) -> Kube | None:
        """The connection to the cluster; None for a snapshot."""
        if self._kube is None and self._connect is not None:
            with self._connecting:
                if self._kube is None:
                    self._kube = self._connect()
                    self._connect = None
        return self._kube

    def connect_when_needed(self, connect: Callable[[], Kube]) -> None:
        """Connect with `connect` only when something is read or the connection is asked for: a fleet's facts
        come back from their worker process without one, and connecting again runs the context's exec
        credential plugin again (seconds each on a cloud fleet) though most commands read nothing more."""
        self._connect, self._connecting = connect, threading.Lock()

    def drop_connection(self) -> None:
        """Forget the connection (a fleet worker's facts are sent back to the parent process without it)."""
        self._kube = None

    def succeeding(self) -> Reader:
        """A reader for the facts of the whole scan, made after these facts made before its last list ended: what
        these read of lists is taken instead of read again, and the server's answers survive (ServerAnswers)."""
        after = Reader(self.kube, self.chunk_size, self.catalog, dry_runs_allowed=self.dry_runs_allowed)
        after._reuse = dict(self.recording or {})
        after.answers = self.answers.copy()
        return after

    # ----- what a command reads before its facts exist: the server's kinds, the object it names, a scan ----------
    def _live(self) -> Kube:
        kube = self.kube
        if kube is None:
            raise KfinError("a snapshot is read from its file: nothing more can be read from a cluster")
        return kube

    def discover(self, refresh: bool = False) -> tuple[list[ResourceType], list[Failure]]:
        """The server's resource types (discovery, cached across commands unless `refresh`), and what failed."""
        return discover(self._live(), refresh)

    def read_object(self, rtype: ResourceType, namespace: str | None, name: str, *, metadata_only: bool) -> JSON:
        """One object, whole or metadata-only, as the server has it now; NotFoundError when it does not exist."""
        return self._live().read_object(rtype, namespace, name, metadata_only=metadata_only)

    def scan_steps(
        self,
        namespace: str | None,
        *,
        full: Set[tuple[str, str]],
        refresh: bool,
        progress: Callable[[int, int], None] | None,
        concurrency: int,
        lean: bool,
        listed: bool,
        before_last: bool,
    ) -> Generator[inventory.TypeListed | inventory.BeforeLastList, None, Inventory]:
        """A scan of the cluster (kfin.api.inventory.live_steps), in pages of this reader's size: its steps, then
        what it found."""
        return inventory.live_steps(
            self._live(),
            namespace,
            full=full,
            refresh=refresh,
            progress=progress,
            concurrency=concurrency,
            chunk_size=self.chunk_size,
            lean=lean,
            listed=listed,
            before_last=before_last,
        )

    def scan_types(
        self,
        types: list[ResourceType],
        *,
        concurrency: int,
        lean: Lean,
        progress: Callable[[int, int], None] | None,
    ) -> tuple[list[KubeObject], list[Failure]]:
        """Some types across every namespace, metadata-only and lean (what may be stuck kept), with what failed."""
        return scan(
            self._live(), types, None, concurrency=concurrency, page_size=self.chunk_size, lean=lean, progress=progress
        )

    # ----- lists -----------------------------------------------------------------------------------
    def read_whole(self, rtype: ResourceType, namespace: str | None) -> list[KubeObject]:
        """A type's objects whole (in a namespace, or everywhere with None), with the fields the catalog keeps:
        what a read ahead reads (kfin.core.read.reads_ahead), as fetch reads it."""
        assert self.kube is not None  # only a live reader reads ahead
        return read_objects(self.kube, rtype, namespace, self.chunk_size, full=True, kept=self.catalog)

    def fetch(self, rtype: ResourceType, namespace: str | None, full: bool) -> Read:
        """A type's objects (in a namespace, or everywhere with None), whole or metadata only; an error is the
        answer, not raised (safe in a worker thread)."""
        key = (rtype.group, rtype.resource, namespace, full)
        if key in self._reuse:  # read by the facts these succeed (succeeding)
            return self._reuse.pop(key)
        assert self.kube is not None  # only live facts read
        self.reads += 1
        try:
            fetched: Read = read_objects(self.kube, rtype, namespace, self.chunk_size, full=full, kept=self.catalog)
        except KfinError as error:
            fetched = error
        return self._recorded(key, fetched)

    def fetch_all(
        self, tasks: list[tuple[ResourceType, str | None, bool]], concurrency: int
    ) -> list[tuple[tuple[ResourceType, str | None, bool], Read]]:
        """Several reads at once; the first call takes the scan's reads ahead (and closes them)."""
        ahead, self.ahead = self.ahead, None
        if not tasks:
            if ahead is not None:
                ahead.close()
            return []

        def fetch(task: tuple[ResourceType, str | None, bool]) -> Read:
            taken = ahead.take(*task) if ahead is not None else None  # started while the scan listed
            if taken is None:
                return self.fetch(*task)
            rtype, namespace, full = task
            return self._recorded((rtype.group, rtype.resource, namespace, full), taken)

        try:
            return [(task, future.result()) for task, future in completed(fetch, tasks, concurrency)]
        finally:
            if ahead is not None:
                ahead.close()

    def _recorded(self, key: ReadKey, fetched: Read) -> Read:
        if self.recording is not None:
            self.recording[key] = fetched
        return fetched

    def list_everything(
        self, types: list[ResourceType], namespace: str | None
    ) -> tuple[list[KubeObject], list[Failure]]:
        """Every object of `types` in a namespace (None: the whole cluster), listed in parallel."""
        assert self.kube is not None  # only live facts read
        self.reads += 1
        return scan(self.kube, types, namespace, page_size=self.chunk_size)

    # ----- other answers ---------------------------------------------------------------------------
    def dry_run(self, write: Write) -> Answer | None:
        """The server's answer to `write` sent with dryRun=All (stored nowhere), as its actor when kfin's user may
        impersonate it, else as kfin's user (the answer says which); once per write. None when no dry run is sent:
        a snapshot, --no-dry-run, MOST_DRY_RUNS reached, or the server could not be reached."""
        dry_runs = self.answers.dry_runs
        if write in dry_runs:
            return dry_runs[write]
        if not self.dry_runs_allowed or self.kube is None or len(dry_runs) >= MOST_DRY_RUNS:
            return None
        impersonate = False
        if write.actor:
            if write.actor not in self.answers.impersonable:
                self.answers.impersonable[write.actor] = may_impersonate(self.kube, write.actor)
            impersonate = self.answers.impersonable[write.actor]
        try:
            answer: Answer | None = send_dry_run(self.kube, write, impersonate)
        except KfinError:
            answer = None
        dry_runs[write] = answer
        return answer

    def may(
        self, verb: str, group: str, resource: str, namespace: str | None = None, name: str | None = None
    ) -> bool | None:
        """Whether kfin's user may `verb` the resource (a SelfSubjectAccessReview, asked once per question: a
        review stores nothing); None when it cannot be asked (a snapshot) or had no answer."""
        if self.kube is None:
            return None
        key = (verb, group, resource, namespace, name)
        if key not in self.answers.access:
            self.answers.access[key] = may(self.kube, verb, group, resource, namespace, name)
        return self.answers.access[key]

    def events_about(self, obj: KubeObject) -> list[JSON] | None:
        """The object's recent Events of every type, newest first, read once per object. None when they cannot be
        read (a snapshot holds none)."""
        if self.kube is None or not obj.namespace:
            return None
        key = (obj.type.group, obj.type.resource, obj.namespace, obj.name, obj.uid)
        if key not in self.answers.events:
            self.reads += 1
            self.answers.events[key] = object_events(
                self.kube, obj.namespace, obj.type.kind, obj.name, obj.uid, MOST_EVENTS, warnings_only=False
            )
        return self.answers.events[key]

    def whole(self, obj: KubeObject) -> JSON | None:
        """The object as the server has it now, every field; None when it cannot be read (live readers only)."""
        assert self.kube is not None  # a snapshot's objects are what it kept (Facts.whole)
        key = (obj.type.group, obj.type.resource, obj.namespace, obj.name)
        if key not in self.answers.wholes:
            kept = self.wholes.get(obj) if self.wholes is not None else MISSING
            if kept is not MISSING:
                self.answers.wholes[key] = cast(JSON | None, kept)  # what keep() was given
            else:
                self.reads += 1
                try:
                    self.answers.wholes[key] = self.kube.read_object(obj.type, obj.namespace or None, obj.name)
                except KfinError:
                    self.answers.wholes[key] = None
                if self.wholes is not None:
                    self.wholes.keep(obj, self.answers.wholes[key])
        return self.answers.wholes[key]


def reader_for(scope: Scope, kube: Kube | None) -> Reader:
    """The command's reader of one cluster, from its scope: its catalog, page size, and whether dry runs are sent."""
    return Reader(kube, scope.chunk_size, scope.catalog, dry_runs_allowed=scope.dry_run)
