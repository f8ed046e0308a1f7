"""Dry runs that are dry: kube-apiserver reads a DELETE's options from its body when it has one."""

from kfin.api.connection import Kube
from kfin.api.target import Target
from kfin.model import ResourceType

CONFIGMAPS = ResourceType("", "v1", "configmaps", "ConfigMap", True)


def test_a_delete_with_options_is_a_dry_run_only_when_its_body_says_so(cluster):
    """kube-apiserver reads a DELETE's query parameters only when it has no body: DELETE ?dryRun=All with
    DeleteOptions deletes for real (seen on the real tier; apiserver's endpoints/handlers/delete.go). kfin's dry
    runs say dryRun in the DeleteOptions."""
    for name in ("real", "dry"):
        cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    path = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    code, _ = cluster.api.send("DELETE", f"{path}/real?dryRun=All", {"propagationPolicy": "Background"})
    assert code == 200 and cluster.get(f"{path}/real") is None  # the query was not read: deleted
    kube = Kube.connect(Target(str(cluster.kubeconfig)))
    kube.delete_object(CONFIGMAPS, cluster.namespace, "dry", {"propagationPolicy": "Background"}, dry_run=True)
    assert cluster.get(f"{path}/dry") is not None
