"""kfin preflight: what a deletion would leave stuck, predicted from the cluster as it is, and the order of
deletions that avoids it. Nothing is written: the same facts, causes and catalog as `explain` answer, for
every object the deletion would delete.

What a deletion deletes: a namespace its content; a CRD its custom resources; a Node (the pod garbage
collector) its Pods; any other object its dependents (ownerReferences; foreground deletion waits for those
with blockOwnerDeletion). For each of them with finalizers, kfin asks who would remove each finalizer, and
whether that controller survives the deletion: it lives in the namespace being deleted, it is not running
now, or none can be found. Namespace-wide gates (an unavailable APIService, a CRD whose conversion webhook
cannot be called) and gates in front of every finalizer (admission webhooks and policies failing closed) are
predicted too; and a Node's drain that a PodDisruptionBudget allowing no disruption would stop.

A Node whose kubelet is alive (Ready) is cordoned and drained before its object is deleted: deleting the object
drains nothing. The pod garbage collector then deletes its Pods from the API (no eviction, no
PodDisruptionBudget asked) while the kubelet may still run their containers: the plan drains it first, naming the
budgets that cover its Pods, and the prediction warns of it. A lost node's (NotReady) object is deleted as before.
"""

from __future__ import annotations

from datetime import datetime

from msgspec import Struct, field

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.resources import KindLookup
from kfin.core.explain.causes.conversion import conversion_step, failing_conversions
from kfin.core.explain.causes.dryrun import content_deletions, dependents_deletions, not_sent, orphaning, own_deletion
from kfin.core.explain.causes.ecosystem import budget_selects
from kfin.core.explain.causes.gc import release_gates
from kfin.core.explain.causes.namespace import deletion_gates, rejected_deletes, unavailable_apiservices
from kfin.core.explain.causes.pods import kubelet_alive
from kfin.core.explain.causes.registry import (
    Action,
    Context,
    control_plane_owned,
    family,
)
from kfin.core.explain.causes.unreadable import list_failure_causes
from kfin.core.explain.survival import Stuck, delete_step, finalizer_controllers, predict_object, reference, wait_step
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.core.read.subject import facts_on_demand
from kfin.errors import NotFoundError, UsageError
from kfin.model import CRDS, GARBAGE_COLLECTOR, JSON, NAMESPACES, KubeObject

NODES = ("", "nodes")
MIRROR_POD = "kubernetes.io/config.mirror"  # a static Pod's mirror: the kubelet's own, which a drain leaves


class PreflightStep(Struct):
    """One step of a preflight plan: its actions (the first exact, then alternatives) and why."""

    actions: tuple[Action, ...]  # an exact command (or an instruction), then its alternatives, each saying when
    why: str

    def to_dict(self) -> JSON:
        return {**self.actions[0].to_dict(), "more": [a.to_dict() for a in self.actions[1:]], "why": self.why}


class Preflight(Struct):
    """What deleting an object would leave stuck, and the plan that avoids it."""

    target: KubeObject
    deleted: list[KubeObject]
    stuck: list[Stuck] = field(default_factory=list)
    plan: list[PreflightStep] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # what kfin could not read to predict
    # objects the deletion leaves in place whose finalizer only what it deletes removes: stuck once deleted
    orphaned: list[Stuck] = field(default_factory=list)
    cascade: str = "background"  # the DELETE's propagation policy (kubectl's --cascade)
    drain: list[PreflightStep] = field(default_factory=list)  # what goes before a live node's DELETE: cordon, drain
    warnings: list[str] = field(default_factory=list)  # what the DELETE does besides leaving things stuck
    observed_at: datetime | None = None  # when what it predicts from was read (a snapshot's time, not now)

    @property
    def clean(self) -> bool:
        return not self.stuck and not self.orphaned

    def to_dict(self) -> JSON:
        return {
            "apiVersion": "kfin.dev/v1",
            "kind": "Preflight",
            "target": reference(self.target),
            "clean": self.clean,
            "terminating": self.target.terminating,  # already being deleted: the plan follows it, never deletes again
            "wouldDelete": [reference(o) for o in self.deleted],
            "wouldBeStuck": [s.to_dict() for s in self.stuck],
            "leftWithoutController": [s.to_dict() for s in self.orphaned],
            "plan": [s.to_dict() for s in self.plan],
            "warnings": self.warnings,
            "couldNotRead": self.unknown,
        }


