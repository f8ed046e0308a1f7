"""kfin remove on a cluster: dry run by default, guarded patches, refusals, races, the audit log, bulk."""

import json

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenario import KCM_DOWN


@pytest.fixture(autouse=True)
def audit_log(tmp_path, monkeypatch):
    path = tmp_path / "audit.jsonl"
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(path))
    return path


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def stuck_configmap(cluster, name="held", finalizers=("example.com/a", "example.com/b"), delete=True):
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": name, "finalizers": list(finalizers)}})
    if delete:
        cluster.delete(cm)
    return cm


def held_claim(cluster):
    """A Terminating claim "data" that Pod db-0, scheduled on a node, still uses."""
    if cluster.get(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/default") is None:
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    pvc = cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                          "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                                   "storageClassName": cluster.name("manual")}})
    cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0"}, "spec": {
        "nodeName": cluster.name("node"), "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}})
    cluster.delete(pvc)
    return pvc


def remove(cluster, *args, kubeconfig=None):
    return kfin("remove", *args, "--kubeconfig", str(kubeconfig or cluster.kubeconfig), "-n", cluster.namespace)


def test_without_confirm_nothing_changes(cluster, audit_log):
    cm = stuck_configmap(cluster)
    before = cluster.get(cm)
    seen = len(cluster.fake.requests) if cluster.is_fake else 0
    result = remove(cluster, "configmap", "held")
    assert result.code == 0 and "Dry run: nothing was changed" in result.stderr
    assert '"op": "test", "path": "/metadata/finalizers"' in result.stdout  # the exact patch is shown
    assert cluster.get(cm) == before and records(audit_log) == []
    if cluster.is_fake:  # kfin sent nothing but reads, and the removal it plans as a dry run (dryRun=All)
        sent = cluster.fake.requests[seen:]
        assert {r.method for r in sent if not r.dry_run} == {"GET"}
        assert {(r.method, r.path) for r in sent if r.dry_run} == {("PATCH", cluster.path_of(cm))}


def test_removing_one_of_two_leaves_the_other_and_the_last_lets_it_go(cluster, audit_log):
    cm = stuck_configmap(cluster)
    result = remove(cluster, "configmap", "held", "--finalizer", "example.com/a", "--confirm")
    assert result.code == 0, result.stderr
    assert cluster.get(cm)["metadata"]["finalizers"] == ["example.com/b"]
    assert "still Terminating with example.com/b" in result.stdout
    result = remove(cluster, "configmap", "held", "--confirm")
    assert result.code == 0 and "the object is gone" in result.stdout
    cluster.eventually(lambda: cluster.get(cm) is None)
    first, second = records(audit_log)
    assert first["removed"] == ["example.com/a"] and first["finalizersBefore"] == ["example.com/a", "example.com/b"]
    assert first["finalizersAfter"] == ["example.com/b"] and first["result"] == "removed"
    assert first["object"]["uid"] == cm["metadata"]["uid"] and first["object"]["resourceVersion"]
    assert first["verdicts"] == {"example.com/a": "ORPHANED", "example.com/b": "ORPHANED"}
    assert first["forced"] is False and first["context"] and first["user"] and first["time"]
    assert second["removed"] == ["example.com/b"] and second["finalizersAfter"] is None


def test_server_dry_run_validates_without_persisting(cluster, audit_log):
    cm = stuck_configmap(cluster)
    result = remove(cluster, "configmap", "held", "--server-dry-run")
    assert result.code == 0 and "the API server accepted the change (dryRun=All)" in result.stdout
    assert cluster.get(cm)["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    assert records(audit_log) == []
    if cluster.is_fake:  # the plan's check and the removal asked for: dry runs all
        dry_runs = [r.query.get("dryRun") for r in cluster.fake.requests if r.method == "PATCH"]
        assert dry_runs and set(map(tuple, dry_runs)) == {("All",)}, dry_runs


def test_a_live_object_is_left_alone_unless_allowed(cluster):
    cm = stuck_configmap(cluster, delete=False)
    refused = remove(cluster, "configmap", "held", "--finalizer", "example.com/a", "--confirm")
    assert refused.code == ExitCode.REFUSED and "not being deleted" in refused.stderr
    assert cluster.get(cm)["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    allowed = remove(cluster, "configmap", "held", "--finalizer", "example.com/a", "--confirm", "--allow-live")
    assert allowed.code == 0 and cluster.get(cm)["metadata"]["finalizers"] == ["example.com/b"]
    # the state read back is told as it is: a live object is not "still being deleted"
    assert "removed; the object is not being deleted (it keeps example.com/b)" in allowed.stdout
    assert "being deleted" not in allowed.stdout.replace("not being deleted", "")


def test_a_holding_finalizer_is_refused_with_its_safe_fix_unless_forced(cluster, audit_log):
    pvc = held_claim(cluster)
    by_default = remove(cluster, "pvc", "data", "--confirm")
    assert by_default.code == ExitCode.REFUSED and "no finalizer is safe to remove. Safe fix: stop what uses the claim: delete Pod " in by_default.stderr
    named = remove(cluster, "pvc", "data", "--finalizer", "kubernetes.io/pvc-protection", "--confirm")
    assert named.code == ExitCode.REFUSED
    assert f"it is HOLDING: in use by 1 scheduled Pod: Pod {cluster.namespace}/db-0" in named.stderr
    assert "Safe fix: stop what uses the claim" in named.stderr
    assert cluster.get(pvc) is not None and records(audit_log) == []
    forced = remove(cluster, "pvc", "data", "--finalizer", "kubernetes.io/pvc-protection", "--confirm", "--force")
    assert forced.code == 0, forced.stderr
    assert "warning: kubernetes.io/pvc-protection: forced although it is HOLDING" in forced.stderr
    assert "deletes the claim while Pods may still mount it" in forced.stderr
    cluster.eventually(lambda: cluster.get(pvc) is None)
    [record] = records(audit_log)
    assert record["forced"] is True and record["verdicts"] == {"kubernetes.io/pvc-protection": "HOLDING"}


def test_a_read_only_user_gets_the_permission_it_lacks(cluster, audit_log):
    stuck_configmap(cluster)
    reader = cluster.read_only_kubeconfig()
    result = remove(cluster, "configmap", "held", "--finalizer", "example.com/a", "--confirm", kubeconfig=reader)
    assert result.code == ExitCode.FORBIDDEN
    assert f'forbidden: kfin needs "patch" on "configmaps" in namespace "{cluster.namespace}"' in result.stderr
    [record] = records(audit_log)
    assert record["result"] == "failed" and "forbidden" in record["message"]


@pytest.mark.controllers
def test_a_namespace_completes_once_its_content_is_unstuck(cluster):
    group, ns = cluster.namespace_held_by_widget()
    base = ("--kubeconfig", str(cluster.kubeconfig))
    refused = kfin("remove", "namespace", ns, "--finalizer", "kubernetes", "--confirm", *base)
    assert refused.code == ExitCode.REFUSED and "it is HOLDING" in refused.stderr
    done = kfin("remove", f"widgets.{group}", "w1", "-n", ns, "--confirm", *base)
    assert done.code == 0, done.stderr
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to complete")


@pytest.mark.fake_only(KCM_DOWN)
def test_finalize_a_namespace_whose_controller_is_down(fake, fake_kubeconfig, audit_log):
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"metadata": {"name": "empty"}})
    api.delete("/api/v1/namespaces/empty/configmaps/kube-root-ca.crt")
    api.delete("/api/v1/namespaces/empty/serviceaccounts/default")
    fake.stop_controllers(seconds_ago=900)
    api.delete("/api/v1/namespaces/empty")
    # The control plane's finalizer is never selected by default, nor removed without --force (issue 23) ...
    by_default = kfin("remove", "ns", "empty", "--kubeconfig", str(fake_kubeconfig), "--confirm")
    assert by_default.code == ExitCode.REFUSED and "no finalizer is safe to remove. Safe fix: " in by_default.stderr
    named = kfin("remove", "ns", "empty", "--finalizer", "kubernetes", "--kubeconfig", str(fake_kubeconfig),
                 "--confirm")
    assert named.code == ExitCode.REFUSED and "belongs to the Kubernetes control plane" in named.stderr
    assert api.exists("/api/v1/namespaces/empty") and not [r for r in fake.requests if r.method == "PUT"]
    # ... and with both, it goes through /finalize, the risk named
    result = kfin("remove", "ns", "empty", "--finalizer", "kubernetes", "--force", "--kubeconfig",
                  str(fake_kubeconfig), "--confirm")
    assert result.code == 0, result.stdout + result.stderr
    assert "PUT /api/v1/namespaces/empty/finalize" in result.stdout and "the object is gone" in result.stdout
    assert not api.exists("/api/v1/namespaces/empty")
    puts = [r for r in fake.requests if r.method == "PUT"]
    assert [(r.path, r.content_type) for r in puts] == [("/api/v1/namespaces/empty/finalize", "application/json")]
    assert puts[0].body["kind"] == "Namespace" and puts[0].body["spec"]["finalizers"] == []


@pytest.mark.controllers
def test_forced_finalize_reports_what_is_left_behind(cluster):
    """A namespace forced through /finalize disappears, its content stays: kfin says so, from a fresh read."""
    ns = cluster.name("team")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "held", "namespace": ns, "finalizers": ["example.com/x"]}})
    cluster.delete(f"/api/v1/namespaces/{ns}")
    result = kfin("remove", "ns", ns, "--finalizer", "kubernetes", "--confirm", "--force",
                  "--kubeconfig", str(cluster.kubeconfig))
    assert result.code == 0, result.stderr
    assert "stay in etcd" in result.stderr  # the risk, named in the warning
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to go")
    assert cluster.get(f"/api/v1/namespaces/{ns}/configmaps/held") is not None


