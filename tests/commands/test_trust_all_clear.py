"""Never a false all-clear: what kfin could not read is never reported as "nothing stuck"."""

import json
import socket

import pytest

from kfin.errors import ExitCode
from tests.fakeapi import Fault
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin


def widget_crd(api, plural, kind, group="acme.io"):
    api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": kind},
                 "versions": [{"name": "v1", "served": True, "storage": True}]}})


def stuck_custom(api, plural, kind, name, group="acme.io"):
    api.create(f"/apis/{group}/v1/namespaces/default/{plural}", {
        "apiVersion": f"{group}/v1", "kind": kind, "metadata": {"name": name, "finalizers": [f"{group}/x"]}})
    api.delete(f"/apis/{group}/v1/namespaces/default/{plural}/{name}")


def test_a_new_kind_in_a_known_group_version_is_scanned_at_once(fake, fake_kubeconfig):
    """The discovery cache knew acme.io/v1 with Gadgets only; a Sprocket kind joins it and is stuck."""
    api = RawClient(fake.url, "admin-token")
    widget_crd(api, "gadgets", "Gadget")
    base = ("--kubeconfig", str(fake_kubeconfig))
    assert kfin("stuck", "-A", *base).code == 0  # caches acme.io/v1 with gadgets alone
    widget_crd(api, "sprockets", "Sprocket")
    stuck_custom(api, "sprockets", "Sprocket", "s1")
    result = kfin("stuck", "-A", "-o", "json", *base)
    assert result.code == 0, result.stderr
    assert [(i["kind"], i["name"]) for i in json.loads(result.stdout)["items"]] == [("Sprocket", "s1")]
    explained = kfin("explain", "sprockets", "s1", "-n", "default", *base)
    assert explained.code == 0 and "acme.io/x" in explained.stdout, explained


MALFORMED = [None, [1, 2, 3], "text", {"items": 5}, {"kind": "ConfigMapList"},
             {"items": [{"metadata": 5}]}, {"items": [{"metadata": {"name": "x", "finalizers": "a"}}]},
             {"items": [{"metadata": {"name": "x", "ownerReferences": [7]}}]},
             {"items": [], "metadata": {"continue": 5}},
             # issue 41: booleans as strings ("no" counted as a blocking owner) passed as well-formed
             {"items": [{"metadata": {"name": "x", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["a.io/x"],
                                      "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o",
                                                           "uid": "u", "blockOwnerDeletion": "no"}]}}]},
             {"items": [{"metadata": {"name": "x", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                                        "name": "o", "uid": "u", "controller": 1}]}}]}]


@pytest.mark.parametrize("body", MALFORMED, ids=[json.dumps(b)[:30] for b in MALFORMED])
def test_a_malformed_list_is_a_failure_of_that_type(fake, fake_kubeconfig, body):
    fake.faults.append(Fault(path="^/api/v1/configmaps$", body=json.dumps(body).encode()))
    result = kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL, result
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert [(f["what"], f["target"], f["reason"]) for f in report["failures"]] == [("list", "configmaps", "BadResponse")]
    assert "warning: list of configmaps failed" in result.stderr


@pytest.mark.parametrize("path", ["^/apis$", "^/api$", "^/version$"])
@pytest.mark.parametrize("body", [None, [1, 2, 3], {"kind": "APIGroupDiscoveryList", "items": 5},
                                  {"groups": [{"name": 5}]}])
def test_malformed_discovery_is_a_one_line_error(fake, fake_kubeconfig, path, body):
    fake.faults.append(Fault(path=path, body=json.dumps(body).encode()))
    command = ["version"] if path == "^/version$" else ["stuck", "-A"]
    result = kfin(*command, "--kubeconfig", str(fake_kubeconfig))
    if path == "^/version$" and isinstance(body, dict):
        assert result.code == 0  # a /version without gitVersion still says what it can
        return
    if path == "^/api$" and body == {"groups": [{"name": 5}]}:  # not aggregated: read the legacy way, in full
        assert result.code == 0 and any(r.path == "/api/v1" for r in fake.requests), result
        return
    assert result.code == ExitCode.API, result
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "No stuck objects" not in result.stderr + result.stdout


def test_a_server_that_serves_no_core_types_is_not_all_clear(fake, fake_kubeconfig):
    fake.faults.append(Fault(path="^/api$", body={"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                                                  "items": [{"metadata": {}, "versions": [
                                                      {"version": "v1", "resources": [], "freshness": "Current"}]}]}))
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.API and "lists no namespaces" in result.stderr, result


