"""From one finalizer to the root cause: each chain's root cause and plan, and the same answer from
kfin stuck, kfin explain and a snapshot of the same cluster."""

import json

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenario import namespace_behind_an_unavailable_apiservice


def explain(cluster, *args, snapshot=None):
    source = ("--from-snapshot", str(snapshot)) if snapshot else ("--kubeconfig", str(cluster.kubeconfig))
    result = kfin("explain", *args, *source, "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return json.loads(result.stdout)


def stuck_item(cluster, kind, name, snapshot=None):
    source = ("--from-snapshot", str(snapshot)) if snapshot else ("--kubeconfig", str(cluster.kubeconfig))
    result = kfin("stuck", "-A", *source, "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return next(i for i in json.loads(result.stdout)["items"] if i["kind"] == kind and i["name"] == name)


def snapshot(cluster):
    path = cluster.workdir / "snapshot.json"
    result = kfin("snapshot", "-A", "--kubeconfig", str(cluster.kubeconfig), "-f", str(path))
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return path


def same_everywhere(cluster, kind, name, *explain_args):
    """rootCauses of kfin stuck, and chain/plan of kfin explain, live and from a snapshot: equal."""
    live_item, live = stuck_item(cluster, kind, name), explain(cluster, *explain_args)
    snap = snapshot(cluster)
    assert stuck_item(cluster, kind, name, snap)["rootCauses"] == live_item["rootCauses"]
    offline = explain(cluster, *explain_args, snapshot=snap)
    assert offline["chain"]["rootCauses"] == live["chain"]["rootCauses"]
    assert offline["plan"] == live["plan"]
    assert live_item["rootCauses"] == live["chain"]["rootCauses"]
    graph = kfin("graph", *explain_args, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert graph.code in (0, ExitCode.PARTIAL), graph.stderr
    drawn = {e["cause"] for e in json.loads(graph.stdout)["edges"] if e.get("cause")}
    assert drawn == {e["type"] for e in live["chain"]["edges"]}
    return live_item, live


def volume_claim_and_pod(cluster, policy: str, node: str) -> tuple[dict, dict]:
    """A volume bound to claim "data", and Pod db-0 on `node` that mounts the claim."""
    pv = cluster.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": cluster.name("pv")},
                         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                  "persistentVolumeReclaimPolicy": policy, "storageClassName": cluster.name("manual"),
                                  "hostPath": {"path": "/tmp/kfin"},
                                  "claimRef": {"namespace": cluster.namespace, "name": "data"}}})
    cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                             "storageClassName": cluster.name("manual"), "volumeName": pv["metadata"]["name"]}})
    cluster.eventually(lambda: (cluster.get(pv) or {}).get("status", {}).get("phase") == "Bound")
    if cluster.get(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/default") is None:
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    pod = cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0"}, "spec": {
        "nodeName": node, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}})
    return pv, pod


@pytest.mark.controllers
def test_a_volume_held_by_its_claim_held_by_a_scheduled_pod(cluster):
    """PV -> bound claim -> the Pod that mounts it: the root cause is the Pod, the plan deletes it, and the
    volume and then its disk go by themselves (reclaim policy Delete)."""
    pv, _ = volume_claim_and_pod(cluster, "Delete", cluster.name("node"))
    cluster.delete(f"/api/v1/namespaces/{cluster.namespace}/persistentvolumeclaims/data")
    cluster.delete(pv)
    item, report = same_everywhere(cluster, "PersistentVolume", pv["metadata"]["name"], "pv", pv["metadata"]["name"])
    assert item["rootCauses"] == [{"type": "used-by-pod", "object": f"Pod/{cluster.namespace}/db-0", "actor": None,
                                   "verdict": "HOLDING", "evidence": f"mounted by Pod {cluster.namespace}/db-0 "
                                   f"(scheduled on node {cluster.name('node')})"}]
    assert item["blocker"].endswith(f"; root cause: Pod/{cluster.namespace}/db-0")
    types = [(e["from"].split("/")[0], e["type"], e["to"].split("/")[0]) for e in report["chain"]["edges"]]
    assert types == [("PersistentVolume", "bound-claim", "PersistentVolumeClaim"),
                     ("PersistentVolumeClaim", "used-by-pod", "Pod")]
    assert [s["command"] for s in report["plan"]["steps"]] == [f"kubectl delete pod -n {cluster.namespace} db-0"]
    assert report["plan"]["steps"][0]["type"] == "operator"
    assert report["plan"]["afterwards"][-1].endswith("reclaim policy Delete, so its disk is deleted with it, "
                                                     "data included")