@pytest.mark.fake_only("another write lands between kfin's read and its patch: only the fake can hold a request there")
@pytest.mark.parametrize("writer", ["adds", "removes"])
def test_a_write_between_read_and_patch_is_never_lost(fake, fake_kubeconfig, writer):
    """Another client changes the finalizers right before kfin's patch lands: the test op fails, kfin reads
    again and removes only what it selected; the other client's change stays."""
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    path = "/api/v1/namespaces/default/configmaps/held"
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {
        "name": "held", "finalizers": ["example.com/a", "example.com/b", "example.com/c"]}})
    c, raced = fake.cluster, []

    def race(method, request_path):
        if method == "PATCH" and request_path == path and not raced:
            raced.append(True)
            rt = c.types[("", "configmaps")]
            obj = c.find(rt, "default", "held")
            new = json.loads(json.dumps(obj))
            if writer == "adds":
                new["metadata"]["finalizers"].append("writer.io/x")
            else:
                new["metadata"]["finalizers"].remove("example.com/c")
            c.update(rt, obj, new)
    fake.before_write.append(race)
    result = kfin("remove", "cm", "held", "--finalizer", "example.com/a", "--confirm", "--allow-live",
                  "--kubeconfig", str(fake_kubeconfig))
    assert result.code == 0, result.stderr
    expected = ["example.com/b", "example.com/c", "writer.io/x"] if writer == "adds" else ["example.com/b"]
    assert api.get(path)["metadata"]["finalizers"] == expected
    writes = [r for r in fake.requests if r.method == "PATCH" and not r.query.get("dryRun")]  # not the checks
    assert len(writes) == 2  # the failed guard, then the retry


