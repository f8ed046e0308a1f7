"""ServiceCIDRs: kube-controller-manager's service-cidr controller keeps `networking.k8s.io/service-cidr-finalizer`
while an IPAddress in the ranges is allocated and no other ServiceCIDR covers it
(pkg/controller/servicecidrs: canDeleteCIDR)."""

from __future__ import annotations

import ipaddress

from kfin.core.explain.causes.registry import (
    CONTROLLER_MANAGER_LEASE,
    EVERYWHERE,
    Action,
    Context,
    Entry,
    Finding,
    Link,
    Verdict,
    explains,
    waiting_on_controller_manager,
)
from kfin.model import KubeObject

NETWORKING = "networking.k8s.io"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(cidr: KubeObject) -> list[Network]:
    """The ranges of a ServiceCIDR (spec.cidrs); malformed entries are skipped."""
    out = []
    spec = cidr.raw.get("spec")
    cidrs = spec.get("cidrs") if isinstance(spec, dict) else None
    for text in cidrs if isinstance(cidrs, list) else []:
        try:
            out.append(ipaddress.ip_network(str(text), strict=False))
        except ValueError:
            continue
    return out


def _address(obj: KubeObject) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(obj.name)  # an IPAddress is named by its address
    except ValueError:
        return None


def _parent(ctx: Context, address: KubeObject) -> tuple[str, KubeObject | None]:
    """(who holds the address, in words; that object when kfin can read it)."""
    spec = address.raw.get("spec")
    ref = spec.get("parentRef") if isinstance(spec, dict) else None
    ref = ref if isinstance(ref, dict) else {}
    group, resource, namespace, name = (str(ref.get(k) or "") for k in ("group", "resource", "namespace", "name"))
    if not resource or not name:
        return f"IPAddress {address.name} (no parent named)", None
    held_by = f"{resource}{'.' + group if group else ''} {namespace + '/' if namespace else ''}{name}"
    return held_by, ctx.facts.find(group, resource, namespace, name)


@explains(
    "service-cidr",
    Entry(
        "networking.k8s.io/service-cidr-finalizer",
        "a ServiceCIDR while addresses of its ranges are still allocated to Services",
        "kube-controller-manager (service-cidr controller)",
    ),
    reads=((NETWORKING, "ipaddresses", EVERYWHERE), (NETWORKING, "servicecidrs", EVERYWHERE), CONTROLLER_MANAGER_LEASE),
)
def service_cidr(ctx: Context) -> Finding:
    facts, obj = ctx.facts, ctx.obj
    cidr = facts.find(NETWORKING, "servicecidrs", "", obj.name, full=True) or obj
    risk = (
        "removing it deletes the range while Services still hold addresses in it: no range covers their cluster "
        "IPs any more, and a new ServiceCIDR over it may hand the same addresses out again"
    )
    addresses = facts.objects(NETWORKING, "ipaddresses", full=True)
    others = facts.objects(NETWORKING, "servicecidrs", full=True)
    if addresses is None or others is None:
        return ctx.finding(
            "kfin could not list the IPAddresses and ServiceCIDRs that decide it",
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl get ipaddresses (those inside {', '.join(map(str, networks(cidr)))})",
            risk=risk,
        )
    ranges = networks(cidr)
    covered_elsewhere = [n for o in others if o.name != cidr.name and not o.terminating for n in networks(o)]
    held = []
    for address in addresses:
        ip = _address(address)
        if ip is None or not any(ip in n for n in ranges if n.version == ip.version):
            continue
        if any(ip in n for n in covered_elsewhere if n.version == ip.version):
            continue  # another ServiceCIDR keeps the address valid: not this one's to hold
        held.append(address)
    if not held:
        return waiting_on_controller_manager(ctx, "no address of its ranges is allocated any more", risk=risk)
    holders = [(address, *_parent(ctx, address)) for address in held]
    evidence = [f"IPAddress {a.name} is allocated to {who}" for a, who, _ in holders[:10]]
    if len(holders) > 10:
        evidence.append(f"... and {len(holders) - 10} more (kubectl get ipaddresses)")
    for condition in (cidr.raw.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "False":
            evidence.append(f"condition Ready False ({condition.get('reason')}): {condition.get('message')}")
    return ctx.finding(
        f"{len(held)} address{'es' if len(held) != 1 else ''} of its ranges still allocated "
        f"({', '.join(f'{a.name} to {who}' for a, who, _ in holders[:3])}{', ...' if len(holders) > 3 else ''})",
        Verdict.HOLDING,
        fix="delete the Services that hold those addresses (or recreate them with addresses in another ServiceCIDR), "
        "or create a ServiceCIDR that also covers them; the controller then removes the finalizer",
        risk=risk,
        evidence=evidence,
        summary=f"{len(held)} address{'es' if len(held) != 1 else ''} still allocated ({holders[0][1]})",
        links=[
            Link(
                "allocated-address",
                f"holds address {address.name} of its range",
                target=parent or address,
                step=_freeing(address, who, parent),
            )
            for address, who, parent in holders
        ],
    )


def _freeing(address: KubeObject, who: str, parent: KubeObject | None) -> tuple[Action, ...]:
    """What frees an allocated address: its Service deleted (or recreated elsewhere), else the address itself."""
    if parent is not None and parent.namespace:
        return (
            Action(f"kubectl delete {who.split(' ')[0]} -n {parent.namespace} {parent.name}"),
            Action(None, when="instead", note="recreate it with an address in another ServiceCIDR"),
        )
    return (Action(None, note=f"free address {address.name} ({who})"),)
