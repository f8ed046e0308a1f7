"""A Pod's graceful deletion: no finalizer, yet it stays until the kubelet of its node confirms that its
containers stopped. When that kubelet is gone, nothing ever confirms (captures 17-24 of causes)."""

from __future__ import annotations

from kfin.core.explain.causes.registry import (
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
    if not node_name:
        return _node_unknown(
            ctx, "kfin could not read which node runs it", f"kubectl get pod -n {pod.namespace} {pod.name} -o wide"
        )
    nodes = facts.objects("", "nodes", full=True)
    node = next((n for n in nodes or [] if n.name == node_name), None)
    if nodes is not None and node is None:
        return _node_gone(ctx, node_name)
    if node is None:
        return _node_unknown(
            ctx,
            f"waiting for the kubelet of node {node_name} (kfin could not read the node)",
            f"kubectl get node {node_name}",
            what="the node",
        )
    if not kubelet_alive(node):
        return _node_not_ready(ctx, node)
    return _kubelet_stopping(ctx, node_name)


WAITING_FOR_KUBELET = "waiting for the kubelet to confirm the Pod stopped"


def _node_unknown(ctx: Context, condition: str, check: str, what: str = "by hand") -> Finding:
    """kfin could not read the Pod's node (or which node it is): UNKNOWN, with the read to do by hand."""
    return ctx.finding(
        condition,
        Verdict.UNKNOWN,
        fix=f"check {what}: {check}",
        risk=FORCE_RISK,
        summary=WAITING_FOR_KUBELET,
    )


def _node_gone(ctx: Context, node_name: str) -> Finding:
    """Its node does not exist: the pod garbage collector deletes the Pod (stalled while kube-controller-manager is
    down); force-deleting it is safe."""
    alive, liveness = controller_manager(ctx.facts)
    return ctx.finding(
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
        summary=f"its node {node_name} is gone; the pod garbage collector should delete it",
        detail={"node": node_name, "nodeMissing": True, "nodeLostSeconds": None},
        links=[
            Link(
                "kubelet",
                f"node {node_name} does not exist",
                actor=f"node {node_name} (gone)",
                step=(Action(_force(ctx.obj), note="its node is gone: nothing runs it"),),
            )
        ],
    )


def _node_not_ready(ctx: Context, node: KubeObject) -> Finding:
    """Its node is not Ready: its kubelet does not answer, and the out-of-service taint (once it is shut down) is
    the safe way out; force-deleting the Pod the last resort."""
    pod, node_name = ctx.obj, node.name
    ready = condition(node, "Ready")
    since = ready.get("lastTransitionTime") or "an unknown time"
    marked = any(
        isinstance(t, dict) and t.get("key") == OUT_OF_SERVICE and t.get("effect") == "NoExecute"
        for t in (node.raw.get("spec") or {}).get("taints") or []
    )
    changed = parse_time(ready.get("lastTransitionTime") or node.meta.get("creationTimestamp"))
    return ctx.finding(
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
        summary=f"waiting for the kubelet of node {node_name}, which is not Ready",
        detail={
            "node": node_name,
            "nodeMissing": False,
            "nodeLostSeconds": None if changed is None else (ctx.facts.inventory.observed_at - changed).total_seconds(),
        },
        links=[
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
        ],
    )


def _kubelet_stopping(ctx: Context, node_name: str) -> Finding:
    """Its node is Ready: the kubelet is alive and should stop the Pod."""
    pod = ctx.obj
    return ctx.finding(
        f"its node {node_name} is Ready: the kubelet is alive but has not stopped the Pod yet",
        Verdict.WAITING,
        fix=f"look at the Pod's events and containers: kubectl describe pod -n {pod.namespace} {pod.name}",
        risk=FORCE_RISK,
        controller=f"the kubelet of node {node_name}",
        summary=WAITING_FOR_KUBELET,
        # a live kubelet is the controller that should act ("kubelet" links are to a node that is lost: drawn as down)
        links=[Link("controller", f"the kubelet of node {node_name} should stop it", actor=f"kubelet of {node_name}")],
    )