def test_concurrent_writers_never_lose_a_change(cluster):
    """Many runs with a real concurrent client adding finalizers while kfin removes one."""
    import threading

    api = cluster.api
    for run in range(15):
        name = f"held-{run}"
        path = f"/api/v1/namespaces/{cluster.namespace}/configmaps/{name}"
        api.create(f"/api/v1/namespaces/{cluster.namespace}/configmaps", {"metadata": {
            "name": name, "finalizers": ["example.com/a", "example.com/b"]}})
        added = []

        def writer():
            for i in range(6):
                while True:  # the other client is careful too: a guarded add, retried
                    current = api.get(path)["metadata"]["finalizers"]
                    code, _ = api.json_patch(path, [{"op": "test", "path": "/metadata/finalizers", "value": current},
                                                    {"op": "add", "path": "/metadata/finalizers/-",
                                                     "value": f"writer.io/{i}"}])
                    if code == 200:
                        added.append(f"writer.io/{i}")
                        break
        thread = threading.Thread(target=writer)
        thread.start()
        result = kfin("remove", "cm", name, "--finalizer", "example.com/a", "--confirm", "--allow-live",
                      "--kubeconfig", str(cluster.kubeconfig))
        thread.join()
        assert result.code == 0, result.stderr
        final = api.get(path)["metadata"]["finalizers"]
        assert "example.com/a" not in final and "example.com/b" in final
        assert set(added) <= set(final) and len(added) == 6


