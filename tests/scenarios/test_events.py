"""kfin explain shows what the object's controllers reported: its recent Warning Events, newest first."""

import json

from tests.runner import kfin


def event(cluster, obj, name, reason, message, kind="Warning", when="2026-11-23T00:00:00Z"):
    cluster.create({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
                    "involvedObject": {"apiVersion": "v1", "kind": obj["kind"], "name": obj["metadata"]["name"],
                                       "namespace": cluster.namespace, "uid": obj["metadata"]["uid"]},
                    "reason": reason, "message": message, "type": kind, "count": 3,
                    "firstTimestamp": when, "lastTimestamp": when, "source": {"component": "db-operator"}})


def test_explain_shows_the_objects_recent_warnings(cluster):
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "held", "finalizers": ["example.com/cleanup"]}})
    event(cluster, cm, "held.1", "CleanupFailed", "the cloud API answered 403 deleting bucket b-17",
          when="2026-11-23T00:00:00Z")
    event(cluster, cm, "held.2", "CleanupRetrying", "retrying in 5m", when="2026-11-23T00:05:00Z")
    event(cluster, cm, "held.3", "Created", "all good", kind="Normal")
    cluster.delete(cm)
    base = ("explain", "cm", "held", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    report = json.loads(kfin(*base, "-o", "json").stdout)
    assert [(e["reason"], e["count"]) for e in report["events"]] == [("CleanupRetrying", 3), ("CleanupFailed", 3)]
    if cluster.is_fake:  # read from events.k8s.io/v1, which serves the core Events too
        reads = [r.path for r in cluster.fake.requests if r.path.endswith("/events")]
        assert reads[-1] == f"/apis/events.k8s.io/v1/namespaces/{cluster.namespace}/events"
    table = kfin(*base).stdout
    assert "Recent warnings" in table and "(3x)  CleanupFailed: the cloud API answered 403 deleting bucket b-17" in table
    assert "all good" not in table


def test_a_stuck_event_is_one_object_listed_once(cluster):
    """events.k8s.io/v1 serves core v1's Events (one storage in kube-apiserver: pkg/registry/events/rest): a
    stuck Event is one row, found by either API's name, and a scan lists Events once, not twice (a busy
    cluster's largest list)."""
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "watched"}})
    made = cluster.create({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "watched.held",
                                                                              "finalizers": ["example.com/keep"]},
                           "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "watched",
                                              "namespace": cluster.namespace, "uid": cm["metadata"]["uid"]},
                           "reason": "Held", "message": "kept", "type": "Normal"})
    cluster.delete(made)
    base = ("stuck", "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    if cluster.is_fake:
        cluster.fake.requests.clear()
    rows = json.loads(kfin(*base).stdout)["items"]
    assert [(r["kind"], r["apiVersion"], r["metadata"]["name"]) for r in rows] == [("Event", "v1", "watched.held")]
    if cluster.is_fake:
        lists = [r.path for r in cluster.fake.requests if r.path.endswith("/events")]
        assert lists == [f"/api/v1/namespaces/{cluster.namespace}/events"]
    for kind in ("events", "events.events.k8s.io", "Event.v1.events.k8s.io"):
        found = json.loads(kfin(*base, "--kind", kind).stdout)["items"]
        assert [r["metadata"]["uid"] for r in found] == [made["metadata"]["uid"]], kind
