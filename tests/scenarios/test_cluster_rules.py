"""Scenarios of the Kubernetes behaviour kfin relies on, run on every scenario backend.

They pin down, on the fake and on any real cluster given, the facts kfin's diagnosis is built on.
"""

import pytest

from kfin.errors import ForbiddenError
from kfin.api.connection import Kube, Target
from tests.runner import kfin


def configmap(name, **meta):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": {"k": "v"}}


def test_kfin_talks_to_the_scenario_cluster(cluster):
    result = kfin("version", "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code == 0, result.stderr
    assert '"serverVersion": "v1.' in result.stdout


def test_an_object_with_a_finalizer_stays_terminating_until_it_is_removed(cluster):
    held = cluster.create(configmap("held", finalizers=["example.com/block"]))
    cluster.delete(held)
    terminating = cluster.get(held)
    assert terminating["metadata"]["deletionTimestamp"] and terminating["metadata"]["finalizers"] == ["example.com/block"]
    path = cluster.path_of(held)
    code, _ = cluster.api.json_patch(path, [{"op": "test", "path": "/metadata/finalizers", "value": ["example.com/x"]},
                                            {"op": "replace", "path": "/metadata/finalizers", "value": []}])
    assert code == 422
    code, _ = cluster.api.json_patch(path, [{"op": "test", "path": "/metadata/finalizers", "value": ["example.com/block"]},
                                            {"op": "replace", "path": "/metadata/finalizers", "value": []}])
    assert code == 200
    cluster.eventually(lambda: cluster.get(held) is None, message="the object to go")


@pytest.mark.controllers
def test_pvc_protection_holds_a_claim_while_a_scheduled_pod_uses_it(cluster):
    pvc = cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                          "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                                   "storageClassName": cluster.name("none")}})
    assert "kubernetes.io/pvc-protection" in pvc["metadata"]["finalizers"]
    if cluster.get(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/default") is None:
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    pod = cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user"}, "spec": {
        "nodeName": cluster.name("node"), "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}})
    cluster.delete(pvc)
    cluster.eventually(lambda: (cluster.get(pvc) or {}).get("metadata", {}).get("deletionTimestamp"))
    assert cluster.get(pvc)["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    cluster.delete(pod, grace=0)
    cluster.eventually(lambda: cluster.get(pvc) is None, message="the claim to go once its Pod is gone")


@pytest.mark.controllers
def test_foreground_deletion_waits_for_a_blocking_dependent(cluster):
    owner = cluster.create(configmap("owner"))
    dependent = cluster.create(configmap("dependent", finalizers=["example.com/block"], ownerReferences=[{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True}]))
    cluster.delete(owner, propagation="Foreground")
    cluster.eventually(lambda: (cluster.get(dependent) or {}).get("metadata", {}).get("deletionTimestamp"),
                       message="the GC to delete the dependent")
    assert cluster.get(owner)["metadata"]["finalizers"] == ["foregroundDeletion"]
    cluster.strip_finalizers(dependent)
    cluster.eventually(lambda: cluster.get(owner) is None, message="the owner to go after its dependent")


def test_a_read_only_user_gets_forbidden_naming_verb_and_resource(cluster):
    held = cluster.create(configmap("held", finalizers=["example.com/block"]))
    reader = Kube.connect(Target(kubeconfig=str(cluster.read_only_kubeconfig())))
    path = cluster.path_of(held)
    assert reader.get_metadata(path)["metadata"]["finalizers"] == ["example.com/block"]
    with pytest.raises(ForbiddenError) as denied:
        reader.patch_json(path, [{"op": "replace", "path": "/metadata/finalizers", "value": []}],
                          what=("patch", "configmaps", cluster.namespace))
    assert denied.value.verb == "patch" and denied.value.resource == "configmaps"
    assert f'kfin needs "patch" on "configmaps" in namespace "{cluster.namespace}"' in denied.value.message


def test_metadata_only_lists_page_through_everything(cluster):
    for i in range(5):
        cluster.create(configmap(f"plain-{i}"))
    kube = Kube.connect(Target(kubeconfig=str(cluster.kubeconfig)))
    pages = list(kube.list_metadata_pages(f"/api/v1/namespaces/{cluster.namespace}/configmaps", limit=2))
    names = [i["metadata"]["name"] for p in pages for i in p.get("items") or []]
    assert {f"plain-{i}" for i in range(5)} <= set(names) and len(names) == len(set(names))
    assert len(pages) >= 3 and all(p["kind"] == "PartialObjectMetadataList" for p in pages)


def test_finalizer_names_and_controller_references_are_validated(cluster):
    """Built-in objects refuse finalizers that are neither standard nor domain-qualified; custom resources
    accept them with a warning; no object may have two controller owners (captures 01-04 of causes)."""
    configmaps = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    code, answer = cluster.api.send("POST", configmaps, {"metadata": {"name": "odd", "finalizers": ["cleanup"]}})
    assert code == 422 and "name is neither a standard finalizer name nor is it fully qualified" in answer["message"]
    owners = [{"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": f"{n}-uid", "controller": True}
              for n in ("a", "b")]
    code, answer = cluster.api.send("POST", configmaps, {"metadata": {"name": "twice", "ownerReferences": owners}})
    assert code == 422 and "Only one reference can have Controller set to true" in answer["message"]
    group = cluster.widget_crd()
    code, answer = cluster.api.send("POST", f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets", {
        "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "loose", "finalizers": ["cleanup"]}})
    assert code == 201 and answer["metadata"]["finalizers"] == ["cleanup"]
    cluster.strip_finalizers(f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets/loose")