def test_bulk_removal_with_allowed_and_refused_objects(cluster, audit_log):
    stuck_configmap(cluster, "orphan-1", ("example.com/a",))
    stuck_configmap(cluster, "orphan-2", ("example.com/a", "other.io/keep"))
    pvc = held_claim(cluster)
    base = ("remove", "--all-stuck", "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig),
            "--finalizer", "example.com/*", "--finalizer", "kubernetes.io/pvc-protection")
    plan = kfin(*base)
    assert plan.code == ExitCode.REFUSED and "2 to change, 1 refused" in plan.stderr
    # one namespace given (-n): no NAMESPACE column, as kubectl
    assert plan.stdout.splitlines()[0].split() == ["KIND", "NAME", "FINALIZER", "VERDICT", "ACTION"]
    applied = kfin(*base, "--confirm", "--yes")
    assert applied.code == ExitCode.REFUSED and "done 2, refused 1, failed 0" in applied.stderr
    assert cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/orphan-1") is None
    assert cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/orphan-2")["metadata"]["finalizers"] == \
        ["other.io/keep"]
    assert cluster.get(pvc) is not None
    assert sorted(r["object"]["name"] for r in records(audit_log)) == ["orphan-1", "orphan-2"]


def test_kfin_audit_lists_what_was_done(cluster, audit_log):
    stuck_configmap(cluster)
    remove(cluster, "configmap", "held", "--confirm")
    table = kfin("audit")
    assert table.code == 0
    header, row = table.stdout.splitlines()
    assert header.split() == ["TIME", "CONTEXT", "USER", "OBJECT", "REMOVED", "VERDICTS", "FORCED", "RESULT"]
    assert f"ConfigMap/{cluster.namespace}/held" in row and "example.com/a,example.com/b" in row
    assert json.loads(kfin("audit", "-o", "json").stdout)[0]["result"] == "removed"


def test_explain_names_who_adds_back_a_finalizer_kfin_removed(cluster, audit_log):
    """Issue 23: a finalizer kfin removed (here from a live object, --allow-live) and that a writer put back is
    explained with that writer's field manager, from managedFields and the audit log. The ConfigMap holds data,
    as a real one does: an object left with no managed field at all is no longer tracked (the next test)."""
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "data": {"setting": "on"},
                         "metadata": {"name": "again", "finalizers": ["example.com/a"]}})
    removed = remove(cluster, "configmap", "again", "--finalizer", "example.com/a", "--allow-live", "--confirm")
    assert removed.code == ExitCode.OK, removed
    cluster.api.ok("PATCH", cluster.path_of(cm) + "?fieldManager=widget-operator",
                   {"metadata": {"finalizers": ["example.com/a"]}}, content_type="application/merge-patch+json")
    report = json.loads(kfin("explain", "configmap", "again", "-n", cluster.namespace, "-o", "json",
                             "--kubeconfig", str(cluster.kubeconfig)).stdout)
    [finding] = report["findings"]
    [line] = [e for e in finding["evidence"] if "audit log" in e]
    assert line.startswith("kfin removed it at ") and 'field manager "widget-operator" added it back' in line
    assert finding["fix"].startswith("find out why widget-operator adds it back")


def test_a_finalizer_added_back_to_an_object_the_server_no_longer_tracks_is_said_plainly(cluster, audit_log):
    """Removing the only managed field of an object (a ConfigMap holding nothing but its finalizer) leaves it with
    no managedFields, and kube-apiserver records no field manager of such an object after that (its
    skipNonAppliedManager; seen on the real tier, where the test above failed with "a writer managedFields do not
    name added it back since"): kfin says that a writer added it back, in a sentence, and where to find who."""
    cm = stuck_configmap(cluster, name="bare", finalizers=("example.com/a",), delete=False)
    removed = remove(cluster, "configmap", "bare", "--finalizer", "example.com/a", "--allow-live", "--confirm")
    assert removed.code == ExitCode.OK, removed
    assert not cluster.get(cm)["metadata"].get("managedFields")
    cluster.api.ok("PATCH", cluster.path_of(cm) + "?fieldManager=widget-operator",
                   {"metadata": {"finalizers": ["example.com/a"]}}, content_type="application/merge-patch+json")
    assert not cluster.get(cm)["metadata"].get("managedFields")
    report = json.loads(kfin("explain", "configmap", "bare", "-n", cluster.namespace, "-o", "json",
                             "--kubeconfig", str(cluster.kubeconfig)).stdout)
    [finding] = report["findings"]
    [line] = [e for e in finding["evidence"] if "audit log" in e]
    assert line.startswith("kfin removed it at ") and line.endswith(
        "(audit log), and a writer added it back since; managedFields do not name that writer (the API server's "
        "audit log does)")
    assert finding["fix"].startswith("find out why its writer adds it back")