def target_of(scope: Scope, kind: str, name: str) -> tuple[KubeObject, Facts]:
    """The object `kfin preflight KIND NAME` asks about (kfin.core.predict.teardown.preflight_of answers), and the
    facts."""
    facts = facts_on_demand(scope)
    rtype = KindLookup(facts.inventory.resources + builtin_resources()).find(kind)
    namespace = (scope.namespace or facts.inventory.namespace or "default") if rtype.namespaced else ""
    target = facts.find(rtype.group, rtype.resource, namespace, name, full=True) or facts.find(
        rtype.group, rtype.resource, namespace, name
    )
    if target is None:
        where = f' in namespace "{namespace}"' if namespace else ""
        raise NotFoundError(f'{rtype.qualified} "{name}" not found{where}')
    return target, facts


def foresee(facts: Facts, target: KubeObject, cascade: str = "background") -> Preflight:
    """What deleting `target` with propagation policy `cascade` would leave stuck, from `facts` as they are (kfin
    guard's answer from its watch cache: facts whose dry runs are not allowed send none). With orphan, what it owns
    stays (a namespace still deletes its content, a CRD its custom resources, a Node's Pods still go): released by
    the garbage collector first."""
    rtype = target.type
    deleted, unknown = _deleted_with(facts, target)
    released: list[KubeObject] = []
    if cascade == "orphan" and (rtype.group, rtype.resource) not in (NAMESPACES, CRDS, NODES):
        deleted, released = [], [o for o in deleted if target.uid in o.owner_uids()]
    result = Preflight(target, deleted, unknown=unknown, cascade=cascade, observed_at=facts.inventory.observed_at)
    gone_namespace = target.name if (rtype.group, rtype.resource) == NAMESPACES else None
    for obj in [target, *deleted]:
        result.stuck += predict_object(facts, obj, gone_namespace, target)
    collected = [] if gone_namespace or (rtype.group, rtype.resource) in (CRDS, NODES) else deleted
    if gone_namespace:
        _namespace_gates(facts, target, result)
    elif collected:
        _dependent_gates(facts, target, collected, result)
    _asked(facts, target, deleted if gone_namespace else [], result, collected)
    if released:
        _release_gates(facts, target, released, result)
    if gone_namespace or target.type.group == "apps":
        _left_without_controller(facts, result, gone_namespace)
    if (rtype.group, rtype.resource) == NODES and not target.terminating and kubelet_alive(target):
        _drain_first(facts, target, result)
    result.plan = safe_order(result)
    return result