def test_when_no_context_can_be_read_it_is_an_error(tmp_path):
    ports = []
    for _ in range(2):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
    config = {"apiVersion": "v1", "kind": "Config",
              "clusters": [{"name": f"c{p}", "cluster": {"server": f"http://127.0.0.1:{p}"}} for p in ports],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": f"ctx{i}", "context": {"cluster": f"c{p}", "user": "u"}} for i, p in enumerate(ports)],
              "current-context": "ctx0"}
    (tmp_path / "kc").write_text(json.dumps(config))
    for args in (["--context", "ctx0", "--context", "ctx1"], ["--all-contexts"]):
        result = kfin("stuck", "--kubeconfig", str(tmp_path / "kc"), *args)
        assert result.code == ExitCode.UNREACHABLE, result
        assert result.stderr.startswith("error: no context could be read: ctx0: ") and "ctx1: " in result.stderr
        assert "No stuck objects" not in result.stderr


def test_a_ghost_is_not_reported_gone(fake, fake_kubeconfig, tmp_path, monkeypatch):
    """A namespace forced through /finalize with content left: the content is still stored, every write
    answers 404 for the namespace (captures 35-37 of causes). kfin says so and records a failure."""
    audit = tmp_path / "audit.jsonl"
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(audit))
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"metadata": {"name": "doomed"}})
    api.create("/api/v1/namespaces/doomed/configmaps", {"metadata": {"name": "left", "finalizers": ["example.com/hold"]}})
    api.delete("/api/v1/namespaces/doomed")
    namespace = api.get("/api/v1/namespaces/doomed")
    namespace["spec"]["finalizers"] = []
    api.ok("PUT", "/api/v1/namespaces/doomed/finalize", namespace)
    assert api.send("GET", "/api/v1/namespaces/doomed")[0] == 404
    refused = kfin("remove", "cm", "left", "-n", "doomed", "--finalizer", "example.com/hold", "--confirm",
                   "--kubeconfig", str(fake_kubeconfig))
    assert refused.code == ExitCode.REFUSED and 'its namespace "doomed" no longer exists' in refused.stderr
    # Forced past that refusal, the PATCH answers 404 for the namespace: still not "gone"
    result = kfin("remove", "cm", "left", "-n", "doomed", "--finalizer", "example.com/hold", "--confirm", "--force",
                  "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.API, result
    # a failed removal is an error line on stderr (issue 27), not a line of data
    assert any(line.startswith("error: failed: ConfigMap/doomed/left: ") for line in result.stderr.splitlines())
    assert 'namespace "doomed" no longer exists' in result.stderr
    assert "already gone" not in result.stdout + result.stderr
    [record] = [json.loads(line) for line in audit.read_text().splitlines()]
    assert record["result"] == "failed" and record["finalizersAfter"] == ["example.com/hold"]
    assert api.get("/api/v1/namespaces/doomed/configmaps/left")["metadata"]["finalizers"] == ["example.com/hold"]


@pytest.mark.parametrize("body", [
    {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "InternalError", "message": "etcd down"},
    {"kind": "Status", "apiVersion": "v1", "items": []},
], ids=["failure", "with-items"])
def test_a_status_answered_with_200_is_a_failure_not_an_empty_list(fake, fake_kubeconfig, body):
    """Issue 27: a list answered 200 with a Status body was read as empty: "No stuck objects found", exit 0."""
    fake.faults.append(Fault(path="^/api/v1/configmaps$", body=json.dumps(body).encode()))
    result = kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL, result
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert [(f["what"], f["target"]) for f in report["failures"]] == [("list", "configmaps")]
    assert "answered a Status" in result.stderr
    table = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert table.code == ExitCode.PARTIAL and "No stuck objects found" not in table.stdout + table.stderr
    assert "the scan is incomplete" in table.stderr


def test_a_continue_token_that_comes_back_is_a_failure_not_an_endless_list(fake, fake_kubeconfig):
    """Issue 27: a server that answers the same continue token forever would be paged forever."""
    page = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"continue": "again"}, "items": []}
    fake.faults.append(Fault(path="^/api/v1/configmaps$", body=json.dumps(page).encode()))
    result = kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL, result
    assert "a continue token it gave before" in result.stderr
    assert sum(1 for r in fake.requests if r.path == "/api/v1/configmaps") == 2


