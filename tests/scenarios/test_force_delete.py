"""A Pod in graceful deletion on a node that stopped answering: kfin remove force-deletes it (a DELETE with
gracePeriodSeconds 0 and the uid as precondition) only once the node has been lost long enough, records it,
and refuses before that unless --force (captures 17-22 of causes)."""

import io
import json
import sys
import time

from kfin.errors import ExitCode
from tests.runner import kfin


def pod_on_silent_node(cluster):
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": cluster.name("node")}})
    if cluster.get(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/default") is None:
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    pod = cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0"}, "spec": {
        "nodeName": node["metadata"]["name"], "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    cluster.delete(pod)  # graceful: only the node's kubelet could confirm, and it never reported
    return node, pod


def test_a_pod_on_a_lost_node_is_force_deleted_once_the_node_is_lost_long_enough(cluster, tmp_path, monkeypatch):
    audit = tmp_path / "audit.jsonl"
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(audit))
    node, pod = pod_on_silent_node(cluster)
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    refused = kfin("remove", "pod", "db-0", *base, "--confirm", "--node-lost-after", "10m")
    assert refused.code == ExitCode.REFUSED, refused
    assert f"its node {node['metadata']['name']} has been lost for" in refused.stderr
    assert cluster.get(pod) is not None
    time.sleep(1.5)
    plan = kfin("remove", "pod", "db-0", *base, "--node-lost-after", "1s")
    assert plan.code == ExitCode.OK and "force-delete" in plan.stdout
    assert f"with gracePeriodSeconds 0 and preconditions.uid {pod['metadata']['uid']}" in plan.stdout
    done = kfin("remove", "pod", "db-0", *base, "--confirm", "--node-lost-after", "1s")
    assert done.code == ExitCode.OK, done
    assert "force-deleted (gracePeriodSeconds 0)" in done.stdout
    assert cluster.get(pod) is None
    [record] = [json.loads(line) for line in audit.read_text().splitlines()]
    assert record["result"] == "force-deleted" and record["removed"] == ["graceful deletion"]


def test_force_overrides_the_wait_and_patterns_never_select_a_deletion(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    _, pod = pod_on_silent_node(cluster)
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    named = kfin("remove", "pod", "db-0", *base, "--finalizer", "*", "--confirm")
    assert named.code == ExitCode.REFUSED and cluster.get(pod) is not None
    forced = kfin("remove", "pod", "db-0", *base, "--confirm", "--force")
    assert forced.code == ExitCode.OK, forced
    assert "forced although its node" in forced.stderr and "may still run" in forced.stderr
    assert cluster.get(pod) is None


def pod_on_node_lost_long_ago(cluster):
    """A Pod in graceful deletion on a node whose kubelet stopped reporting long ago (Ready Unknown since 2020),
    as the node lifecycle controller leaves it: kfin would force-delete it without waiting."""
    node, pod = pod_on_silent_node(cluster)
    long_ago = "2020-01-01T00:00:00Z"
    cluster.set_status(node, {"conditions": [{
        "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": long_ago, "lastTransitionTime": long_ago}]})
    return node, pod


def test_bulk_removal_asks_on_any_input_and_force_deletes_only_with_force(cluster, tmp_path, monkeypatch):
    """Issue 41: `echo no | kfin remove -n NS --all-stuck --confirm` asked nothing (stdin was not a terminal)
    and force-deleted Pods without --force, shown as ACTION `remove` with no FINALIZER; kfin explain says to
    mark the node out of service first, since a node merely cut off may still run the Pod."""
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    node, pod = pod_on_node_lost_long_ago(cluster)
    taint = f"kubectl taint nodes {node['metadata']['name']} node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
    bulk = ("remove", "--all-stuck", "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig))

    def answered(text, *args):
        monkeypatch.setattr(sys, "stdin", io.StringIO(text))  # a pipe, not a terminal
        return kfin(*bulk, *args)

    unforced = answered("yes\n", "--confirm")
    assert unforced.code == ExitCode.REFUSED, unforced
    [row] = [line for line in unforced.stdout.splitlines() if "db-0" in line]
    assert "(graceful deletion)" in row and "refused: " in row and "--force" in row and taint in row
    assert row.index(taint) < row.index("only with --force")  # the safe fix before the last resort
    assert cluster.get(pod) is not None

    plan = answered("", "--force")
    [row] = [line for line in plan.stdout.splitlines() if "db-0" in line]
    assert "(graceful deletion)" in row and "force-delete" in row and "may still run" in row, plan
    for answer in ("no\n", "", "y es\n"):
        declined = answered(answer, "--confirm", "--force")
        assert declined.code == ExitCode.REFUSED and "Nothing was changed." in declined.stderr, declined
        assert "(force-deleting 1 Pod)" in declined.stdout
        assert cluster.get(pod) is not None
    done = answered("yes\n", "--confirm", "--force")
    assert done.code == ExitCode.OK and "done 1, refused 0, failed 0" in done.stderr, done
    assert cluster.get(pod) is None
