"""A Pod's graceful deletion: no finalizer, yet it stays until the kubelet of its node confirms that its
containers stopped. When that kubelet is gone, nothing ever confirms (captures 17-24 of causes)."""

from __future__ import annotations

from kfin.core.causes.registry import (
    EVERYWHERE,
    OBJECT_NAMESPACE,
    Action,
    Context,
    Finding,
    Link,
    Verdict,
    condition,
    controller_manager,
    explains_deletion,
)
from kfin.model import KubeObject, parse_time

UNREACHABLE = "node.kubernetes.io/unreachable"
FORCE_RISK = (
    "force deletion (--grace-period=0 --force) removes the Pod from the API only: if its node is merely "
    "cut off, its containers may still run, so a StatefulSet may start a second copy and a ReadWriteOnce "
    "volume may still be mounted there"
)


def _graceful(obj: KubeObject) -> bool:
    return obj.type.group == "" and obj.type.resource == "pods" and bool(obj.meta.get("deletionGracePeriodSeconds"))


def kubelet_alive(node: KubeObject) -> bool:
    """Whether a node's kubelet answers: its Ready condition is True (the node lifecycle controller turns it Unknown
    once the kubelet stops reporting). What explain says of a Pod on it, what kfin graph draws it as, and whether
    kfin preflight drains it first all read this one fact."""
    return condition(node, "Ready").get("status") == "True"


def _force(pod: KubeObject) -> str:
    return f"kubectl delete pod -n {pod.namespace} {pod.name} --grace-period=0 --force"


OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


def _taint(node_name: str) -> str:
    """The documented non-graceful node shutdown step: the out-of-service taint."""
    return f"kubectl taint nodes {node_name} {OUT_OF_SERVICE}=nodeshutdown:NoExecute"


GRACEFUL_DELETION = "graceful deletion"  # the cause's name: kfin remove force-deletes what it holds


@explains_deletion(
    GRACEFUL_DELETION,
    _graceful,
    "a Pod until its kubelet confirms that its containers stopped",
    "the kubelet of its node",
    reads=(("", "nodes", EVERYWHERE), ("", "pods", OBJECT_NAMESPACE)),
)
def graceful_deletion(ctx: Context) -> Finding:
    facts, pod = ctx.facts, ctx.obj
    full = facts.find("", "pods", pod.namespace, pod.name, full=True) or pod
    node_name = (full.raw.get("spec") or {}).get("nodeName")
    default = "waiting for the kubelet to confirm the Pod stopped"
    if not node_name:
        found = ctx.finding(
            "kfin could not read which node runs it",
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl get pod -n {pod.namespace} {pod.name} -o wide",
            risk=FORCE_RISK,
        )
        found.summary = default
        return found
    nodes = facts.objects("", "nodes", full=True)
    node = next((n for n in nodes or [] if n.name == node_name), None)
    if nodes is not None and node is None:
        alive, liveness = controller_manager(facts)
        found = ctx.finding(
            f"its node {node_name} does not exist: no kubelet will ever confirm; the pod garbage "
            "collector deletes such Pods within a minute"
            + (", but kube-controller-manager is not running" if alive is False else ""),
            # the pod garbage collector's job, never ORPHANED; stalled while kube-controller-manager is down
            Verdict.STALLED if alive is False else Verdict.WAITING,
            fix="nothing runs it any more: force-delete it (safe, its node is gone)",
            risk=FORCE_RISK,
            evidence=[liveness],
            alive=alive,
            controller="kube-controller-manager (pod garbage collector)",
        )
        found.summary = f"its node {node_name} is gone; the pod garbage collector should delete it"
        found.detail = {"node": node_name, "nodeMissing": True, "nodeLostSeconds": None}
        found.links.append(
            Link(
                "kubelet",
                f"node {node_name} does not exist",
                actor=f"node {node_name} (gone)",
                step=(Action(_force(pod), note="its node is gone: nothing runs it"),),
            )
        )
        return found
    if node is None:
        found = ctx.finding(
            f"waiting for the kubelet of node {node_name} (kfin could not read the node)",
            Verdict.UNKNOWN,
            fix=f"check the node: kubectl get node {node_name}",
            risk=FORCE_RISK,
        )
        found.summary = default
        return found
    ready = condition(node, "Ready")
    if not kubelet_alive(node):
        since = ready.get("lastTransitionTime") or "an unknown time"
        marked = any(
            isinstance(t, dict) and t.get("key") == OUT_OF_SERVICE and t.get("effect") == "NoExecute"
            for t in (node.raw.get("spec") or {}).get("taints") or []
        )
        found = ctx.finding(
            f"its node {node_name} is not Ready ({ready.get('status', 'no status')}: "
            f"{ready.get('message') or ready.get('reason') or 'never reported'}) since {since}: "
            "its kubelet does not answer, so nobody confirms that the containers stopped"
            + ("; the node is marked out of service, so the pod garbage collector deletes the Pod" if marked else ""),
            Verdict.WAITING,
            fix=f"if the node is shut down for good, mark it out of service ({_taint(node_name)}): Kubernetes then "
            "deletes its Pods and detaches their volumes itself, the safe path for StatefulSets; or delete the "
            "Node; if it may come back, wait for it. Force-deleting the Pod is the last resort",
            risk=FORCE_RISK,
            controller=f"the kubelet of node {node_name}",
        )
        found.summary = f"waiting for the kubelet of node {node_name}, which is not Ready"
        changed = parse_time(ready.get("lastTransitionTime") or node.meta.get("creationTimestamp"))
        found.detail = {
            "node": node_name,
            "nodeMissing": False,
            "nodeLostSeconds": None if changed is None else (facts.inventory.observed_at - changed).total_seconds(),
        }
        found.links.append(
            Link(
                "kubelet",
                f"node {node_name} is not Ready since {since}",
                target=node,
                step=(
                    Action(
                        _taint(node_name),
                        when="once it is shut down",
                        note="Kubernetes then deletes its Pods and detaches their volumes",
                    ),
                ),
                fallback=Action(_force(pod), when=f"only if {pod.ref} lingers after that"),
            )
        )
        return found
    found = ctx.finding(
        f"its node {node_name} is Ready: the kubelet is alive but has not stopped the Pod yet",
        Verdict.WAITING,
        fix=f"look at the Pod's events and containers: kubectl describe pod -n {pod.namespace} {pod.name}",
        risk=FORCE_RISK,
        controller=f"the kubelet of node {node_name}",
    )
    found.summary = default
    # a live kubelet is the controller that should act ("kubelet" links are to a node that is lost: drawn as down)
    found.links.append(
        Link("controller", f"the kubelet of node {node_name} should stop it", actor=f"kubelet of {node_name}")
    )
    return found
