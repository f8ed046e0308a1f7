"""Finalizers of Kubernetes itself and of cloud controllers (kfin/core/explain/causes/builtin.py), on plain values."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from tests.values import custom_type, facts, lease, obj

DELETING = timedelta(hours=1)
LB = "service.kubernetes.io/load-balancer-cleanup"


def service():
    return obj("svc", "frontend", "shop", finalizers=(LB,), deleting_for=DELETING)


def test_a_load_balancer_waits_for_a_running_cloud_controller_manager():
    svc = service()
    [finding] = explain_object(svc, facts(svc, lease("cloud-controller-manager"))).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True
    assert "billed" in finding.risk
    # issue 44: what it guards outside the cluster, as a catalog entry says it (explain's Guards, JSON)
    assert finding.to_dict()["infrastructure"] == "the Service's cloud load balancer and its public address"


def test_a_load_balancer_whose_cloud_controller_manager_stopped_is_stalled_never_orphaned():
    """The control plane's finalizer: a stopped cloud-controller-manager acts again once it runs (issue 23), but
    only once someone brings it back: STALLED, not WAITING (issue 40)."""
    svc = service()
    stale = lease("cloud-controller-manager", renewed_ago=timedelta(hours=3))
    [finding] = explain_object(svc, facts(svc, stale)).findings
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is False
    assert finding.infrastructure == "the Service's cloud load balancer and its public address"
    assert finding.fix.startswith("bring the cloud controller manager back")
    assert finding.remove_command == f"kfin remove services {svc.name} -n shop --finalizer {LB} --force --confirm"


def test_a_crd_is_held_by_the_custom_resources_that_remain():
    widgets = custom_type()
    crd = obj("crd.apiextensions.k8s.io", "widgets.example.com", finalizers=("customresourcecleanup.apiextensions.k8s.io",),
              deleting_for=DELETING, spec={"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}})
    left = obj(widgets, "w1", "shop", finalizers=("example.com/cleanup",), deleting_for=DELETING)
    [finding] = explain_object(crd, facts(crd, left, extra_types=(widgets,))).findings
    assert finding.verdict == Verdict.HOLDING and finding.condition == "1 custom resource of widgets.example.com remains"
    assert [link.target.name for link in finding.links] == ["w1"]


def test_a_name_that_is_not_domain_qualified_is_unknown():
    cm = obj("cm", "x", "shop", finalizers=("cleanup",), deleting_for=DELETING)
    [finding] = explain_object(cm, facts(cm)).findings
    assert finding.family == "unknown" and finding.verdict == Verdict.UNKNOWN
