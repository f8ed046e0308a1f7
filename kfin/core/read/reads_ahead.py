"""What explaining the stuck objects will read, started while the scan still lists.

A scan's wall is its longest list (Events, page after page); every other type is done long before. Explaining
the Terminating objects first reads whole what their causes declare (RBAC, a namespace's roles...: Facts.prefetch,
kfin.core.explain.causes.reads_for), which on its own waited for the scan to end: a round trip of a few reads, several
pages each on a large cluster. Here each read starts as soon as a listed type shows an object that will need it,
beside the lists still in flight, and the reader takes its answer instead of asking again (Reader.fetch_all). The
reads are those prefetch makes, widened the same way (kfin.core.read.facts.WIDEN_AFTER: a type is read everywhere once
more than that many namespaces need it), so the answers are the same, only sooner; the price is the few
namespaces' reads started before a type was widened (WIDEN_AFTER at most), which prefetch then does not take.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Set
from concurrent.futures import Future, ThreadPoolExecutor

from kfin.core.read.facts import WIDEN_AFTER
from kfin.core.read.reader import Read, ReadKey
from kfin.errors import KfinError
from kfin.model import KubeObject, ResourceType


class ReadsAhead:
    """Reads started for Terminating objects as the scan finds them, by (group, resource, namespace, whole)."""

    def __init__(
        self,
        read: Callable[[ResourceType, str | None], list[KubeObject]],
        namespace: str | None,
        scanned_whole: Set[tuple[str, str]],
        wanted: Callable[[KubeObject], Iterable[ReadKey]],
        workers: int = 4,
    ):
        """`read`: a type's objects whole (in a namespace, or everywhere with None): Reader.read_whole;
        `namespace`: the scan's (None: every namespace); `scanned_whole`: the types the scan reads whole (known
        already, never read again); `wanted`: what explaining an object reads (reads_for)."""
        self.read, self.namespace, self.scanned_whole, self.wanted = read, namespace, scanned_whole, wanted
        self.started: dict[ReadKey, Future[Read]] = {}
        self._namespaces: dict[tuple[str, str], set[str]] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers)
        self._closed = False

    def found(self, resources: list[ResourceType], objects: list[KubeObject]) -> None:
        """Start what the Terminating ones among a listed type's `objects` will read (in the scan's thread);
        nothing once closed (explaining began before the scan's last list ended: kfin.core.read.before_last)."""
        if self._closed:
            return
        types: dict[tuple[str, str], ResourceType] | None = None
        for obj in objects:
            if not obj.terminating:
                continue
            for group, resource, namespace, whole in self.wanted(obj):
                if not whole or (group, resource) in self.scanned_whole:
                    continue  # metadata is listed by the scan, and these types it reads whole
                if types is None:  # the first of each, as Facts.resource finds it
                    types = {}
                    for r in resources:
                        types.setdefault((r.group, r.resource), r)
                rtype = types.get((group, resource))
                if rtype is not None:
                    self._start(rtype, namespace if rtype.namespaced else None)

    def _start(self, rtype: ResourceType, namespace: str | None) -> None:
        if namespace is not None and self.namespace is None:  # prefetch reads everywhere past a few namespaces
            seen = self._namespaces.setdefault((rtype.group, rtype.resource), set())
            seen.add(namespace)
            if len(seen) > WIDEN_AFTER:
                namespace = None
        key = (rtype.group, rtype.resource, namespace, True)
        if key not in self.started:
            self.started[key] = self._pool.submit(self._fetch, rtype, namespace)

    def _fetch(self, rtype: ResourceType, namespace: str | None) -> Read:
        """As Reader.fetch reads: an error is the answer, not raised."""
        try:
            return self.read(rtype, namespace)
        except KfinError as error:
            return error

    def take(self, rtype: ResourceType, namespace: str | None, full: bool) -> Read | None:
        """The answer of a read started ahead (waiting for it), once; None when it was not started."""
        started = self.started.pop((rtype.group, rtype.resource, namespace, full), None)
        return None if started is None else started.result()

    def close(self) -> None:
        """Drop what has not started: explanations read on demand from here on."""
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.started.clear()
