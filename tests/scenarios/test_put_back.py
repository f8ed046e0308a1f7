"""Issue 44, item 5: a finalizer put back. After kfin removes a finalizer from a live object, it reads the object
again a little later; a live controller that put the finalizer back is named (its field manager, and the
workload that runs as it) and kfin stops there, its removal recorded as put back, never retried."""

import json
import threading

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin


@pytest.fixture(autouse=True)
def audit_log(tmp_path, monkeypatch):
    path = tmp_path / "audit.jsonl"
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(path))
    return path


def keeps_putting_back(cluster, path, finalizer, manager, stop):
    """A controller that wants `finalizer` on the object: it puts it back whenever it is gone, as `manager`."""
    while not stop.is_set():
        current = cluster.get(path)
        if current is None:
            return
        finalizers = current["metadata"].get("finalizers") or []
        if finalizer not in finalizers:
            cluster.api.send("PATCH", f"{path}?fieldManager={manager}",
                             {"metadata": {"finalizers": [*finalizers, finalizer]}},
                             content_type="application/merge-patch+json")
        stop.wait(0.02)


def test_a_finalizer_a_live_controller_puts_back_names_its_writer_and_kfin_stops(cluster, audit_log):
    cluster.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "widget-operator"},
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "widget-operator"}},
                             "template": {"metadata": {"labels": {"app": "widget-operator"}},
                                          "spec": {"containers": [{"name": "c",
                                                                   "image": "registry.invalid/widget:none"}]}}}})
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "data": {"setting": "on"},
                         "metadata": {"name": "wanted", "finalizers": ["example.com/a"]}})
    path = cluster.path_of(cm)
    cluster.api.ok("PATCH", f"{path}?fieldManager=widget-operator", {"metadata": {"finalizers": ["example.com/a"]}},
                   content_type="application/merge-patch+json")
    stop = threading.Event()
    writer = threading.Thread(target=keeps_putting_back, args=(cluster, path, "example.com/a", "widget-operator", stop))
    writer.start()
    try:
        result = kfin("remove", "configmap", "wanted", "-n", cluster.namespace, "--finalizer", "example.com/a",
                      "--allow-live", "--confirm", "--kubeconfig", str(cluster.kubeconfig))
    finally:
        stop.set()
        writer.join()
    assert result.code == ExitCode.API, result
    said = " ".join(result.stderr.split())
    assert said.startswith(f"error: put-back: ConfigMap/{cluster.namespace}/wanted: example.com/a was removed, then "
                           'put back within 1.5 s by field manager "widget-operator" (Deployment '
                           f"{cluster.namespace}/widget-operator, "), said
    assert "a live controller wants it, so kfin stops here" in said
    [record] = [json.loads(line) for line in audit_log.read_text().splitlines()]
    # what kfin did (removed it) and what it found after (put back), both recorded
    assert record["result"] == "put-back" and record["removed"] == ["example.com/a"]
    assert record["finalizersAfter"] == ["example.com/a"]
    assert cluster.get(cm)["metadata"]["finalizers"] == ["example.com/a"]
