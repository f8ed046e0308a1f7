"""The stuck objects kept current from watches, for `kfin serve` and `kfin stuck --watch`.

Each context's types are listed once and then watched (kfin.api.informer). The answer is the one a scan
gives (kfin.core.explain.stuck.find_stuck over the same lean inventory), worked out again from memory only when a
change kfin can see arrives; and, when the last answer read something the watches do not keep (a claim's Pods,
Nodes, Leases, Events), every `refresh` seconds, when those are read again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from msgspec.structs import replace

from kfin.api.connection import Kube
from kfin.api.informer import Informers
from kfin.api.inventory import STUCK_FULL
from kfin.core.explain.stuck import StuckObject, stuck_in
from kfin.core.read.contexts import unread_context
from kfin.core.read.facts import Facts
from kfin.core.read.reader import Reader, WholeObjects
from kfin.core.read.scope import Scope
from kfin.errors import KfinError, UsageError

DEBOUNCE = 0.2  # seconds: changes that come together (a namespace's deletion) are answered together
KEEP_EVERY = 0.5  # seconds between the facts kfin guard keeps ready (keep_facts), while anything changes
KEPT_FOR = 5.0  # seconds facts kept ready are used without a look at the watches, should keep_facts fall behind

# Kept whole by the watches, besides what a scan keeps whole (STUCK_FULL): the kinds explanations read (RBAC for
# who removes a finalizer, webhooks and policies that gate it, the workloads that run controllers, APIServices
# and CRDs), so that an answer reads nothing again. Not Pods, Nodes, Leases or EndpointSlices: many, or
# rewritten every few seconds by their controllers; those are read when an explanation needs them.
EXPLAINING = frozenset(
    {
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
        ("apiregistration.k8s.io", "apiservices"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    }
)


class Watched:
    """The informers of every context of a scope, and the stuck objects they show."""

    def __init__(self, scope: Scope, refresh: float):
        if scope.from_snapshot:
            raise UsageError("a snapshot cannot be watched: --watch and kfin serve read a live cluster")
        self.refresh = refresh
        self.changes = threading.Condition()  # every context's informers notify it
        self._answered, self._read_on_demand = 0.0, False  # the last answer: when, and whether it read on demand
        self._seen = 0  # the version the last answer was worked out from
        self._stopped = False  # wakes a waiter at once: see stop()
        self._facts: tuple[Facts, tuple[str, ...], float] | None = (
            None  # see facts(): (facts, the watches' versions, when)
        )
        self._checked = 0.0  # when keep_facts() last saw that the facts still hold (0: it does not run)
        # whole objects read on demand, kept from one set of facts to the next while the watches show the object at
        # the same resourceVersion: what explanations read whole is read again only once it changed
        self._wholes = WholeObjects()
        self._catalog = scope.catalog  # the command's: its Facts explain with it
        self.sources: list[tuple[str, Kube | None, Informers | None, KfinError | None]] = []
        names: list[str | None] = list(scope.contexts) or [scope.target.context]
        for name in names:
            try:
                kube = Kube.connect(replace(scope.target, context=name))
            except KfinError as error:
                if len(names) == 1:
                    raise
                self.sources.append((name or "", None, None, error))  # the others are still watched
                continue
            informers = Informers(
                kube,
                scope.namespace_of(kube.namespace),
                STUCK_FULL | EXPLAINING,
                page_size=scope.chunk_size,
                relist=refresh,
                changes=self.changes,
                explaining=EXPLAINING,
            )
            self.sources.append((kube.context, kube, informers, None))

    def _facts_of(self, kube: Kube | None, informers: Informers) -> Facts:
        """Facts of what the informers show, read through a reader that keeps the whole objects read before."""
        return Facts(informers.inventory(), Reader(kube, informers.page_size, self._catalog, wholes=self._wholes))

    def start(self) -> None:
        for _, _, informers, _ in self.sources:
            if informers is not None:
                informers.start()

    def stop(self) -> None:
        for _, _, informers, _ in self.sources:
            if informers is not None:
                informers.stop()
        with self.changes:  # a waiter in due() that waits with no time limit looks at its stop flag now
            self._stopped = True
            self.changes.notify_all()

    def wait_synced(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        return all(
            informers.wait_synced(None if deadline is None else max(0.0, deadline - time.monotonic()))
            for _, _, informers, _ in self.sources
            if informers is not None
        )

    def version(self) -> int:
        return sum(informers.version for _, _, informers, _ in self.sources if informers is not None)

    def due(self, most: float | None = 1.0) -> bool:
        """Whether a new answer is due: after a change kfin can see (and DEBOUNCE more, so that a burst is
        answered once) or the refresh; False after `most` seconds without either, so that the caller may look
        at its stop flag (None: no time limit; stop() ends the wait)."""
        if self.wait(self._seen, most) == self._seen:
            return False
        time.sleep(DEBOUNCE)
        return True

    def wait(self, since: int, most: float | None = 1.0) -> int:
        """The version once a change kfin can see arrived, after `refresh` seconds when the last answer read
        on demand, after `most` seconds (so that the caller may look at its stop flag), or at stop(),
        whichever is first. Returns `since` when nothing is due yet."""
        due = self._refresh_due()
        limit = due - time.monotonic()
        if most is not None:
            limit = min(most, limit)
        with self.changes:
            self.changes.wait_for(
                lambda: self.version() != since or self._stopped, None if limit == float("inf") else max(0.0, limit)
            )
        now = self.version()
        if now == since and time.monotonic() >= due:
            return now + 1  # not a change: the refresh of what explanations read on demand
        return now

    def current(self) -> bool:
        """Whether the last answer still holds: nothing kfin can see changed since it began, and no refresh
        of what it read on demand is due (an exporter's result age starts again when it is scraped)."""
        return self._answered > 0 and self.version() == self._seen and time.monotonic() < self._refresh_due()

    def _refresh_due(self) -> float:
        return self._answered + self.refresh if self._read_on_demand else float("inf")

    def answer(
        self, kinds: Iterable[str] = (), finalizer: str | None = None, older: float | None = None
    ) -> tuple[list[StuckObject], list[Facts]]:
        """(stuck rows of every context, oldest first; the Facts they came from), as kfin.core.explain.stuck.find_all
        answers from a scan."""
        self._seen = self.version()  # before anything is read: a change meanwhile makes the next answer due
        known: list[Facts] = []
        sources: list[Facts] = []
        failed: list[KfinError] = []
        for context, kube, informers, error in self.sources:
            if informers is not None:
                try:
                    facts = self._facts_of(kube, informers)
                except KfinError as failure:
                    error = failure
                else:
                    known.append(facts)
                    sources.append(facts)
                    continue
            assert error is not None
            failed.append(error)
            sources.append(unread_context(context, error))
        if len(failed) == len(self.sources):  # nothing is known: an error, not an empty answer
            raise failed[0]
        rows = stuck_in(sources, kinds, finalizer, older)
        self._answered, self._read_on_demand = time.monotonic(), any(f.reads for f in known)
        return rows, sources

    def facts(self) -> tuple[Facts | None, str]:
        """The Facts of the first context as its watches hold them now, for kfin guard, with "" or why they are not
        current: (None, why) while its types are being listed (starting) or discovery fails; (facts, why) while a
        watch is down. Worked out again only when a watch saw a change (of any object: a Deployment scaled down
        changes what a deletion leaves stuck) or `refresh` passed (what explanations read on demand)."""
        _, kube, informers, error = self.sources[0]
        if informers is None:
            return None, f"kfin cannot reach the API server ({error.message if error else 'not connected'})"
        if not informers.synced() or not informers.informers:
            return None, "kfin's watches are still listing the cluster (the guard is starting)"
        seen = tuple(i.version for i in list(informers.informers.values()))
        cached = self._facts
        kept = cached is not None and time.monotonic() - self._checked < KEPT_FOR  # keep_facts() keeps them
        if not kept and (cached is None or cached[1] != seen or time.monotonic() - cached[2] > self.refresh):
            try:
                facts = self._facts_of(kube, informers)
            except KfinError as failure:
                return None, f"kfin's watches cannot read the cluster ({failure.message})"
            cached = self._facts = (facts, seen, time.monotonic())
        assert cached is not None
        # a list or watch that fails (not one RBAC refuses: that stays so, and the prediction says what it could
        # not read); an APIService down is a discovery failure, which kfin keeps retrying without waiting on it
        failures = [f for f in cached[0].inventory.failures if f.what in ("list", "watch") and f.reason != "Forbidden"]
        down = f"kfin's watch of {failures[0].target} is down ({failures[0].reason})" if failures else ""
        return cached[0], down

    def keep_facts(self, stop: threading.Event, every: float = KEEP_EVERY) -> None:
        """Keep facts() ready in this thread (kfin guard's): every `every` seconds, worked out again and indexed
        when a watch saw a change (or `refresh` passed), so that a review finds them ready instead of building and
        indexing them itself (50 ms at 50,000 objects, against 16 for a review on facts ready; on a cluster where
        something changes every second, Leases and Events, it would pay that at each review). The price: an
        answer may be up to `every` seconds behind the watches, themselves a moment behind the API server."""
        while not stop.wait(every):
            _, kube, informers, _ = self.sources[0]
            if informers is None or not informers.synced() or not informers.informers:
                continue
            now = tuple(i.version for i in list(informers.informers.values()))
            cached = self._facts
            if cached is not None and cached[1] == now and time.monotonic() - cached[2] < self.refresh:
                self._checked = time.monotonic()  # still what the watches hold
                continue
            try:
                facts = self._facts_of(kube, informers)
            except KfinError:
                self._checked = 0.0  # facts() says why to whoever asks
                continue
            # indexed before they are handed over: a Facts is worked on by one thread at a time
            facts.everything(None)  # the cluster's objects, and by type: what a prediction reads
            facts.everything("default")
            self._facts, self._checked = (facts, now, time.monotonic()), time.monotonic()

    def filled(self) -> bool:
        """Whether the first context's watches are listed and every one is up (no Facts built: a probe's
        question, asked every few seconds)."""
        _, _, informers, _ = self.sources[0]
        if informers is None or informers.error is not None or not informers.informers or not informers.synced():
            return False
        return all(i.failure is None or i.failure.reason == "Forbidden" for i in list(informers.informers.values()))

    def requests(self) -> tuple[int, int]:
        """(lists, watches) asked so far in every context."""
        counts = [i.requests() for _, _, i, _ in self.sources if i is not None]
        return sum(c[0] for c in counts), sum(c[1] for c in counts)
