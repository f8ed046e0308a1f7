"""Issue 40, item 2: kfin asks the server, as the actor who must act: the writes a deletion still needs are sent as
dry runs (dryRun=All, stored nowhere), as the actor's ServiceAccount when kfin's user may impersonate it."""

from kfin.api.connection import Kube
from kfin.api.dryrun import Write, may_impersonate, send
from kfin.api.target import Target
from kfin.model import ResourceType

CONFIGMAPS = ResourceType("", "v1", "configmaps", "ConfigMap", True)
NAMESPACE_CONTROLLER = "system:serviceaccount:kube-system:namespace-controller"


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


def test_a_dry_run_is_sent_as_the_actor_when_kfin_may_impersonate_it(cluster):
    """Impersonate-User of a ServiceAccount (its groups follow, as kube-apiserver gives them), allowed by a
    SelfSubjectAccessReview of verb impersonate; a user who may not impersonate asks as itself."""
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}})
    admin = Kube.connect(Target(str(cluster.kubeconfig)))
    assert may_impersonate(admin, NAMESPACE_CONTROLLER)
    write = Write.delete(CONFIGMAPS, cluster.namespace, "target", {"propagationPolicy": "Background"},
                         NAMESPACE_CONTROLLER)
    answer = send(admin, write, impersonate=True)
    assert answer.accepted and answer.sent_as == NAMESPACE_CONTROLLER, answer
    reader = Kube.connect(Target(str(cluster.read_only_kubeconfig())))
    assert not may_impersonate(reader, NAMESPACE_CONTROLLER)
    answer = send(reader, write, impersonate=False)  # as the reader itself: RBAC says no, and says who asked
    assert answer.code == 403 and answer.sent_as is None and "reader" in answer.message, answer
    assert cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/target") is not None
