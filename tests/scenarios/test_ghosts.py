"""Ghosts of a namespace forced through /finalize: listed by kfin stuck -A, explained, and cleaned up by
kfin remove --recreate-namespace when asked (captures 35-37 of causes)."""

import json

from kfin.errors import ExitCode
from tests.runner import kfin


def ghost(cluster):
    """Namespace <suffix>-ghost forced through /finalize with ConfigMap left-behind (a finalizer) in it: the forum
    recipe, run once the namespace controller has deleted the content and the namespace waits on its finalizer.
    (Forced at once, before the controller got there, a real server leaves the content never deleted: see
    test_a_ghost_never_deleted_is_explained_and_its_namespace_recreated_on_request.)"""
    ns = cluster.name("ghost")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "left-behind", "namespace": ns, "finalizers": ["example.com/hold"]}})
    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: (cluster.get(f"/api/v1/namespaces/{ns}/configmaps/left-behind") or {})
                       .get("metadata", {}).get("deletionTimestamp"), message="the namespace controller")
    cluster.eventually(lambda: forced(cluster, ns), message="/finalize on the namespace's latest version")
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to go")
    return ns


def forced(cluster, ns) -> bool:
    """The recipe's PUT on /finalize, with its finalizers emptied; False on a conflict (the namespace controller
    wrote its conditions since the read), to be read and sent again, as whoever runs the recipe would."""
    namespace = cluster.get(f"/api/v1/namespaces/{ns}")
    namespace["spec"]["finalizers"] = []
    code, answer = cluster.api.send("PUT", f"/api/v1/namespaces/{ns}/finalize", namespace)
    assert code < 300 or code == 409, (code, answer)
    return code < 300


def never_deleted_ghost(cluster, finalizer="example.com/hold"):
    """Namespace <suffix>-early whose spec.finalizers were emptied through /finalize before it was deleted, then
    deleted twice (the first DELETE only marks a namespace; the second purges one with no finalizers left): the
    namespace controller never ran, so ConfigMap left (a finalizer) was never deleted. The same on both tiers,
    where a namespace forced right after its DELETE races the controller on a real server."""
    ns = cluster.name("early")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "left", "namespace": ns, "finalizers": [finalizer]}})
    namespace = cluster.get(f"/api/v1/namespaces/{ns}")
    namespace["spec"]["finalizers"] = []
    cluster.api.ok("PUT", f"/api/v1/namespaces/{ns}/finalize", namespace)
    cluster.delete(f"/api/v1/namespaces/{ns}")
    assert cluster.get(f"/api/v1/namespaces/{ns}")["status"]["phase"] == "Terminating"
    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to go")
    return ns