@pytest.mark.controllers
def test_a_volume_held_through_its_claim_by_a_pod_whose_node_never_reported(cluster):
    """PV -> claim -> Pod in graceful deletion -> its Node, which never reported Ready: four objects, three
    links; the root cause is the node, and the plan deletes it (or force-deletes the Pod, with the risk)."""
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": cluster.name("node")}})
    pv, pod = volume_claim_and_pod(cluster, "Retain", node["metadata"]["name"])
    cluster.delete(pod)  # graceful: only the node's kubelet could confirm
    cluster.delete(f"/api/v1/namespaces/{cluster.namespace}/persistentvolumeclaims/data")
    cluster.delete(pv)
    item, report = same_everywhere(cluster, "PersistentVolume", pv["metadata"]["name"], "pv", pv["metadata"]["name"])
    assert [e["type"] for e in report["chain"]["edges"]] == ["bound-claim", "used-by-pod", "kubelet"]
    assert [r["object"] for r in item["rootCauses"]] == [f"Node/{node['metadata']['name']}"]
    [step] = report["plan"]["steps"]
    assert step["command"] == (
        f"kubectl taint nodes {node['metadata']['name']} node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
    assert step["more"] == [{"command": f"kubectl delete pod -n {cluster.namespace} db-0 --grace-period=0 --force",
                             "when": f"only if Pod/{cluster.namespace}/db-0 lingers after that", "note": None}]
    assert report["plan"]["afterwards"][0] == f"Pod/{cluster.namespace}/db-0 goes by itself"
    assert "reclaim policy Retain, so the disk and its data stay" in report["plan"]["afterwards"][-1]


@pytest.mark.controllers
def test_a_namespace_held_by_a_custom_resource_of_an_uninstalled_operator(cluster):
    """namespace -> its stuck Widget -> the operator that is gone: the plan is the kfin remove command."""
    group, ns = cluster.namespace_held_by_widget()
    item, report = same_everywhere(cluster, "Namespace", ns, "ns", ns)
    assert [(r["type"], r["actor"], r["verdict"]) for r in item["rootCauses"]] == [
        ("controller", f"the controller of {group}", "ORPHANED")]
    assert item["blocker"].endswith(f"; root cause: the controller of {group}")
    [step] = report["plan"]["steps"]
    assert step["type"] == "kfin" and step["command"] == (
        f"kfin remove widgets.{group} w1 -n {ns} --finalizer {group}/cleanup --confirm")
    assert report["plan"]["afterwards"] == [
        f"Widget.{group}/{ns}/w1 goes by itself",
        f"Namespace/{ns} goes by itself: the namespace controller deletes the rest of its content, then the namespace"]
    cluster.strip_finalizers(f"/apis/{group}/v1/namespaces/{ns}/widgets/w1")


@pytest.mark.controllers
def test_a_namespace_held_by_an_unavailable_apiservice(cluster):
    """The root cause is the APIService, and the plan repairs or deletes it, never the namespace."""
    ns, name, _ = namespace_behind_an_unavailable_apiservice(cluster)
    report = explain(cluster, "ns", ns)
    [root] = report["chain"]["rootCauses"]
    assert root["object"] == f"APIService.apiregistration.k8s.io/{name}"
    assert "ServiceNotFound" in root["evidence"]
    [step] = report["plan"]["steps"]
    assert step["command"] is None and step["note"] == f"repair the backend of APIService {name}"
    assert step["more"] == [{"command": f"kubectl delete apiservice {name}",
                             "when": "instead, if its server was uninstalled", "note": None}]