def test_json_nested_too_deeply_is_a_failure_never_an_internal_error(fake, fake_kubeconfig, tmp_path):
    """Issue 27: json's decoder recurses; a server (or a snapshot) nesting arrays 100,000 deep gave exit 70."""
    fake.faults.append(Fault(path="^/api/v1/configmaps$", body=b"[" * 100_000 + b"]" * 100_000))
    result = kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL, result
    assert "nested too deeply" in result.stderr and "Traceback" not in result.stderr
    snapshot = tmp_path / "deep.json"
    snapshot.write_text('{"apiVersion": "kfin.dev/v1", "kind": "Snapshot", "objects": [' + "[" * 100_000
                        + "]" * 100_000 + "]}")
    offline = kfin("stuck", "-A", "--from-snapshot", str(snapshot))
    assert offline.code == ExitCode.USAGE and offline.stderr == f"error: {snapshot} is nested too deeply to be a snapshot\n"


def test_an_answer_larger_than_the_cap_is_a_failure_not_a_memory_blowup(fake, fake_kubeconfig, monkeypatch):
    """Issue 27: no limit on an answer's size (an endless chunked list, a decompression bomb). The cap is
    counted after decompression; KFIN_MAX_ANSWER_MB sets it (256 by default; 1 here)."""
    monkeypatch.setenv("KFIN_MAX_ANSWER_MB", "1")
    page = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": [], "padding": "x" * (2 << 20)}
    fake.faults.append(Fault(path="^/api/v1/configmaps$", body=json.dumps(page).encode()))
    result = kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL, result
    assert "an answer larger than 1 MiB: refused" in result.stderr


def test_a_decompression_bomb_is_refused_by_what_it_inflates_to(fake, fake_kubeconfig, monkeypatch):
    """Issue 27: a few KiB of gzip that inflate to 64 MiB. The cap counts decompressed bytes, so the answer is
    refused after about 1 MiB is inflated, whatever Content-Encoding the server chose to send."""
    import gzip

    monkeypatch.setenv("KFIN_MAX_ANSWER_MB", "1")
    inflated = b'{"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": [], "padding": "' \
        + b"x" * (64 << 20) + b'"}'
    bomb = gzip.compress(inflated, compresslevel=9)
    assert len(bomb) < 200 * 1024
    fake.faults.append(Fault(path="^/api/v1/configmaps$", body=bomb, headers={"Content-Encoding": "gzip"}))
    result = kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL, result
    assert "an answer larger than 1 MiB: refused" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("served", [False, True], ids=["gone", "still-served"])
def test_a_type_gone_between_discovery_and_its_list_holds_nothing(fake, fake_kubeconfig, served):
    """A CRD deleted while kfin scans (helm uninstall beside it; seen on the real tier, where a scenario's CRD went
    while the next one scanned): its list answers kube-apiserver's plain 404. When its group version no longer
    serves it, it holds nothing and the scan is complete; when discovery still lists it (an aggregated API's
    backend answering 404), the list failed."""
    api = RawClient(fake.url, "admin-token")
    widget_crd(api, "gadgets", "Gadget")
    page_not_found = dict(status=404, body=b"404 page not found\n", content_type="text/plain; charset=utf-8")
    fake.faults.append(Fault(path="^/apis/acme.io/v1/namespaces/default/gadgets$", **page_not_found))
    if not served:
        fake.faults.append(Fault(path="^/apis/acme.io/v1$", **page_not_found))
    result = kfin("stuck", "-n", "default", "-o", "json", "--exit-code", "--kubeconfig", str(fake_kubeconfig))
    report = json.loads(result.stdout)
    if served:
        assert result.code == ExitCode.PARTIAL and report["complete"] is False, result
        assert [(f["what"], f["target"]) for f in report["failures"]] == [("list", "gadgets.acme.io in namespace default")]
    else:
        assert result.code == ExitCode.OK and report["complete"] is True and report["failures"] == [], result
        assert "warning" not in result.stderr


def test_preflight_of_a_deployment_whose_pods_cannot_be_listed_says_so(fake, fake_kubeconfig):
    """What a Deployment owns is read before it is predicted (its ReplicaSet and Pods): a list that fails there is
    named in couldNotRead and makes the answer partial, never a silent all-clear."""
    api = RawClient(fake.url, "admin-token")
    api.create("/apis/apps/v1/namespaces/default/deployments", {"metadata": {"name": "web"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    fake.faults.append(Fault(path="^/api/v1/namespaces/default/pods$", status=500))
    result = kfin("preflight", "deployment", "web", "-n", "default", "-o", "json", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL, result
    report = json.loads(result.stdout)
    assert "pods in namespace default" in report["couldNotRead"], report["couldNotRead"]
    assert [d["kind"] for d in report["wouldDelete"]] == ["ReplicaSet"]  # its Pod could not be read
