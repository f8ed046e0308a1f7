"""Following a deletion to its end: kfin wait and kfin remove --wait (a watch, re-listing after 410)."""

import io
import threading
import time

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenario import until


def held(cluster, name="held"):
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": name, "finalizers": ["example.com/hold"]}})
    cluster.delete(cm)
    return cm


def in_background(*args, said=None):
    """kfin run in a thread: (thread, a list that receives its Result). `said`: returns once kfin's stderr has
    said this (case-insensitive), which it says once it has read the object: a change after that comes to it as an
    event of the watch it starts from that read."""
    out, err = [], io.StringIO()
    thread = threading.Thread(target=lambda: out.append(kfin(*args, stderr=err)))
    thread.start()
    if said is not None:
        until(lambda: said.lower() in err.getvalue().lower() or not thread.is_alive(), f"kfin saying {said!r}")
    return thread, out


def test_wait_returns_once_the_object_is_gone(cluster):
    cm = held(cluster)
    thread, out = in_background("wait", "cm", "held", "--kubeconfig", str(cluster.kubeconfig), "-n",
                                cluster.namespace, "--timeout", "30s", said="finalizers left")
    cluster.strip_finalizers(cm)
    thread.join(40)
    [result] = out
    assert result.code == ExitCode.OK, result
    assert f"ConfigMap/{cluster.namespace}/held is gone" in result.stdout
    assert "finalizers left: example.com/hold" in result.stderr


def test_wait_names_what_still_holds_it_after_the_timeout(cluster):
    held(cluster)
    started = time.monotonic()
    result = kfin("wait", "cm", "held", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace,
                  "--timeout", "2s")
    assert result.code == ExitCode.FOUND, result
    assert time.monotonic() - started < 10
    assert "is still there after 2s: custom: example.com/hold" in result.stderr
    assert "root cause" not in result.stderr or "the controller of example.com" in result.stderr


@pytest.mark.fake_only("a real server compacts old versions when it will: the fake's window is moved past the list's")
def test_a_watch_whose_version_expired_lists_again(fake, fake_kubeconfig):
    """The fake's window of versions is moved past the list's, so the first watch gets 410."""
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    api.delete("/api/v1/namespaces/default/configmaps/held")
    fake.cluster.compacted_rv = 10 ** 9  # every version kfin lists is already compacted away
    thread, out = in_background("wait", "cm", "held", "--kubeconfig", str(fake_kubeconfig), "--timeout", "20s")
    # kfin lists again once a watch was refused (410): the window moves back only then, not at the watch request,
    # which the fake logs before it answers
    until(lambda: len([r for r in fake.requests if r.verb == "list" and r.path.endswith("/configmaps")]) >= 2,
          "kfin to list again after the watch the expired version refuses")
    fake.cluster.compacted_rv = 0
    api.merge_patch("/api/v1/namespaces/default/configmaps/held", {"metadata": {"finalizers": None}})
    thread.join(30)
    [result] = out
    assert result.code == ExitCode.OK, result
    watches = [r for r in fake.requests if r.verb == "watch"]
    lists = [r for r in fake.requests if r.verb == "list" and r.path.endswith("/configmaps")]
    assert len(watches) >= 2 and len(lists) >= 2  # expired, listed again, watched again


def test_remove_wait_follows_the_deletion_to_its_end(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    held(cluster)
    result = kfin("remove", "cm", "held", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace,
                  "--finalizer", "example.com/hold", "--confirm", "--wait", "--timeout", "30s")
    assert result.code == ExitCode.OK, result
    assert cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/held") is None


@pytest.mark.controllers
def test_waiting_for_a_namespace_counts_its_content_down(cluster):
    group, ns = cluster.namespace_held_by_widget()
    thread, out = in_background("wait", "ns", ns, "--kubeconfig", str(cluster.kubeconfig), "--timeout", "60s",
                                said="remaining")
    cluster.strip_finalizers(f"/apis/{group}/v1/namespaces/{ns}/widgets/w1")
    thread.join(70)
    [result] = out
    assert result.code == ExitCode.OK, result
    assert "Some resources are remaining" in result.stderr or "finalizers remaining" in result.stderr.lower()
    assert f"Namespace/{ns} is gone" in result.stdout


def test_wait_and_remove_wait_refuse_bad_input(cluster):
    assert kfin("wait", "cm", "x", "--timeout", "0s", "--kubeconfig", str(cluster.kubeconfig)).code == ExitCode.USAGE
    assert kfin("remove", "cm", "x", "--wait", "--kubeconfig", str(cluster.kubeconfig)).code == ExitCode.USAGE


def test_wait_for_what_never_existed_is_an_error_not_gone(cluster):
    """Issue 41: a typo (of the kind, the name or the namespace) printed 'is gone' and exited 0, so
    `kfin wait X && next-step` went on. Only an object kfin saw, or one named by its uid, can be gone."""
    base = ("--kubeconfig", str(cluster.kubeconfig), "--timeout", "5s")
    kind = kfin("wait", "cmm", "nope", "-n", cluster.namespace, *base)
    assert kind.code == ExitCode.NOT_FOUND and kind.stdout == "", kind
    assert kind.stderr.startswith("error: ") and "did you mean configmaps?" in kind.stderr
    name = kfin("wait", "cm", "never-was", "-n", cluster.namespace, *base)
    assert name.code == ExitCode.NOT_FOUND and "is gone" not in name.stdout, name
    assert f'configmaps "never-was" not found in namespace "{cluster.namespace}"' in name.stderr
    assert "--uid" in name.stderr
    namespace = kfin("wait", "cm", "never-was", "-n", f"{cluster.namespace}-nope", *base)
    assert namespace.code == ExitCode.NOT_FOUND and "is gone" not in namespace.stdout, namespace
    assert f'namespace "{cluster.namespace}-nope" does not exist' in namespace.stderr
    # with the uid it had, an object already gone is gone: nothing left to wait for
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "short-lived"}})
    uid = cm["metadata"]["uid"]
    cluster.delete(cm)
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/short-lived") is None)
    gone = kfin("wait", "cm", "short-lived", "-n", cluster.namespace, "--uid", uid, *base)
    assert gone.code == ExitCode.OK and f"ConfigMap/{cluster.namespace}/short-lived is gone" in gone.stdout, gone
    # one of the same name made since is another object: the one of that uid is gone
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "short-lived"}})
    again = kfin("wait", "cm", "short-lived", "-n", cluster.namespace, "--uid", uid, *base)
    assert again.code == ExitCode.OK and "is gone" in again.stdout, again
