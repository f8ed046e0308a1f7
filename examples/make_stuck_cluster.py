"""Rebuild examples/stuck-cluster.json: a realistic stuck cluster, built on tests/fakeapi and saved
with `kfin snapshot -A`. Run from the repository root: python examples/make_stuck_cluster.py

What is stuck in it, and why (each a classic 2 a.m. page):
- namespace team-a: deleted while a Database custom resource's operator was already uninstalled;
- APIService v1beta1.metrics.k8s.io has no backend: no namespace deletion can finish (its discovery fails);
- namespace monitoring-old: deleted after that (the shipped snapshot was saved while the fake's namespace
  controller still stopped at discovery, so its content was not deleted; a real one deletes what it can discover);
- shop/data-postgres-0: a PVC deleted while its Pod (on a node) still uses it; its PV is bound;
- shop/web: a Deployment deleted in the foreground; its Pods run on node ip-10-0-2-44, which stopped
  reporting two hours ago (its kubelet will never confirm they stopped): a chain of three links;
- shop/frontend: a LoadBalancer Service whose cloud controller no longer runs.
"""

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kfin.commands.app import main  # noqa: E402
from tests.fakeapi import FakeAPIServer  # noqa: E402
from tests.fakeapi.rawclient import RawClient  # noqa: E402

HOUR = 3600


def build(fake: FakeAPIServer):
    api = RawClient(fake.url, "admin-token")
    at = lambda seconds_ago: setattr(fake.cluster, "clock_offset", -seconds_ago)  # noqa: E731

    at(30 * 86400)
    for ns in ("team-a", "shop", "monitoring-old"):
        api.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "metadata": {"name": "databases.acme.io"},
        "spec": {"group": "acme.io", "scope": "Namespaced",
                 "names": {"plural": "databases", "singular": "database", "kind": "Database", "shortNames": ["db"]},
                 "versions": [{"name": "v1", "served": True, "storage": True}]}})
    api.create("/apis/acme.io/v1/namespaces/team-a/databases", {
        "apiVersion": "acme.io/v1", "kind": "Database",
        "metadata": {"name": "orders", "finalizers": ["acme.io/database-cleanup"]}, "spec": {"engine": "postgres"}})
    api.create("/api/v1/namespaces/team-a/configmaps", {"metadata": {"name": "orders-config"}, "data": {"a": "b"}})

    # two nodes: ip-10-0-1-17 is Ready, ip-10-0-2-44 stopped reporting (as the node lifecycle controller
    # marks it: Ready Unknown, unreachable taints)
    for name in ("ip-10-0-1-17", "ip-10-0-2-44"):
        node = api.create("/api/v1/nodes", {"metadata": {"name": name}})
        api.ok("PUT", f"/api/v1/nodes/{name}/status", dict(node, status={"conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
            "lastHeartbeatTime": fake.cluster.now(), "lastTransitionTime": fake.cluster.now()}]}))

    # shop: a StatefulSet-like Pod with its claim and volume, a Deployment chain, a LoadBalancer Service
    api.create("/api/v1/persistentvolumes", {"metadata": {"name": "pvc-7f3a91"}, "spec": {
        "capacity": {"storage": "20Gi"}, "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Delete",
        "storageClassName": "fast", "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0a1b2c3d"},
        "claimRef": {"namespace": "shop", "name": "data-postgres-0"}}})
    api.create("/api/v1/namespaces/shop/persistentvolumeclaims", {"metadata": {"name": "data-postgres-0"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}},
        "storageClassName": "fast", "volumeName": "pvc-7f3a91"}})
    postgres = api.create("/api/v1/namespaces/shop/pods", {"metadata": {"name": "postgres-0"}, "spec": {
        "nodeName": "ip-10-0-1-17", "containers": [{"name": "postgres", "image": "postgres:17"}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-postgres-0"}}]}})
    api.ok("PUT", "/api/v1/namespaces/shop/pods/postgres-0/status", dict(postgres, status={"phase": "Running"}))
    deploy = api.create("/apis/apps/v1/namespaces/shop/deployments", {"metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}}}})
    owner = lambda o, kind: [{"apiVersion": "apps/v1", "kind": kind, "name": o["metadata"]["name"],  # noqa: E731
                              "uid": o["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    rs = api.create("/apis/apps/v1/namespaces/shop/replicasets", {
        "metadata": {"name": "web-6d4b9c", "ownerReferences": owner(deploy, "Deployment")},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}}})
    for suffix in ("x2k9p", "q8w4n"):
        api.create("/api/v1/namespaces/shop/pods", {"metadata": {
            "name": f"web-6d4b9c-{suffix}", "labels": {"app": "web"}, "ownerReferences": owner(rs, "ReplicaSet")},
            "spec": {"nodeName": "ip-10-0-2-44", "containers": [{"name": "web", "image": "web:1"}]}})
    api.create("/api/v1/namespaces/shop/services", {"metadata": {
        "name": "frontend", "finalizers": ["service.kubernetes.io/load-balancer-cleanup"]},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 443}]}})

    at(3 * 86400)
    api.delete("/api/v1/namespaces/shop/persistentvolumeclaims/data-postgres-0")
    at(2 * 86400 + 5 * HOUR)
    api.delete("/api/v1/persistentvolumes/pvc-7f3a91")
    at(26 * HOUR)
    api.delete("/api/v1/namespaces/shop/services/frontend")
    at(9 * HOUR)
    api.delete("/api/v1/namespaces/team-a")
    at(5 * HOUR)
    api.create("/apis/apiregistration.k8s.io/v1/apiservices", {"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {
        "group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
        "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443}}})
    at(4 * HOUR)
    api.delete("/api/v1/namespaces/monitoring-old")
    at(2 * HOUR + 12 * 60)
    lost = api.get("/api/v1/nodes/ip-10-0-2-44")
    api.ok("PUT", "/api/v1/nodes/ip-10-0-2-44/status", dict(lost, status={"conditions": [{
        "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": lost["status"]["conditions"][0]["lastHeartbeatTime"],
        "lastTransitionTime": fake.cluster.now()}]}))
    at(2 * HOUR + 10 * 60)
    api.delete("/apis/apps/v1/namespaces/shop/deployments/web", propagation="Foreground")
    at(0)
    for name in ("ip-10-0-1-17",):  # the live node's kubelet keeps reporting
        node = api.get(f"/api/v1/nodes/{name}")
        node["status"]["conditions"][0]["lastHeartbeatTime"] = fake.cluster.now()
        api.ok("PUT", f"/api/v1/nodes/{name}/status", node)


if __name__ == "__main__":
    fake = FakeAPIServer().start()
    try:
        build(fake)
        kubeconfig = fake.kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig")
        out = ROOT / "examples" / "stuck-cluster.json"
        try:
            main(["snapshot", "-A", "--kubeconfig", str(kubeconfig), "-f", str(out)])
        except SystemExit as done:
            print(f"kfin snapshot exited {done.code} (8: partial, as metrics.k8s.io is unavailable)")
        # Name the example's cluster as a reader would meet one, not by the fake's loopback port.
        snapshot = json.loads(out.read_text())
        snapshot.update(context="prod-eu", server="https://prod-eu.k8s.example.com:6443")
        out.write_text(json.dumps(snapshot, indent=1) + "\n")
    finally:
        fake.stop()
