"""ResourceClaims (kfin/core/explain/causes/dra.py): held while reserved for a Pod (status.reservedFor); once no
Pod reserves it, kube-controller-manager's resourceclaim controller deallocates it and removes the finalizer."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from tests.values import facts, lease, obj, pod

FINALIZER = "resource.kubernetes.io/delete-protection"
ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1",
                                       "device": "gpu-0"}]}}


def claim(*reserved):
    return obj("resourceclaims.resource.k8s.io", "gpu", "ml", finalizers=(FINALIZER,),
               deleting_for=timedelta(minutes=10),
               status={"allocation": ALLOCATION,
                       "reservedFor": [{"resource": "pods", "name": p.name, "uid": p.uid} for p in reserved]})


def test_a_claim_reserved_for_a_running_pod_is_held_by_it():
    trainer = pod("trainer", "ml")
    rc = claim(trainer)
    [finding] = explain_object(rc, facts(rc, trainer, lease())).findings
    assert finding.verdict == Verdict.HOLDING and "Pod ml/trainer" in finding.condition
    assert [link.target.name for link in finding.links] == ["trainer"]
    assert "gpu.example.com/node-1/gpu-0" in finding.risk


def test_a_claim_reserved_only_for_pods_that_are_gone_waits_for_the_controller():
    gone = pod("trainer", "ml")
    rc = claim(gone)
    [finding] = explain_object(rc, facts(rc, lease())).findings
    assert finding.verdict == Verdict.WAITING and "gone" in finding.condition


def test_an_unreserved_claim_waits_for_the_controller_to_deallocate_it():
    rc = claim()
    [finding] = explain_object(rc, facts(rc, lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True


def test_a_claim_whose_pods_cannot_be_read_counts_its_one_consumer():
    trainer = pod("trainer", "ml")
    rc = claim(trainer)
    [finding] = explain_object(rc, facts(rc, trainer, lease(), unlisted=("pods",))).findings
    assert finding.verdict == Verdict.UNKNOWN
    assert finding.condition == "reserved for 1 consumer, whose Pods kfin could not read", finding.condition
