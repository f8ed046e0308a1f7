"""pvc-protection, pv-protection and the CSI volume finalizers, on plain values."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from kfin.model import format_time
from tests.values import NOW, facts, lease, obj, pod

PVC = "kubernetes.io/pvc-protection"
PV = "kubernetes.io/pv-protection"


def claim(name: str = "data", namespace: str = "shop", volume: str = "pv-1"):
    return obj("pvc", name, namespace, finalizers=(PVC,), deleting_for=timedelta(hours=1),
               spec={"volumeName": volume}, status={"phase": "Bound"})


def volume(name: str = "pv-1", policy: str = "Delete", claim_name: str = "data"):
    return obj("pv", name, finalizers=(PV,), spec={"persistentVolumeReclaimPolicy": policy,
                                                   "claimRef": {"name": claim_name, "namespace": "shop"}},
               status={"phase": "Bound"})


def test_a_claim_mounted_by_a_scheduled_pod_is_held_whatever_the_pods_phase():
    pvc = claim()
    user = pod("db-0", "shop", claims=("data",), phase="Succeeded")  # finished, still scheduled: still a user
    [finding] = explain_object(pvc, facts(pvc, user, volume(), lease())).findings
    assert finding.verdict == Verdict.HOLDING
    assert [link.target.name for link in finding.links] == ["db-0"]
    assert "Delete" in finding.risk  # forcing it deletes the disk with the claim


def test_a_pod_that_was_never_scheduled_does_not_hold_the_claim():
    pvc = claim()
    pending = pod("db-0", "shop", claims=("data",), node_name=None, phase="Pending")
    [finding] = explain_object(pvc, facts(pvc, pending, volume(), lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True


def test_without_the_pods_the_claim_is_unknown_never_orphaned():
    pvc = claim()
    [finding] = explain_object(pvc, facts(pvc, volume(), lease(), unlisted=("pods",))).findings
    assert finding.verdict == Verdict.UNKNOWN


def test_a_volume_still_bound_to_its_claim_is_held_by_it():
    pv, pvc = volume(), claim()
    [finding] = explain_object(pv, facts(pv, pvc, lease())).findings
    assert finding.verdict == Verdict.HOLDING
    assert any(link.target is not None and link.target.name == "data" for link in finding.links)


def attachment(node_name: str = "node-1", **kwargs: object):
    return obj("volumeattachments.storage.k8s.io", "csi-123", finalizers=("external-attacher/ebs-csi-aws-com",),
               deleting_for=timedelta(minutes=30),
               spec={"attacher": "ebs.csi.aws.com", "nodeName": node_name,
                     "source": {"persistentVolumeName": "pv-1"}}, **kwargs)


def test_an_attachment_whose_attacher_runs_waits_for_it_and_names_its_gone_node():
    from kfin.model import MANAGERS

    va = attachment("gone-node", **{MANAGERS: {"external-attacher/ebs-csi-aws-com": "csi-attacher"}})
    attacher = obj("deploy.apps", "ebs-csi-controller", "kube-system", labels={"app.kubernetes.io/name": "csi-attacher"},
                   spec={"replicas": 1, "template": {"spec": {"serviceAccountName": "ebs-csi"}}},
                   status={"readyReplicas": 1})
    [finding] = explain_object(va, facts(va, attacher, lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True
    assert "its node gone-node is gone" in finding.condition
    assert "its node gone-node does not exist: the volume can no longer be unmounted there" in finding.evidence


def test_an_attachment_without_a_found_attacher_is_unknown_never_orphaned():
    va = attachment()
    [finding] = explain_object(va, facts(va, lease())).findings
    assert finding.verdict == Verdict.UNKNOWN
    assert "CSIDriver ebs.csi.aws.com is not registered" in finding.evidence


def unused(status: str, reason: str, since: timedelta = timedelta(hours=2)):
    """The Unused condition the pvc-protection controller writes (PersistentVolumeClaimUnusedSinceTime)."""
    return {"type": "Unused", "status": status, "reason": reason,
            "lastTransitionTime": format_time(NOW - since)}


def claim_with(condition: dict):
    pvc = claim()
    pvc.raw["status"]["conditions"] = [condition]
    return pvc


def test_the_unused_condition_agreeing_is_evidence():
    pvc = claim_with(unused("False", "PodUsingPVC"))
    user = pod("db-0", "shop", claims=("data",))
    [finding] = explain_object(pvc, facts(pvc, user, volume(), lease())).findings
    assert finding.verdict == Verdict.HOLDING
    [said] = [line for line in finding.evidence if "Unused" in line]
    assert "Unused=False (PodUsingPVC)" in said and "set before the deletion" in said and "agrees" in said


def test_a_scheduled_pod_the_unused_condition_leaves_out_still_holds_the_claim_and_kfin_says_they_disagree():
    """A finished Pod (or a Terminating one whose containers stopped) is not a user for the condition: the
    finalizer still counts it (podUsesPVC has no phase test for a persistentVolumeClaim volume)."""
    pvc = claim_with(unused("True", "NoPodsUsingPVC"))
    done = pod("db-0", "shop", claims=("data",), phase="Succeeded")
    [finding] = explain_object(pvc, facts(pvc, done, volume(), lease())).findings
    assert finding.verdict == Verdict.HOLDING and [link.target.name for link in finding.links] == ["db-0"]
    [said] = [line for line in finding.evidence if "Unused" in line]
    assert "no Pod uses the claim" in said and "disagree" in said and "shop/db-0 (Succeeded)" in said


def test_an_unused_false_condition_without_a_scheduled_pod_is_a_disagreement_said_not_settled():
    pvc = claim_with(unused("False", "PodUsingPVC"))
    [finding] = explain_object(pvc, facts(pvc, volume(), lease())).findings
    assert finding.verdict == Verdict.WAITING
    assert "Unused condition says a Pod used it" in finding.condition and "disagrees" in (finding.summary or "")
    assert any("disagree" in line and "gone since" in line for line in finding.evidence)


def test_a_pod_not_yet_scheduled_explains_an_unused_false_condition():
    pvc = claim_with(unused("False", "PodUsingPVC"))
    pending = pod("db-0", "shop", claims=("data",), node_name=None, phase="Pending")
    [finding] = explain_object(pvc, facts(pvc, pending, volume(), lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.condition == "no scheduled Pod uses the claim any more"
    assert any("not yet scheduled (shop/db-0) count for the condition" in line for line in finding.evidence)
