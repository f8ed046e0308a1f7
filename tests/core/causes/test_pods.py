"""A Pod's graceful deletion (no finalizer: its kubelet must confirm), on plain values."""

from datetime import timedelta

from kfin.core.explain.causes import Action, Verdict, explain_object
from tests.values import facts, lease, node, pod

DELETING = timedelta(minutes=20)


def test_a_pod_whose_node_is_gone_may_be_force_deleted():
    stuck = pod("web-1", "shop", node_name="gone-node", deleting_for=DELETING, grace_seconds=30)
    [finding] = explain_object(stuck, facts(stuck, lease())).findings
    assert finding.location == "deletion" and finding.verdict == Verdict.WAITING
    assert finding.detail["nodeMissing"] is True
    assert [link.step for link in finding.links] == [
        (Action("kubectl delete pod -n shop web-1 --grace-period=0 --force", note="its node is gone: nothing runs it"),)]


def test_a_pod_on_a_node_that_stopped_reporting_waits_for_its_kubelet_and_says_since_when():
    stuck = pod("web-1", "shop", node_name="node-1", deleting_for=DELETING, grace_seconds=30)
    lost = node("node-1", ready=False, since=timedelta(minutes=10))
    [finding] = explain_object(stuck, facts(stuck, lost, lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.detail["nodeMissing"] is False
    assert finding.detail["nodeLostSeconds"] == 600
    assert [link.target.name for link in finding.links] == ["node-1"]


def test_a_pod_on_a_ready_node_waits_for_the_kubelet():
    stuck = pod("web-1", "shop", node_name="node-1", deleting_for=DELETING, grace_seconds=30)
    [finding] = explain_object(stuck, facts(stuck, node("node-1"), lease())).findings
    assert finding.verdict == Verdict.WAITING and "Ready" in finding.condition


def test_without_the_nodes_the_deletion_is_unknown():
    stuck = pod("web-1", "shop", node_name="node-1", deleting_for=DELETING, grace_seconds=30)
    [finding] = explain_object(stuck, facts(stuck, lease(), unlisted=("nodes",))).findings
    assert finding.verdict == Verdict.UNKNOWN


def test_the_out_of_service_taint_comes_before_force_deletion_for_a_node_that_stopped():
    stuck = pod("db-0", "shop", node_name="node-1", deleting_for=DELETING, grace_seconds=30)
    [finding] = explain_object(stuck, facts(stuck, node("node-1", ready=False), lease())).findings
    [link] = finding.links
    taint = "kubectl taint nodes node-1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
    assert [a.command for a in link.step] == [taint] and link.step[0].when == "once it is shut down"
    # the last resort, after
    assert link.fallback == Action("kubectl delete pod -n shop db-0 --grace-period=0 --force",
                                   when="only if Pod/shop/db-0 lingers after that")
    assert taint in finding.fix
