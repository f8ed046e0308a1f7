"""kfin delete: the prediction, the DELETE, then what holds the object, live, until it is gone or --timeout passes.
kfin sends the DELETE only: a finalizer that holds stays until the user runs the plan's `kfin remove` step."""

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenarios.test_explain import stuck_widget

ROOT = Path(__file__).resolve().parents[2]


def widget(cluster, group, name="w1", namespace=None):
    """A Widget with the finalizer `{group}/cleanup` of an operator that is not installed (nothing removes it)."""
    return cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                           "metadata": {"name": name, "namespace": namespace or cluster.namespace,
                                        "finalizers": [f"{group}/cleanup"]}})


def test_an_object_that_goes_exits_0(cluster):
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}})
    result = kfin("delete", "cm", "plain", "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig),
                  "--yes", "--timeout", "30s")
    assert result.code == ExitCode.OK, result
    assert f"Deleting ConfigMap/{cluster.namespace}/plain would delete 0 objects." in result.stdout
    assert "Nothing would be left stuck" in result.stdout
    assert result.stdout.rstrip().endswith(f"ConfigMap/{cluster.namespace}/plain is gone"), result.stdout
    assert f"deleted ConfigMap/{cluster.namespace}/plain" in result.stderr
    assert cluster.get(cm) is None


def test_an_orphaned_finalizer_holds_it_past_the_timeout_and_stays(cluster):
    group = cluster.widget_crd()
    w1 = widget(cluster, group)
    ref = f"Widget.{group}/{cluster.namespace}/w1"
    result = kfin("delete", f"widgets.{group}", "w1", "-n", cluster.namespace, "--kubeconfig",
                  str(cluster.kubeconfig), "--yes", "--timeout", "3s")
    assert result.code == ExitCode.FOUND, result
    # the prediction said so before the DELETE
    assert "1 would be left without the controller that removes its finalizer" in result.stdout \
        or "would be left Terminating" in result.stdout, result.stdout
    # live: what holds it, then, at the timeout, kfin explain's answer with the plan's kfin remove step
    assert f"{ref}: ORPHANED: custom: {group}/cleanup" in result.stdout, result.stdout
    assert f"{ref} is still there after 3s; what holds it, as kfin explain says:" in result.stderr
    last = result.stdout[result.stdout.index("Terminating for"):]
    assert f"{group}/cleanup" in last and "ORPHANED" in last
    assert f"kfin remove widgets.{group} w1 -n {cluster.namespace} --finalizer {group}/cleanup" in last, last
    # kfin removed nothing: the finalizer is still there, the object Terminating
    now = cluster.get(w1)
    assert now["metadata"]["finalizers"] == [f"{group}/cleanup"] and now["metadata"]["deletionTimestamp"]


def test_json_lines_one_per_answer_and_a_last_one(cluster):
    group = cluster.widget_crd()
    widget(cluster, group)
    result = kfin("delete", f"widgets.{group}", "w1", "-n", cluster.namespace, "--kubeconfig",
                  str(cluster.kubeconfig), "--yes", "--timeout", "2s", "-o", "json")
    assert result.code == ExitCode.FOUND, result
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["event"] for line in lines] == ["prediction", "deleted", "holding", "timeout"], lines
    assert lines[2]["verdict"] == "ORPHANED" and lines[2]["object"]["name"] == "w1"
    assert lines[2]["next"]["command"].startswith(f"kfin remove widgets.{group} w1")
    [finding] = lines[3]["explanation"]["findings"]
    assert finding["finalizer"] == f"{group}/cleanup" and finding["verdict"] == "ORPHANED"


def test_a_held_widget_already_deleted_is_followed_without_a_second_question(cluster):
    """An object already Terminating: the DELETE is sent again (as kubectl's), and what holds it is said."""
    group = cluster.widget_crd()
    stuck_widget(cluster, group)
    result = kfin("delete", f"widgets.{group}", "w1", "-n", cluster.namespace, "--kubeconfig",
                  str(cluster.kubeconfig), "--yes", "--timeout", "1s")
    assert result.code == ExitCode.FOUND, result
    assert "is already being deleted" in result.stdout


