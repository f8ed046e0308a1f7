"""ResourceClaims of dynamic resource allocation: `resource.kubernetes.io/delete-protection` stays while the
claim is reserved for a Pod (status.reservedFor); once no Pod reserves it, kube-controller-manager's
resourceclaim controller deallocates it and removes the finalizer (pkg/controller/resourceclaim)."""

from __future__ import annotations

from typing import Any

from kfin.core.explain.causes.registry import (
    CONTROLLER_MANAGER_LEASE,
    OBJECT_NAMESPACE,
    Action,
    Context,
    Entry,
    Finding,
    Link,
    Verdict,
    explains,
    waiting_on_controller_manager,
)
from kfin.model import JSON, KubeObject
from kfin.util.text import counted

RESOURCE = "resource.k8s.io"


def _at(node: object, *path: str) -> list[Any] | None:
    """The list at `path` in a status read from the server (any other shape: None)."""
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, list) else None


@explains(
    "resource-claim",
    Entry(
        "resource.kubernetes.io/delete-protection",
        "a ResourceClaim while it is reserved for a Pod or its devices are allocated",
        "kube-controller-manager (resourceclaim controller)",
    ),
    reads=((RESOURCE, "resourceclaims", OBJECT_NAMESPACE), ("", "pods", OBJECT_NAMESPACE), CONTROLLER_MANAGER_LEASE),
)
def resource_claim(ctx: Context) -> Finding:
    facts, obj = ctx.facts, ctx.obj
    claim = facts.find(obj.type.group, obj.type.resource, obj.namespace, obj.name, full=True) or obj
    status = claim.raw.get("status") if isinstance(claim.raw.get("status"), dict) else {}
    results = _at(status, "allocation", "devices", "results")
    devices = [f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results or [] if isinstance(r, dict)]
    risk = (
        "removing it deletes the claim while its devices are allocated"
        + (f" ({', '.join(devices[:3])})" if devices else "")
        + ": the DRA driver may never unprepare them, and a Pod still using them loses track of them"
    )
    reserved = [r for r in _at(status, "reservedFor") or [] if isinstance(r, dict)]
    if not reserved:
        return waiting_on_controller_manager(
            ctx, "no Pod reserves it any more: the controller deallocates its devices and removes it", risk=risk
        )
    pods = facts.objects("", "pods", claim.namespace, full=True)
    if pods is None:
        return ctx.finding(
            f"reserved for {counted(len(reserved), 'consumer')}, whose Pods kfin could not read",
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl get resourceclaim -n {claim.namespace} {claim.name} -o yaml "
            "(status.reservedFor)",
            risk=risk,
        )
    holders: list[tuple[JSON, KubeObject | None]] = []
    gone: list[tuple[JSON, KubeObject | None]] = []
    for ref in reserved:
        pod = next(
            (p for p in pods if p.name == ref.get("name") and (not ref.get("uid") or p.uid == ref.get("uid"))), None
        )
        (holders if pod is not None else gone).append((ref, pod))
    if not holders:
        return waiting_on_controller_manager(
            ctx,
            f"reserved only for Pods that are gone ({', '.join(str(r.get('name')) for r, _ in gone)}): the "
            "controller drops those reservations, then deallocates it",
            risk=risk,
        )
    names = ", ".join(f"Pod {claim.namespace}/{pod.name}" for _, pod in holders if pod is not None)
    return ctx.finding(
        f"reserved for {names}" + (f" (devices {', '.join(devices[:3])})" if devices else ""),
        Verdict.HOLDING,
        fix="delete the Pods it is reserved for (or let them finish); the controller then deallocates the claim "
        "and removes the finalizer",
        risk=risk,
        evidence=[f"status.reservedFor: {r.get('resource')}/{r.get('name')}" for r in reserved],
        summary=f"reserved for {names}",
        links=[
            Link(
                "reserved-for",
                "the claim is reserved for it",
                target=pod,
                step=(Action(f"kubectl delete pod -n {pod.namespace} {pod.name}"),),
            )
            for _, pod in holders
            if pod is not None
        ],
    )
