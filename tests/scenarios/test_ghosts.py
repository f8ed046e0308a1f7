"""Ghosts of a namespace forced through /finalize: listed by kfin stuck -A, explained, and cleaned up by
kfin remove --recreate-namespace when asked (captures 35-37 of causes)."""

import json

from kfin.errors import ExitCode
from tests.runner import kfin


def ghost(cluster):
    """Namespace <suffix>-ghost forced through /finalize with ConfigMap left-behind (a finalizer) in it."""
    ns = cluster.name("ghost")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "left-behind", "namespace": ns, "finalizers": ["example.com/hold"]}})
    cluster.delete(f"/api/v1/namespaces/{ns}")
    namespace = cluster.get(f"/api/v1/namespaces/{ns}")
    namespace["spec"]["finalizers"] = []
    cluster.api.ok("PUT", f"/api/v1/namespaces/{ns}/finalize", namespace)
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
    assert report["plan"]["steps"][0]["action"].startswith(f"kubectl create namespace {ns}")
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
