"""ServiceCIDRs (kfin/core/explain/causes/networking.py): held while an address of the range is allocated, and
not covered by another ServiceCIDR, as pkg/controller/servicecidrs decides (canDeleteCIDR)."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from tests.values import facts, lease, obj

FINALIZER = "networking.k8s.io/service-cidr-finalizer"


def cidr(name: str, *ranges: str, deleting: bool = True):
    return obj("servicecidrs.networking.k8s.io", name, finalizers=(FINALIZER,),
               deleting_for=timedelta(minutes=5) if deleting else None, spec={"cidrs": list(ranges)})


def address(ip: str, service: str = "web", namespace: str = "shop"):
    return obj("ipaddresses.networking.k8s.io", ip,
               spec={"parentRef": {"group": "", "resource": "services", "namespace": namespace, "name": service}})


def test_a_range_with_an_allocated_address_is_held_by_the_service_that_owns_it():
    extra, web = cidr("extra", "10.250.0.0/24"), obj("svc", "web", "shop")
    known = facts(extra, address("10.250.0.10"), address("10.96.0.1", "kubernetes", "default"), web, lease())
    [finding] = explain_object(extra, known).findings
    assert finding.verdict == Verdict.HOLDING
    assert finding.condition.startswith("1 address of its ranges still allocated (10.250.0.10 to services shop/web)")
    [link] = finding.links
    assert link.target is web and link.step[0].command == "kubectl delete services -n shop web"


def test_an_address_another_servicecidr_covers_does_not_hold_it():
    extra, wider = cidr("extra", "10.250.0.0/24"), cidr("wider", "10.250.0.0/16", deleting=False)
    [finding] = explain_object(extra, facts(extra, wider, address("10.250.0.10"), lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True


def test_ipv6_ranges_are_matched_too():
    v6 = cidr("v6", "fd00:10:96::/112")
    [finding] = explain_object(v6, facts(v6, address("fd00:10:96::a"), lease())).findings
    assert finding.verdict == Verdict.HOLDING


def test_without_the_addresses_it_is_unknown_never_orphaned():
    extra = cidr("extra", "10.250.0.0/24")
    [finding] = explain_object(extra, facts(extra, lease(), unlisted=("ipaddresses",))).findings
    assert finding.verdict == Verdict.UNKNOWN