def test_a_ghost_is_listed_explained_and_cleaned_up_on_request(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    ns = ghost(cluster)
    base = ("--kubeconfig", str(cluster.kubeconfig))
    items = json.loads(kfin("stuck", "-A", "-o", "json", *base).stdout)["items"]
    [item] = [i for i in items if i["namespace"] == ns and i["name"] == "left-behind"]
    assert item["blocker"].startswith(f'ghost: example.com/hold cannot be removed: its namespace "{ns}" no longer exists')
    report = json.loads(kfin("explain", "cm", "left-behind", "-n", ns, "-o", "json", *base).stdout)
    assert report["findings"][0]["verdict"] == "BLOCKED"
    assert report["plan"] is not None, report  # whether or not the namespace controller deleted it first
    assert report["plan"]["steps"][0]["command"] == f"kubectl create namespace {ns}"
    refused = kfin("remove", "cm", "left-behind", "-n", ns, "--finalizer", "example.com/hold", "--confirm", *base)
    assert refused.code == ExitCode.REFUSED and "--recreate-namespace" in refused.stderr
    cleaned = kfin("remove", "cm", "left-behind", "-n", ns, "--finalizer", "example.com/hold", "--confirm",
                   "--recreate-namespace", *base)
    assert cleaned.code == ExitCode.OK, cleaned
    assert f"namespace {ns} created again" in cleaned.stderr
    assert cluster.get(f"/api/v1/namespaces/{ns}/configmaps/left-behind") is None or not \
        cluster.get(f"/api/v1/namespaces/{ns}/configmaps/left-behind")["metadata"].get("finalizers")
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [r["result"] for r in records] == ["created", "removed"]
    cluster.delete(f"/api/v1/namespaces/{ns}")


def test_a_ghost_never_deleted_is_explained_and_its_namespace_recreated_on_request(cluster, tmp_path, monkeypatch):
    """A ghost that was never deleted is listed and explained with its chain and plan (a real v1.36 server returned
    `plan: null` here before); kfin remove names --recreate-namespace, not --allow-live (a real server answered
    "not being deleted ... --allow-live" before: issue 39); once its namespace exists again it is a live object,
    which kfin leaves to the namespace's deletion, after which it is an ordinary stuck object kfin can unstick."""
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    ns = never_deleted_ghost(cluster)
    path = f"/api/v1/namespaces/{ns}/configmaps/left"
    assert "deletionTimestamp" not in cluster.get(path)["metadata"]  # never deleted: a ghost all the same
    base = ("--kubeconfig", str(cluster.kubeconfig))
    [item] = [i for i in json.loads(kfin("stuck", "-A", "-o", "json", *base).stdout)["items"] if i["namespace"] == ns]
    assert item["name"] == "left" and item["blocker"].startswith("ghost: ")
    report = json.loads(kfin("explain", "cm", "left", "-n", ns, "-o", "json", *base).stdout)
    assert report["findings"][0]["verdict"] == "BLOCKED"
    assert report["plan"]["steps"][0]["command"] == f"kubectl create namespace {ns}"
    refused = kfin("remove", "cm", "left", "-n", ns, "--finalizer", "example.com/hold", "--confirm", *base)
    assert refused.code == ExitCode.REFUSED and "--recreate-namespace" in refused.stderr, refused.stderr
    assert "--allow-live" not in refused.stderr
    recreated = kfin("remove", "cm", "left", "-n", ns, "--finalizer", "example.com/hold", "--confirm",
                     "--recreate-namespace", *base)
    assert recreated.code == ExitCode.REFUSED, recreated
    assert f"namespace {ns} created again" in recreated.stderr
    assert "it was never deleted" in recreated.stderr and f"kubectl delete namespace {ns}" in recreated.stderr
    assert cluster.get(path)["metadata"]["finalizers"] == ["example.com/hold"]  # nothing removed from a live object
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [r["result"] for r in records] == ["created"]

    cluster.delete(f"/api/v1/namespaces/{ns}")  # as kfin said: the namespace controller deletes the content
    cluster.eventually(lambda: (cluster.get(path) or {}).get("metadata", {}).get("deletionTimestamp"),
                       message="the namespace controller")
    cleaned = kfin("remove", "cm", "left", "-n", ns, "--finalizer", "example.com/hold", "--confirm", *base)
    assert cleaned.code == ExitCode.OK, cleaned
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to go")
    assert cluster.get(path) is None


def test_a_namespace_finalized_before_its_deletion_waits_for_another_delete(cluster):
    """The forum recipe run on a namespace before deleting it: its finalizers are gone, so the DELETE only marks it
    Terminating, the namespace controller never acts on it, and kube-apiserver purges it only at another DELETE
    (seen on the real tier, where kfin said "none: deletion should complete on its own"). kfin says what holds it,
    and that its content goes first: purged now, the content would stay stored out of sight."""
    ns = cluster.name("early")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "left", "namespace": ns}})
    namespace = cluster.get(f"/api/v1/namespaces/{ns}")
    namespace["spec"]["finalizers"] = []
    cluster.api.ok("PUT", f"/api/v1/namespaces/{ns}/finalize", namespace)
    cluster.delete(f"/api/v1/namespaces/{ns}")
    base = ("--kubeconfig", str(cluster.kubeconfig))
    [finding] = json.loads(kfin("explain", "ns", ns, "-o", "json", *base).stdout)["findings"]
    assert finding["verdict"] == "HOLDING" and "purges it only at another DELETE" in finding["condition"]
    assert finding["fix"].startswith("delete what is left in it first (") and \
        finding["fix"].endswith(f"kubectl delete namespace {ns} again; purged now, they would stay stored out of sight")
    [row] = [i for i in json.loads(kfin("stuck", "-A", "-o", "json", *base).stdout)["items"] if i["name"] == ns]
    assert row["verdict"] == "HOLDING" and "nothing deletes it until another DELETE" in row["blocker"]
    kinds = ("configmaps", "serviceaccounts")  # ours, and what the control plane put there (kube-root-ca.crt, default)
    for resource in kinds:
        cluster.api.send("DELETE", f"/api/v1/namespaces/{ns}/{resource}")
    cluster.eventually(lambda: not any(cluster.api.get(f"/api/v1/namespaces/{ns}/{r}")["items"] for r in kinds),
                       message="the content to go")
    [finding] = json.loads(kfin("explain", "ns", ns, "-o", "json", *base).stdout)["findings"]
    assert finding["fix"] == f"kubectl delete namespace {ns} again: it is purged at once"
    cluster.delete(f"/api/v1/namespaces/{ns}")
    assert cluster.get(f"/api/v1/namespaces/{ns}") is None
