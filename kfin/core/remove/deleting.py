"""`kfin delete`: the DELETE a user asked for, and then what holds the object, worked out again from watches
(kfin.core.explain.watching, the machinery of `kfin stuck -w`) each time something kfin reads changes, until it is gone.

kfin sends the DELETE only: a finalizer is never removed here, the plan's `kfin remove` step is for the user."""

from __future__ import annotations

import time
from collections.abc import Callable

from msgspec import Struct
from msgspec.structs import replace

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.connection import Kube
from kfin.api.resources import KindLookup
from kfin.core.explain.blocking import Chain, follow
from kfin.core.explain.causes import Explanation, blocker_line, explain_cached, main_finding
from kfin.core.explain.selectors import label_selector
from kfin.core.explain.stuck import is_stuck
from kfin.core.explain.watching import Watched
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.core.read.subject import facts_on_demand
from kfin.errors import KfinError
from kfin.model import JSON, NAMESPACES, KubeObject

CASCADES = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}


def send_delete(kube: Kube, obj: KubeObject, cascade: str, dry_run: bool) -> JSON:
    """The DELETE of `obj` with kubectl's --cascade as its propagation policy, guarded by the uid kfin predicted
    for: an object deleted and made again meanwhile (another of the same name) is not deleted (409)."""
    options: JSON = {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": CASCADES[cascade],
        "preconditions": {"uid": obj.uid},
    }
    answer: JSON = kube.delete_object(obj.type, obj.namespace or None, obj.name, options, dry_run)
    return answer


class Holder(Struct):
    """What holds a deleted object now, as `kfin explain` answers it: its findings, and (being deleted) the
    blocking chain down to the root causes with the plan."""

    explanation: Explanation
    chain: Chain | None

    @property
    def obj(self) -> KubeObject:
        return self.explanation.obj

    @property
    def verdict(self) -> str | None:
        main = main_finding(self.explanation)
        return main.verdict.value if main else None

    @property
    def blocker(self) -> str:
        return blocker_line(self.explanation)

    @property
    def roots(self) -> list[str]:
        """The root causes' labels, the deepest first (the start itself when nothing deeper holds it)."""
        return [self.chain.label(r) for r in self.chain.roots] if self.chain else []

    @property
    def root_cause(self) -> str | None:
        """The root cause the plan's first step deals with, as kfin explain's plan says it (else the deepest root)."""
        if self.chain and self.chain.steps:
            return self.chain.steps[0].cause
        roots = [r for r in self.roots if r != self.obj.ref]
        return roots[0] if roots else None

    @property
    def next_step(self) -> JSON | None:
        """The plan's first step, as kfin explain's plan gives it (a `kfin remove` or kubectl command, or a note)."""
        return self.chain.steps[0].to_dict() if self.chain and self.chain.steps else None

    def key(self) -> tuple[object, ...]:
        """What a user sees change: the verdict, the blocker, the root causes, the next step."""
        step = self.next_step or {}
        return self.verdict, self.blocker, self.root_cause, step.get("command"), step.get("note")

    def to_dict(self) -> JSON:
        return {
            "object": named(self.obj),
            "verdict": self.verdict,
            "blocker": self.blocker,
            "rootCause": self.root_cause,
            "rootCauses": self.chain.root_causes() if self.chain else [],
            "next": self.next_step,
        }


def named(obj: KubeObject) -> JSON:
    """How kfin delete's JSON lines name an object."""
    return {"kind": obj.type.kind, "group": obj.type.group, "namespace": obj.namespace or None, "name": obj.name}


def holder(obj: KubeObject, facts: Facts) -> Holder:
    """`obj`'s answer from `facts`, as kfin explain gives it (its chain followed ahead: what holds a namespace next)."""
    return Holder(explain_cached(obj, facts), follow(obj, facts, ahead=True) if is_stuck(obj, facts) else None)


def targets_of(scope: Scope, kind: str, selector: str) -> tuple[list[KubeObject], Facts]:
    """The objects of `kind` whose labels match `selector` (kubectl delete KIND -l), in -n or the context's
    namespace for a namespaced kind, and the facts; [] when none matches."""
    matches = label_selector(selector)  # bad input is said before anything is read
    facts = facts_on_demand(scope)
    rtype = KindLookup(facts.inventory.resources + builtin_resources()).find(kind)
    namespace = (scope.namespace or facts.inventory.namespace or "default") if rtype.namespaced else None
    found = facts.objects(rtype.group, rtype.resource, namespace, full=True)
    if found is None:
        raise KfinError(f"kfin could not list {rtype.qualified}" + (f" in namespace {namespace}" if namespace else ""))
    return sorted((o for o in found if matches(o.meta.get("labels") or {})), key=lambda o: o.name), facts


def watch_scope(scope: Scope, objects: list[KubeObject]) -> Scope:
    """What the answers of deletions read, watched: a namespace's own content, a namespaced object's namespace,
    and for any other cluster-scoped object (a CRD, a Node, a PersistentVolume), or several namespaces, every
    namespace."""
    where = {o.name if (o.type.group, o.type.resource) == NAMESPACES else o.namespace for o in objects}
    if len(where) == 1 and "" not in where:
        return replace(scope, namespace=where.pop(), all_namespaces=False)
    return replace(scope, namespace=None, all_namespaces=True)


def gone(kube: Kube, obj: KubeObject) -> bool:
    """Whether the API server no longer has `obj` (that uid): asked of the server, a watch's absence is no proof."""
    now = kube.read_object_or_none(obj.type, obj.namespace or None, obj.name)
    return now is None or (now.get("metadata") or {}).get("uid") != obj.uid


def follow_deletion(
    scope: Scope,
    objects: list[KubeObject],
    kube: Kube,
    timeout: float,
    every: float,
    said: Callable[[Holder], None],
) -> list[KubeObject]:
    """The objects still there after `timeout` seconds ([]: every one is gone; returned as soon as they are). Each
    object's answer that differs from its one before is handed to `said`; they are worked out again at each change
    the watches see, and every `every` seconds (what an answer reads on demand, a Pod's node or an Event, is not
    watched)."""
    deadline = time.monotonic() + timeout
    left = [o for o in objects if not gone(kube, o)]  # deleted at once: nothing to watch
    if not left:
        return []
    watched = Watched(watch_scope(scope, left), every)
    watched.start()
    last: dict[str, tuple[object, ...]] = {}
    try:
        while True:
            if time.monotonic() >= deadline:
                return left
            if not watched.wait_synced(min(1.0, max(0.0, deadline - time.monotonic()))):
                continue
            since = watched.version()
            facts, _ = watched.facts()
            if facts is not None:
                facts.reader.dry_runs_allowed = scope.dry_run
                left = [o for o in left if not _answered(o, facts, kube, last, said)]
                if not left:
                    return []
            watched.wait(since, max(0.0, min(every, deadline - time.monotonic())))
    finally:
        watched.stop()


def _answered(
    obj: KubeObject, facts: Facts, kube: Kube, last: dict[str, tuple[object, ...]], said: Callable[[Holder], None]
) -> bool:
    """True when `obj` is gone; else its answer from `facts`, handed to `said` when it changed."""
    current = facts.find(obj.type.group, obj.type.resource, obj.namespace, obj.name)
    if current is None or current.uid != obj.uid:
        return gone(kube, obj)
    answer = holder(current, facts)
    if answer.key() != last.get(obj.uid):
        said(answer)
        last[obj.uid] = answer.key()
    return False