class Running:
    """kfin as a process (stdin no terminal: --yes), its stdout read line by line while it runs. Each stream has a
    reader of its own (stderr too, so that a full pipe never stalls kfin), and only they read them."""

    def __init__(self, *args):
        self.process = subprocess.Popen([sys.executable, "-m", "kfin", *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT, text=True)
        self.lines: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        self._stderr: list[str] = []
        self._readers = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=lambda: self._stderr.extend(self.process.stderr), daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read(self):
        for line in self.process.stdout:
            self._queue.put(line)

    def said(self, text):
        while not self._queue.empty():
            self.lines.append(self._queue.get())
        return any(text in line for line in self.lines)

    def end(self, timeout=120):
        try:
            self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        for reader in self._readers:  # what kfin wrote last is read to the end of each stream
            reader.join(timeout=10)
        self.said("")
        return self.process.returncode, "".join(self.lines), "".join(self._stderr)


@pytest.mark.controllers
def test_the_holder_changes_while_watching_pods_first_then_a_custom_resource(cluster):
    """The namespace controller deletes the Pods first (OrderedNamespaceDeletion) and waits for them: Pods with a
    finalizer hold the namespace. Once the test removes it, the Widget is deleted and its orphaned finalizer holds
    it: both answers are shown, in order. Once that one is removed too, the namespace goes: exit 0."""
    group = cluster.widget_crd()
    ns = cluster.name("team")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    pods = [cluster.create({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"p{i}", "namespace": ns, "finalizers": ["example.com/hold"]},
                            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}) for i in range(2)]
    w1 = widget(cluster, group, namespace=ns)
    running = Running("delete", "ns", ns, "--kubeconfig", str(cluster.kubeconfig), "--yes", "--timeout", "120s",
                      "--interval", "1s")
    pods_next = f"next: kfin remove pods p0 -n {ns} --finalizer example.com/hold"
    widget_next = f"next: kfin remove widgets.{group} w1 -n {ns} --finalizer {group}/cleanup"
    try:
        cluster.eventually(lambda: running.said(pods_next), external=True, message="kfin to name the Pods")
        assert not running.said(widget_next)
        for pod in pods:
            cluster.strip_finalizers(pod)
        cluster.eventually(lambda: running.said(widget_next), external=True, message="kfin to name the Widget")
        cluster.strip_finalizers(w1)
        code, out, stderr = running.end()
    finally:
        if running.process.poll() is None:
            running.process.kill()
    assert code == ExitCode.OK, (out, stderr)
    pods_at, widget_at = out.index(pods_next), out.index(widget_next)
    assert pods_at < widget_at, out
    assert "root cause: the controller of example.com is gone: nothing will remove example.com/hold" \
        in out[:pods_at], out
    assert f"root cause: the controller of {group} is gone: nothing will remove {group}/cleanup" \
        in out[pods_at:widget_at], out
    assert out.rstrip().endswith(f"Namespace/{ns} is gone"), out
    assert cluster.get(f"/api/v1/namespaces/{ns}") is None


def test_a_selector_deletes_the_matching_objects_and_follows_each(cluster):
    """kubectl's -l: each matching object predicted, deleted and followed; the one that goes is said gone, the one
    a finalizer holds is explained at the timeout; an object the selector does not match is left alone."""
    def cm(name, app, finalizers=()):
        return cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name, "labels": {"app": app}, "finalizers": list(finalizers)}})

    goes, held, other = cm("goes", "x"), cm("held", "x", ["example.com/hold"]), cm("other", "y")
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    result = kfin("delete", "cm", "-l", "app=x", *base, "--yes", "--timeout", "2s")
    assert result.code == ExitCode.FOUND, result
    ns = cluster.namespace
    assert f"Deleting ConfigMap/{ns}/goes would delete 0 objects." in result.stdout
    assert f"Deleting ConfigMap/{ns}/held would delete 0 objects." in result.stdout
    assert f"ConfigMap/{ns}/goes is gone" in result.stdout
    assert f"ConfigMap/{ns}/held is still there after 2s; what holds it, as kfin explain says:" in result.stderr
    assert "example.com/hold" in result.stdout[result.stdout.index("Terminating for"):]
    assert cluster.get(goes) is None
    assert cluster.get(held)["metadata"]["finalizers"] == ["example.com/hold"]
    assert "deletionTimestamp" not in cluster.get(other)["metadata"]
    none = kfin("delete", "cm", "-l", "app=nobody", *base, "--yes")
    assert none.code == ExitCode.OK and "No cm matches -l app=nobody: nothing was deleted." in none.stderr, none
    both = kfin("delete", "cm", "other", "-l", "app=y", *base, "--yes")
    assert both.code == ExitCode.USAGE and "KIND NAME, or KIND -l SELECTOR: not both" in both.stderr
    assert "deletionTimestamp" not in cluster.get(other)["metadata"]


def test_manifests_are_predicted_as_a_teardown_then_deleted_in_order_and_followed(cluster, tmp_path):
    """kubectl's -f: kfin preflight -f's teardown first, then a DELETE of each object found, in the files' order;
    one the cluster does not have is said, not sent."""
    ns = cluster.namespace
    goes = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "goes"}})
    held = cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    manifest = tmp_path / "release.yaml"
    manifest.write_text("".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
                                for name in ("goes", "held", "never-made")))
    result = kfin("delete", "-f", str(manifest), "--kubeconfig", str(cluster.kubeconfig), "-n", ns, "--yes",
                  "--timeout", "2s")
    assert result.code == ExitCode.FOUND, result
    assert "kubectl delete -f: 3 DELETEs in this order" in result.stdout, result.stdout
    assert f"ConfigMap/{ns}/never-made not found: nothing to delete" in result.stderr
    assert result.stderr.index(f"deleted ConfigMap/{ns}/goes") < result.stderr.index(f"deleted ConfigMap/{ns}/held")
    assert f"ConfigMap/{ns}/goes is gone" in result.stdout
    assert f"ConfigMap/{ns}/held is still there after 2s" in result.stderr
    assert cluster.get(goes) is None and cluster.get(held)["metadata"]["finalizers"] == ["example.com/hold"]
    assert cluster.get(f"/api/v1/namespaces/{ns}/configmaps/never-made") is None
