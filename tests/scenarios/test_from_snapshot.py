"""Issue 41, item 9: remove, wait and serve from a snapshot answer as they do against the cluster it was taken
of: the same plan and patch, the same blocker, the same metrics (the cluster unchanged in between)."""

from tests.runner import kfin
from tests.serve.test_serve import samples


def held_configmap(cluster):
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    cluster.delete(cm)
    return cm


def snapshot_of(cluster, tmp_path):
    path = tmp_path / "snapshot.json"
    taken = kfin("snapshot", "-n", cluster.namespace, "-f", str(path), "--kubeconfig", str(cluster.kubeconfig))
    assert taken.code == 0, taken
    return str(path)


def test_remove_from_a_snapshot_plans_and_patches_as_a_live_dry_run(cluster, tmp_path):
    held_configmap(cluster)
    snapshot = snapshot_of(cluster, tmp_path)
    wanted = ["cm", "held", "-n", cluster.namespace, "--finalizer", "example.com/hold", "--force"]
    live = kfin("remove", *wanted, "--kubeconfig", str(cluster.kubeconfig))
    offline = kfin("remove", *wanted, "--from-snapshot", snapshot)
    assert (offline.code, offline.stdout) == (live.code, live.stdout), (live, offline)
    assert '{"op": "test", "path": "/metadata/finalizers", "value": ["example.com/hold"]}' in offline.stdout
    assert "nothing was sent" in offline.stderr
    assert cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/held") is not None


def test_wait_from_a_snapshot_names_the_blocker_a_live_wait_names(cluster, tmp_path):
    held_configmap(cluster)
    snapshot = snapshot_of(cluster, tmp_path)
    live = kfin("wait", "cm", "held", "-n", cluster.namespace, "--timeout", "1s",
                "--kubeconfig", str(cluster.kubeconfig))
    offline = kfin("wait", "cm", "held", "-n", cluster.namespace, "--from-snapshot", snapshot)
    assert live.code == offline.code == 1, (live, offline)
    blocker = offline.stdout.splitlines()[1].strip().partition(": ")[2]  # after the verdict
    assert blocker and f"is still there after 1s: {blocker}" in live.stderr, (live.stderr, offline.stdout)


def test_serve_once_from_a_snapshot_serves_what_serve_once_serves_live(cluster, tmp_path):
    held_configmap(cluster)
    snapshot = snapshot_of(cluster, tmp_path)
    live = kfin("serve", "--once", "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig))
    offline = kfin("serve", "--once", "--from-snapshot", snapshot)
    assert live.code == offline.code == 0, (live, offline)
    for family in ("kfin_stuck_objects", "kfin_stuck_object_info", "kfin_scan_complete"):
        assert samples(offline.stdout, family) == samples(live.stdout, family), family
    [(labels, one)] = samples(live.stdout, "kfin_stuck_object_info")
    assert (labels["name"], labels["namespace"], one) == ("held", cluster.namespace, 1)
