"""A Pod in graceful deletion on a node that stopped answering: kfin remove force-deletes it (a DELETE with
gracePeriodSeconds 0 and the uid as precondition) only once the node has been lost long enough, records it,
and refuses before that unless --force (captures 17-22 of causes)."""

import json
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
