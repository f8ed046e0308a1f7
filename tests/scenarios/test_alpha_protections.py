"""Protections of v1.36's alpha features (issue 40), on a fake and a real control plane started with the
GenericWorkload and PersistentVolumeClaimUnusedSinceTime feature gates and scheduling.k8s.io/v1alpha2 served
(tests/conftest.py: gated_cluster), as a cluster that enables them runs.

- `scheduling.k8s.io/podgroup-protection`: put on every PodGroup at creation by kube-apiserver's PodGroupProtection
  admission plugin, removed by kube-controller-manager's podgroup-protection controller once no Pod that has not
  finished names the PodGroup (plugin/pkg/admission/scheduling/podgroupprotection,
  pkg/controller/scheduling/podgroupprotection).
- A claim's `Unused` condition, written by the pvc-protection controller: it leaves out Terminating Pods whose
  containers stopped, the finalizer does not; and it is no longer updated once the claim is being deleted.

COSI's `objectstorage.k8s.io/protection` is not Kubernetes': it belongs to the out-of-tree
kubernetes-sigs/container-object-storage-interface (kfin/data/catalog.yaml), which no control plane here runs.
"""

import json

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin

FINALIZER = "scheduling.k8s.io/podgroup-protection"


@pytest.fixture(autouse=True)
def audit_log(tmp_path, monkeypatch):
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))


def run(cluster, *args):
    return kfin(*args, "--kubeconfig", str(cluster.kubeconfig))


def member(cluster, name: str, group: str, node: str | None) -> dict:
    spec: dict = {"schedulingGroup": {"podGroupName": group},
                  "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    if node:
        spec["nodeName"] = node
    return cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


@pytest.mark.controllers  # the podgroup-protection controller removes the finalizer
def test_a_podgroup_is_held_by_its_members_that_have_not_finished(gated_cluster):
    cluster = gated_cluster
    group = cluster.create({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                            "metadata": {"name": "trainers"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})
    assert group["metadata"]["finalizers"] == [FINALIZER]  # by admission, on create
    scheduled = member(cluster, "worker-0", "trainers", cluster.name("node"))
    pending = member(cluster, "worker-1", "trainers", None)
    cluster.delete(group)
    items = json.loads(run(cluster, "stuck", "-n", cluster.namespace, "-o", "json").stdout)["items"]
    [item] = [i for i in items if i["name"] == "trainers"]
    assert item["kind"] == "PodGroup" and item["verdict"] == "HOLDING" and item["families"] == ["podgroup-protection"]
    report = json.loads(run(cluster, "explain", "podgroups.scheduling.k8s.io", "trainers", "-n", cluster.namespace,
                            "-o", "json").stdout)
    [finding] = report["findings"]
    assert finding["verdict"] == "HOLDING" and finding["removeCommand"] is None
    assert sorted(link["object"] for link in finding["links"]) == [
        f"Pod/{cluster.namespace}/worker-0", f"Pod/{cluster.namespace}/worker-1"]
    assert "(Pending, not scheduled)" in finding["condition"]
    refused = run(cluster, "remove", "podgroups.scheduling.k8s.io", "trainers", "-n", cluster.namespace,
                  "--finalizer", FINALIZER, "--confirm")
    assert refused.code == ExitCode.REFUSED and cluster.get(group) is not None

    cluster.set_status(scheduled, {"phase": "Succeeded"})  # a finished member holds it no more
    report = json.loads(run(cluster, "explain", "podgroups.scheduling.k8s.io", "trainers", "-n", cluster.namespace,
                            "-o", "json").stdout)
    assert [link["object"] for link in report["findings"][0]["links"]] == [f"Pod/{cluster.namespace}/worker-1"]
    cluster.delete(pending)  # never scheduled: it goes at once
    cluster.eventually(lambda: cluster.get(group) is None, message="the controller to let the PodGroup go")


@pytest.mark.controllers  # the pvc-protection controller writes the Unused condition and holds the claim
def test_a_claims_unused_condition_is_evidence_and_kfin_says_when_it_disagrees(gated_cluster):
    cluster = gated_cluster
    claim = cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                                     "storageClassName": cluster.name("manual")}})
    pod = cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0"}, "spec": {
        "nodeName": cluster.name("node"), "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}})

    def unused():
        found = [c for c in ((cluster.get(claim) or {}).get("status") or {}).get("conditions") or []
                 if c.get("type") == "Unused"]
        return (found[0]["status"], found[0]["reason"]) if found else None

    cluster.eventually(lambda: unused() == ("False", "PodUsingPVC"), message="Unused=False while the Pod uses it")
    cluster.delete(pod)  # graceful: no kubelet confirms it, it stays Terminating and scheduled
    cluster.eventually(lambda: unused() == ("True", "NoPodsUsingPVC"),
                       message="Unused=True once the Pod is Terminating with no container running")
    cluster.delete(claim)
    report = json.loads(run(cluster, "explain", "pvc", "data", "-n", cluster.namespace, "-o", "json").stdout)
    [finding] = report["findings"]
    assert finding["verdict"] == "HOLDING"  # the finalizer counts the scheduled Pod, Terminating or not
    assert [link["object"] for link in finding["links"]] == [f"Pod/{cluster.namespace}/db-0"]
    [said] = [line for line in finding["evidence"] if "Unused" in line]
    assert "Unused=True (NoPodsUsingPVC)" in said and "set before the deletion" in said and "disagree" in said
    assert cluster.get(claim) is not None
    cluster.delete(pod, grace=0)
    cluster.eventually(lambda: cluster.get(claim) is None, message="the controller to let the claim go")