def _drain_first(facts: Facts, node: KubeObject, result: Preflight) -> None:
    """A live node (its kubelet answers: kfin.core.explain.causes.pods.kubelet_alive) is cordoned and drained before its
    object goes: `kubectl drain` evicts its Pods, each as its PodDisruptionBudget allows (named here from their
    selectors), and leaves DaemonSet Pods and static Pods' mirrors. Deleting the object drains nothing: the pod
    garbage collector deletes its Pods from the API without eviction while their containers may still run."""
    active = [
        p
        for p in result.deleted
        if not p.terminating and (p.raw.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    evicted = [
        p
        for p in active
        if MIRROR_POD not in (p.meta.get("annotations") or {})
        and not any(ref.get("kind") == "DaemonSet" and ref.get("controller") for ref in p.owner_references)
    ]
    budgets = facts.objects("policy", "poddisruptionbudgets", None, full=True) if evicted else []
    if budgets is None:
        result.unknown.append("PodDisruptionBudgets (which of them the drain must respect)")
    covered: dict[str, list[str]] = {}
    for pod in evicted:
        labels = pod.meta.get("labels") or {}
        for budget in budgets or []:
            if budget.namespace == pod.namespace and budget_selects(budget, labels):
                covered.setdefault(f"PodDisruptionBudget {budget.namespace}/{budget.name}", []).append(pod.name)
    why = f"evicts {_pods(evicted)} gracefully, so that they start elsewhere" if evicted else "evicts what runs on it"
    if covered:
        why += ", each only as its budget allows (the drain waits meanwhile): " + "; ".join(
            f"{budget} covers {', '.join(pods)}" for budget, pods in covered.items()
        )
    notes = []
    unmanaged = [p for p in evicted if not any(ref.get("controller") for ref in p.owner_references)]
    if unmanaged:
        notes.append(
            f"it refuses {_pods(unmanaged)}, which no controller manages (evicted, gone for good): add --force "
            "once that is fine"
        )
    local = [p for p in evicted if any("emptyDir" in v for v in (p.raw.get("spec") or {}).get("volumes") or [])]
    if local:
        notes.append(
            f"{_pods(local)} keep data in an emptyDir, lost with them: add --delete-emptydir-data once that is fine"
        )
    drain = Action(f"kubectl drain {node.name} --ignore-daemonsets", note="; ".join(notes) or None)
    result.drain = [
        PreflightStep((Action(f"kubectl cordon {node.name}"),), "its kubelet is alive: no new Pod is scheduled on it"),
        PreflightStep((drain,), why + "; DaemonSet Pods stay"),
    ]
    if active:
        result.warnings.append(
            f"node {node.name} is Ready (its kubelet is alive) and runs {_pods(active)}: deleting its Node object "
            "drains nothing; the pod garbage collector deletes those Pods from the API without eviction (no "
            "PodDisruptionBudget is asked) while their containers may still run. Cordon and drain it first"
        )


def _pods(pods: list[KubeObject]) -> str:
    """`Pod shop/web-0` or `3 Pods: shop/web-0, shop/web-1, shop/db-0` (the first few named)."""
    shown = ", ".join(f"{p.namespace}/{p.name}" for p in pods[:5]) + (", …" if len(pods) > 5 else "")
    return f"Pod {shown}" if len(pods) == 1 else f"{len(pods)} Pods: {shown}"


def _deleted_with(facts: Facts, target: KubeObject) -> tuple[list[KubeObject], list[str]]:
    key = (target.type.group, target.type.resource)
    if key == NAMESPACES:
        content = facts.everything(target.name)
        if content is None:
            raise UsageError(f"the snapshot does not cover namespace {target.name}")
        failed = [f.target for f in facts.inventory.failures if f.what == "list"]
        inside = [o for o in content if o.namespace == target.name and o.type.namespaced]
        # in the namespace controller's order: its Pods first, nothing else while one remains (since 1.34)
        return sorted(inside, key=lambda o: (o.type.group, o.type.resource) != ("", "pods")), failed
    if key == CRDS:
        spec = target.raw.get("spec") or {}
        group, plural = (
            spec.get("group") or target.name.partition(".")[2],
            (spec.get("names") or {}).get("plural") or target.name.partition(".")[0],
        )
        found = facts.objects(group, plural)
        return (found or [], [] if found is not None else [f"{plural}.{group}"])
    if key == NODES:
        pods = facts.objects("", "pods", None, full=True)
        return (
            [p for p in pods or [] if (p.raw.get("spec") or {}).get("nodeName") == target.name],
            [] if pods is not None else ["pods"],
        )
    # dependents by ownerReferences, all the way down (the garbage collector's cascade): a namespaced owner's are
    # in its namespace, a cluster-scoped owner's anywhere. Read first: a Deployment's ReplicaSet and Pods are not
    # in the facts until something asks for them.
    if facts.everything(target.namespace or None) is None:
        return [], [f"what {target.ref} owns (the snapshot does not cover it)"]
    where = f" in namespace {target.namespace}"  # a namespaced owner's: its namespace's lists, and cluster-wide ones
    failed = [
        f.target
        for f in facts.inventory.failures
        if f.what == "list" and (not target.namespace or f.target.endswith(where) or " in namespace " not in f.target)
    ]
    out, queue, seen = [], [target], {target.uid}
    while queue:
        for dependent in facts.dependents(queue.pop().uid):
            if dependent.uid not in seen:
                seen.add(dependent.uid)
                out.append(dependent)
                queue.append(dependent)
    return out, failed


def _left_without_controller(facts: Facts, result: Preflight, gone_namespace: str | None) -> None:
    """Objects the deletion leaves in place (elsewhere in the cluster) whose finalizer only a controller it
    deletes removes: an operator uninstalled before its custom resources. Already Terminating, they would be
    stuck; otherwise they would be once deleted. Asked once per resource type and finalizer."""
    dying = {o.uid for o in [result.target, *result.deleted]}

    def dies(w: KubeObject) -> bool:
        return w.uid in dying or bool(gone_namespace and w.namespace == gone_namespace)

    everything = facts.everything(None)
    if everything is None:
        result.unknown.append("the rest of the cluster (objects whose controller the deletion removes)")
        return
    answers: dict[tuple[str, str, str], KubeObject | None] = {}
    for obj in everything:
        if not obj.finalizers or dies(obj) or obj.uid in dying:  # most objects have none: asked first
            continue
        for finalizer in obj.finalizers:
            if control_plane_owned(finalizer):
                continue
            key = (obj.type.group, obj.type.resource, finalizer)
            if key not in answers:
                found = finalizer_controllers(
                    Context(obj, finalizer, "metadata.finalizers", facts, family(finalizer, facts.catalog))
                )
                answers[key] = _workload(found[0][0], result) if found and all(dies(w) for w, _ in found) else None
            controller = answers[key]
            if controller is None:
                continue
            with_target = "" if controller.uid == result.target.uid else f" with {result.target.ref}"
            reason = (
                f"its only controller {controller.type.kind} {controller.namespace}/{controller.name} is deleted"
                f"{with_target}: nothing removes {finalizer} after"
                + ("" if obj.terminating else f", so {obj.type.kind} {obj.name} sticks when it is deleted")
            )
            entry = Stuck(obj, finalizer, reason=reason, verdict="ORPHANED", actions=delete_step(obj), first=True)
            (result.stuck if obj.terminating else result.orphaned).append(entry)


def _workload(obj: KubeObject, result: Preflight) -> KubeObject:
    """What a deleted controller is known by: a Pod of a ReplicaSet of a Deployment deleted with it is named by
    that Deployment (its owners, climbed while they are deleted too)."""
    deleted = {o.uid: o for o in [result.target, *result.deleted]}
    for _ in range(len(deleted)):
        owner = next((deleted[uid] for uid in obj.owner_uids() if uid in deleted), None)
        if owner is None:
            break
        obj = owner
    return obj


def _namespace_gates(facts: Facts, namespace: KubeObject, result: Preflight) -> None:
    """What keeps the namespace controller from finishing (an unavailable APIService: it deletes all it can
    discover, but never removes its finalizer while discovery fails) or from deleting what is here (a webhook
    failing closed on DELETE of it; a CRD whose conversion webhook cannot be called, for a type with objects here)."""
    ctx = Context(namespace, "kubernetes", "spec.finalizers", facts, family("kubernetes", facts.catalog))
    for service, why in unavailable_apiservices(ctx):
        result.stuck.append(
            Stuck(
                namespace,
                "kubernetes",
                reason=f"{why}: the namespace controller would delete all it can discover, but never finish",
                verdict="HOLDING",
                actions=(
                    Action(f"kubectl delete apiservice {service.name}", when="if its server was uninstalled"),
                    Action(None, when="else", note="repair its backend"),
                ),
            )
        )
    content = [o for o in facts.everything(namespace.name) or [] if o.namespace == namespace.name]
    for rejection in rejected_deletes(facts, namespace, content, ""):
        result.stuck.append(
            Stuck(
                namespace,
                "kubernetes",
                reason=f"{rejection.why}: the namespace controller cannot delete it",
                verdict="BLOCKED",
                actions=rejection.step,
                certain=rejection.certain,
            )
        )
    unlistable = list_failure_causes(facts)
    for crd, why in failing_conversions(facts):
        if any(t == crd.name or t.startswith(crd.name + " ") for t in unlistable):
            result.stuck.append(
                Stuck(
                    namespace,
                    "kubernetes",
                    reason=f"{why}: the namespace controller cannot delete its resources",
                    verdict="HOLDING",
                    actions=conversion_step(crd),
                )
            )


def _dependent_gates(facts: Facts, target: KubeObject, dependents: list[KubeObject], result: Preflight) -> None:
    """What rejects the garbage collector's DELETE of what the target owns (a webhook failing closed on DELETE of
    their type, a policy that denies it as the garbage collector's ServiceAccount): deleted in the foreground, the
    target stays Terminating until it can; otherwise they stay behind."""
    for rejection in deletion_gates(facts, dependents, GARBAGE_COLLECTOR, "the garbage collector").values():
        result.stuck.append(
            Stuck(
                target,
                "foregroundDeletion",
                reason=_collector_held(rejection.why, target),
                verdict="BLOCKED",
                actions=rejection.step,
                certain=rejection.certain,
            )
        )


def _release_gates(facts: Facts, target: KubeObject, dependents: list[KubeObject], result: Preflight) -> None:
    """Deleted with orphaning, the target keeps `orphan` until the garbage collector has released what it owns (a
    patch of each that removes its ownerReference, an UPDATE to admission): the server's answer to that patch as the
    garbage collector, by dry runs (kfin.core.explain.causes.dryrun.orphaning); where none was sent, the webhooks whose
    configuration matches it (kfin.core.explain.causes.gc.release_gates), not checked."""
    held = (
        f"the garbage collector cannot release what {target.ref} owns (deleted with orphaning, it keeps orphan until "
        "it can)"
    )
    sent = orphaning(facts, target, dependents)
    refused = {r.why: r for _, _, r in sent if r is not None and r.as_actor}  # a gate once, however many it rejects
    for r in refused.values():
        why = f"{r.why}: {held} ({r.evidence})"
        result.stuck.append(Stuck(target, "orphan", reason=why, verdict="BLOCKED", actions=r.step))
    if sent:
        return
    unchecked = not_sent(facts)
    for gate in release_gates(facts, dependents):  # what explain says of them too: UNKNOWN, a possible gate
        why = f"{gate.why}: {held}, not checked: {unchecked}"
        result.stuck.append(Stuck(target, "orphan", reason=why, verdict="UNKNOWN", actions=gate.step, certain=False))


def _collector_held(why: str, target: KubeObject) -> str:
    return (
        f"{why}: the garbage collector cannot delete what {target.ref} owns (deleted in the foreground, it stays "
        "Terminating until it can; otherwise they stay behind)"
    )


def _asked(
    facts: Facts, target: KubeObject, content: list[KubeObject], result: Preflight, dependents: list[KubeObject]
) -> None:
    """The server's own answer, by dry runs (kfin.core.explain.causes.dryrun): the user's DELETE of the target, then the
    namespace controller's DELETE of a namespace's content (one object of each type), or the garbage collector's of
    what the target owns (a few); a rejection the rules above did not already name is what would stop the
    deletion."""
    answer, refused = own_deletion(facts, target)
    if refused is not None and refused.kind == "forbidden":  # kfin's user may not delete it: whoever will may
        refused = None
    if refused is not None:
        why = f"your DELETE would be rejected: {refused.why} ({refused.evidence})"
        result.stuck.append(Stuck(target, "", reason=why, verdict="BLOCKED", actions=refused.step))
    if answer is None or refused is not None:
        return
    asked = [
        (r, "kubernetes", f"{r.why}: the namespace controller cannot delete it ({r.evidence})")
        for r in content_deletions(facts, target, content)
    ]
    asked += [
        (r, "foregroundDeletion", f"{_collector_held(r.why, target)} ({r.evidence})")
        for r in dependents_deletions(facts, dependents)
    ]
    for refusal, finalizer, why in asked:
        if not refusal.as_actor:
            continue
        # the server's answer replaces what the rules could only suspect of the same object, not what they proved
        same = [s for s in result.stuck if s.obj is target and refusal.target and refusal.target.name in s.reason]
        if any(s.certain for s in same):
            continue
        result.stuck = [s for s in result.stuck if s not in same]
        result.stuck.append(Stuck(target, finalizer, reason=why, verdict="BLOCKED", actions=refusal.step))


def safe_order(result: Preflight) -> list[PreflightStep]:
    """The order that avoids what would be stuck: custom resources first while their controllers run (each
    followed to its end), then what would stop the rest (controllers down, gates, budgets), then the object
    itself, followed to its end (only followed when it is already being deleted)."""
    steps: list[PreflightStep] = []
    done: set[tuple[Action, ...]] = set()
    for stuck in [s for s in result.stuck + result.orphaned if s.first]:
        if stuck.actions in done:
            continue
        steps.append(PreflightStep(stuck.actions, f"first, while its controller still runs ({stuck.reason})"))
        steps.append(
            PreflightStep(wait_step(stuck.obj), f"its controller removes the finalizer before {result.target.ref} goes")
        )
        done.add(stuck.actions)
    for stuck in result.stuck:
        if stuck.actions and stuck.actions not in done:
            done.add(stuck.actions)
            steps.append(PreflightStep(stuck.actions, f"{stuck.obj.ref}: {stuck.reason}"))
    if result.target.terminating:  # deleting it again changes nothing: what is left is to follow it
        why = "it is already being deleted: " + (
            "follow it to its end" if result.clean else "then follow it to its end"
        )
        steps.append(PreflightStep(wait_step(result.target), why))
        return steps
    steps += result.drain
    why = "nothing would be left stuck" if result.clean else "then delete it"
    steps.append(
        PreflightStep(delete_step(result.target, result.cascade), "once it is drained" if result.drain else why)
    )
    steps.append(PreflightStep(wait_step(result.target), "and follow it to its end"))
    return steps