def test_bulk_removal_narrows_to_what_kfin_stuck_lists_with_the_same_flags(cluster, audit_log):
    """Issue 41, item 8: --kind, -l, --field-selector, --verdict and --older-than select for remove --all-stuck
    exactly what kfin stuck lists with the same flags; the dry run shows that table and changes nothing, and
    --confirm writes to nothing else."""
    ns = cluster.namespace

    def labelled(kind, name, app):
        made = cluster.create({"apiVersion": "v1", "kind": kind, "metadata": {
            "name": name, "labels": {"app": app}, "finalizers": ["example.com/gone"]}})
        cluster.delete(made)
        return made

    chosen = labelled("ConfigMap", "chosen", "x")
    others = [labelled("ConfigMap", "other-app", "y"), labelled("Secret", "other-kind", "x"),
              labelled("ConfigMap", "other-name", "x")]
    pvc = held_claim(cluster)  # HOLDING: its Pod mounts it
    cluster.api.merge_patch(cluster.path_of(pvc), {"metadata": {"labels": {"app": "x"}}})
    base = ("-n", ns, "--kubeconfig", str(cluster.kubeconfig))

    def listed(*flags):
        result = kfin("stuck", *base, "-o", "json", *flags)
        assert result.code in (0, ExitCode.PARTIAL), result.stderr
        return {(i["kind"], i["metadata"]["name"]) for i in json.loads(result.stdout)["items"]}

    def selected(*flags):
        seen = len(cluster.fake.requests) if cluster.is_fake else 0
        result = kfin("remove", "--all-stuck", *base, *flags)
        if cluster.is_fake:  # a dry run: kfin sent nothing but reads, and the removals it plans as dry runs
            assert {r.method for r in cluster.fake.requests[seen:] if not r.dry_run} == {"GET"}
        if f"Nothing to remove: no stuck object matches in namespace {ns}." in result.stderr:
            return set(), result
        header, *rows = result.stdout.splitlines()
        assert header.split() == ["KIND", "NAME", "FINALIZER", "VERDICT", "ACTION"], result.stdout
        return {tuple(row.split()[0:2]) for row in rows}, result

    narrow = ("--kind", "cm", "--kind", "pvc", "-l", "app=x", "--field-selector", "metadata.name!=other-name")
    cases = {
        ("--verdict", "ORPHANED", "--older-than", "0s"): {("ConfigMap", "chosen")},
        ("--verdict", "holding"): {("PersistentVolumeClaim", "data")},
        (): {("ConfigMap", "chosen"), ("PersistentVolumeClaim", "data")},
        ("--older-than", "1h"): set(),
    }
    for flags, expected in cases.items():
        assert listed(*narrow, *flags) == expected, flags
        found, result = selected(*narrow, *flags)
        assert found == expected, (flags, result.stdout, result.stderr)
    found, result = selected(*narrow, "--verdict", "ORPHANED")
    assert result.code == 0 and "Dry run: 1 to change, 0 refused; nothing was changed" in result.stderr
    assert "example.com/gone" in result.stdout and "remove" in result.stdout.split()
    for made in (chosen, *others):
        assert cluster.get(made)["metadata"]["finalizers"] == ["example.com/gone"]

    applied = kfin("remove", "--all-stuck", *base, *narrow, "--verdict", "ORPHANED", "--confirm", "--yes")
    assert applied.code == 0 and "done 1, refused 0, failed 0" in applied.stderr, applied.stderr
    assert cluster.eventually(lambda: cluster.get(chosen) is None, message="the chosen ConfigMap to go")
    for made in others:  # none of them was selected, whatever else they share with it
        assert cluster.get(made)["metadata"]["finalizers"] == ["example.com/gone"]
    assert [r["object"]["name"] for r in records(audit_log)] == ["chosen"]
    for made in others:
        cluster.strip_finalizers(made)


def test_narrowing_flags_belong_to_all_stuck(cluster):
    result = kfin("remove", "cm", "held", "-n", cluster.namespace, "--verdict", "ORPHANED",
                  "--kubeconfig", str(cluster.kubeconfig))
    assert result.code == ExitCode.USAGE and result.stderr.startswith("error: --kind, -l, --field-selector"), \
        result.stderr
