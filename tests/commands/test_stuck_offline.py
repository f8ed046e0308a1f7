"""kfin stuck's parts that need no scenario cluster: kinds, families, durations, files, discovery cache,
and the fake-only situations (an unavailable aggregated API would block every namespace of a real cluster)."""

import json

import pytest

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.connection import Kube, Target
from kfin.api.discovery import discover
from kfin.api.resources import KindLookup, parse_resource_list
from kfin.core.read.catalog import Catalog
from kfin.core.explain.causes import family
from kfin.errors import ExitCode, NotFoundError
from kfin.util.durations import format_age, parse_duration
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin


@pytest.mark.parametrize("seconds, text", [(5, "5s"), (119, "119s"), (125, "2m5s"), (600, "10m"), (9000, "150m"),
                                          (4 * 3600 + 60 * 5, "4h5m"), (30 * 3600, "30h"), (4 * 86400 + 7200, "4d2h"),
                                          (40 * 86400, "40d"), (3 * 365 * 86400 + 86400 * 20, "3y20d")])
def test_ages_read_like_kubectl(seconds, text):
    assert format_age(seconds) == text


def test_durations():
    assert parse_duration("90") == 90 and parse_duration("1h30m") == 5400 and parse_duration("2d") == 172800
    with pytest.raises(ValueError):
        parse_duration("10 minutes")


def test_kinds_in_every_kubectl_form():
    lookup = KindLookup(builtin_resources())
    for text in ("pvc", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim"):
        assert lookup.find(text).resource == "persistentvolumeclaims"
    assert lookup.find("deploy.apps").resource == "deployments"
    assert lookup.find("deployments.v1.apps").group == "apps"
    assert lookup.find("events").group == ""  # core wins over events.k8s.io, as in kubectl
    assert lookup.find("events.events.k8s.io").group == "events.k8s.io"
    with pytest.raises(NotFoundError, match="did you mean persistentvolumeclaims"):
        lookup.find("persistentvolumeclaimz")
    # issue 29: two swapped letters matched persistentvolumes (pv is nearer by difflib's measure)
    with pytest.raises(NotFoundError, match=r"did you mean persistentvolumeclaims\?"):
        lookup.find("pcv")
    with pytest.raises(NotFoundError, match=r"did you mean deployments.apps\?"):
        lookup.find("delpoyment")


def test_builtin_kinds_match_discovery(fake_kubeconfig):
    """The built-in table, aggregated discovery and legacy discovery name the same types."""
    kube = Kube.connect(Target(kubeconfig=str(fake_kubeconfig)))
    resources, failed = discover(kube, refresh=True)
    served = {(r.group, r.resource, r.kind, r.namespaced, r.short_names) for r in resources}
    legacy = {(r.group, r.resource, r.kind, r.namespaced, r.short_names)
              for group, _, version in [("", [], "v1")] + kube.api_groups()
              for r in parse_resource_list(group, version, kube.resource_list(group, version))}
    table = {(r.group, r.resource, r.kind, r.namespaced, r.short_names) for r in builtin_resources()}
    assert not failed and served == table == legacy


@pytest.mark.parametrize("finalizer, name", [
    ("kubernetes.io/pvc-protection", "pvc-protection"), ("kubernetes.io/pv-protection", "pv-protection"),
    ("kubernetes", "namespace"), ("foregroundDeletion", "foregroundDeletion"), ("orphan", "orphan"),
    ("external-attacher/ebs-csi-aws-com", "volume"), ("external-provisioner.volume.kubernetes.io/finalizer", "volume"),
    ("batch.kubernetes.io/job-tracking", "job-tracking"), ("widgets.example.com/cleanup", "custom"),
    ("cleanup", "unknown")])
def test_finalizer_families(finalizer, name):
    assert family(finalizer, Catalog()).name == name


def test_kubectl_list_input_keeps_metadata_and_drops_secret_data(tmp_path):
    listing = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a", "uid": "1",
         "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["example.com/vault"]}, "data": {"p": "c2VjcmV0"}},
        {"apiVersion": "example.com/v1", "kind": "Policy", "metadata": {"name": "p", "namespace": "a", "uid": "2",
         "deletionTimestamp": "2026-01-02T00:00:00Z", "finalizers": ["example.com/x"]}, "spec": {"x": 1}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine", "namespace": "a", "uid": "3"}}]}
    path = tmp_path / "list.json"
    path.write_text(json.dumps(listing))
    result = kfin("stuck", "--from-snapshot", str(path), "-o", "json")
    items = json.loads(result.stdout)["items"]
    assert [(i["kind"], i["resource"], i["name"]) for i in items] == [("Secret", "secrets", "s"),
                                                                      ("Policy", "policies", "p")]
    assert kfin("stuck", "--from-snapshot", str(path), "--kind", "policies", "-o", "name").stdout == \
        "policy.example.com/p\n"


def test_bad_snapshot_files_are_usage_errors(tmp_path):
    assert kfin("stuck", "--from-snapshot", str(tmp_path / "missing.json")).code == ExitCode.USAGE
    (tmp_path / "bad.json").write_text("{not json")
    result = kfin("stuck", "--from-snapshot", str(tmp_path / "bad.json"))
    assert result.code == ExitCode.USAGE and "is not JSON" in result.stderr
    (tmp_path / "other.json").write_text('{"kind": "Pod"}')
    assert "neither a kfin snapshot" in kfin("stuck", "--from-snapshot", str(tmp_path / "other.json")).stderr


def test_discovery_is_revalidated_by_etag_and_a_new_api_group_shows_at_once(fake, fake_kubeconfig):
    base = ("stuck", "-A", "--kubeconfig", str(fake_kubeconfig), "-o", "json")
    assert kfin(*base).code == 0
    discovery = lambda: [r for r in fake.requests if r.path in ("/api", "/apis") and "apidiscovery" in r.accept]
    assert [r.status for r in discovery()] == [200, 200]
    fake.requests.clear()
    kfin(*base)
    assert [r.status for r in discovery()] == [304, 304]  # the cache is current
    assert not [r for r in fake.requests if r.path.startswith("/apis/") and r.path.count("/") == 3]
    fake.requests.clear()
    kfin(*base, "--refresh")
    assert [r.status for r in discovery()] == [200, 200]
    api = RawClient(fake.url, "admin-token")
    api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {"metadata": {"name": "gizmos.acme.io"},
               "spec": {"group": "acme.io", "scope": "Namespaced", "names": {"plural": "gizmos", "kind": "Gizmo"},
                        "versions": [{"name": "v1", "served": True, "storage": True}]}})
    api.create("/apis/acme.io/v1/namespaces/default/gizmos", {"apiVersion": "acme.io/v1", "kind": "Gizmo",
               "metadata": {"name": "g", "finalizers": ["acme.io/x"]}})
    api.delete("/apis/acme.io/v1/namespaces/default/gizmos/g")
    assert [i["name"] for i in json.loads(kfin(*base).stdout)["items"]] == ["g"]


def test_an_unavailable_api_group_is_reported_and_the_rest_scanned(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    api.create("/apis/apiregistration.k8s.io/v1/apiservices", {"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {
        "group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
        "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443}}})
    api.create("/api/v1/namespaces", {"metadata": {"name": "team"}})
    api.delete("/api/v1/namespaces/team")
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig), "-o", "json")
    assert result.code == ExitCode.PARTIAL
    assert "warning: discovery of metrics.k8s.io/v1beta1 failed: service unavailable (503)" in result.stderr
    report = json.loads(result.stdout)
    assert report["failures"] == [{"what": "discovery", "target": "metrics.k8s.io/v1beta1",
                                   "reason": "ServiceUnavailable", "message": report["failures"][0]["message"]}]
    [namespace] = report["items"]
    assert namespace["name"] == "team"
    assert namespace["blocker"] == ("namespace: discovery of metrics.k8s.io/v1beta1 fails (an unavailable APIService), "
                                    "so the namespace controller cannot finish")


def test_aggregated_api_without_metadata_support_is_still_scanned(fake, fake_kubeconfig):
    fake.add_aggregated_backend("metrics.k8s.io", "v1beta1", [
        {"name": "nodes", "kind": "NodeMetrics", "namespaced": False, "verbs": ["get", "list"]}],
        supports_metadata=False)
    api = RawClient(fake.url, "admin-token")
    api.create("/apis/apiregistration.k8s.io/v1/apiservices", {"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {
        "group": "metrics.k8s.io", "version": "v1beta1", "service": {"namespace": "kube-system", "name": "m"}}})
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == 0, result.stderr
    assert any(r.path == "/apis/metrics.k8s.io/v1beta1/nodes" and r.status == 200 for r in fake.requests)


def test_a_slow_or_failing_resource_type_is_a_partial_result(fake, fake_kubeconfig):
    from tests.fakeapi import Fault

    fake.faults.append(Fault(path="/leases$", status=500))
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL and "list of leases.coordination.k8s.io failed" in result.stderr


def test_several_contexts_add_a_context_column(fake, tmp_path):
    from tests.fakeapi import FakeAPIServer

    other = FakeAPIServer().start()
    try:
        for server in (fake, other):
            api = RawClient(server.url, "admin-token")
            api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": f"held-{str(server is fake).lower()}",
                                                                              "finalizers": ["example.com/b"]}})
            api.delete(f"/api/v1/namespaces/default/configmaps/held-{str(server is fake).lower()}")
        config = json.loads(fake.kubeconfig(tmp_path / "a").read_text())
        second = json.loads(other.kubeconfig(tmp_path / "b").read_text())
        config["clusters"].append({"name": "other", "cluster": second["clusters"][0]["cluster"]})
        config["contexts"].append({"name": "other", "context": {"cluster": "other", "user": "admin",
                                                                "namespace": "default"}})
        (tmp_path / "merged").write_text(json.dumps(config))
        result = kfin("stuck", "--kubeconfig", str(tmp_path / "merged"), "--context", "fake", "--context", "other")
        assert result.code == 0, result.stderr
        lines = result.stdout.splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith("CONTEXT"))
        assert {line.split()[0] for line in lines[header + 1:]} == {"fake", "other"}
        # the root causes above the table: one per cluster, each saying which
        roots = "\n".join(lines[:header])
        assert "[fake] " in roots and "[other] " in roots
        every = kfin("stuck", "--kubeconfig", str(tmp_path / "merged"), "--all-contexts", "-o", "json")
        # fake-viewer is a third context of the same server: its items are there too
        assert {i["context"] for i in json.loads(every.stdout)["items"]} == {"fake", "fake-viewer", "other"}
    finally:
        other.stop()


def _event(api: str, **fields) -> dict:
    meta = {"name": "watched.held", "namespace": "a", "uid": "e-1", "finalizers": ["example.com/keep"],
            "deletionTimestamp": "2026-01-01T00:00:00Z"}
    return {"apiVersion": api, "kind": "Event", "metadata": meta, **fields}


CORE_EVENT = _event("v1", involvedObject={"kind": "ConfigMap", "name": "watched", "namespace": "a"}, reason="Held")
EVENTS_V1_EVENT = _event("events.k8s.io/v1", regarding={"kind": "ConfigMap", "name": "watched", "namespace": "a"},
                         reason="Held")


def test_an_event_filed_under_both_apis_is_one_stuck_object(tmp_path):
    """One Event is served by core v1 and events.k8s.io/v1 (one storage in kube-apiserver); a snapshot written
    by an older kfin, or a kubectl List of both, holds it twice. It is one row, found by either API's name."""
    resources = [{"group": "", "version": "v1", "resource": "events", "kind": "Event", "namespaced": True,
                  "verbs": ["list"]},
                 {"group": "events.k8s.io", "version": "v1", "resource": "events", "kind": "Event",
                  "namespaced": True, "verbs": ["list"]}]
    snapshot = tmp_path / "old-snapshot.json"
    snapshot.write_text(json.dumps({"apiVersion": "kfin.dev/v1", "kind": "Snapshot", "resources": resources,
                                    "objects": [CORE_EVENT, EVENTS_V1_EVENT]}))
    listing = tmp_path / "list.json"
    listing.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [EVENTS_V1_EVENT, CORE_EVENT]}))
    for path in (snapshot, listing):
        for kind in ((), ("--kind", "events"), ("--kind", "events.events.k8s.io")):
            rows = json.loads(kfin("stuck", "--from-snapshot", str(path), *kind, "-o", "json").stdout)["items"]
            assert [(r["apiVersion"], r["name"]) for r in rows] == [("v1", "watched.held")], (path.name, kind)
        explained = kfin("explain", "events.events.k8s.io", "watched.held", "-n", "a", "--from-snapshot", str(path))
        assert explained.code == 0 and "example.com/keep" in explained.stdout


def test_an_event_only_under_events_k8s_io_is_found_by_either_name(tmp_path):
    listing = tmp_path / "list.json"
    listing.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [EVENTS_V1_EVENT]}))
    for kind in ("events", "events.events.k8s.io"):
        rows = json.loads(kfin("stuck", "--from-snapshot", str(listing), "--kind", kind, "-o", "json").stdout)
        assert [(r["apiVersion"], r["name"]) for r in rows["items"]] == [("events.k8s.io/v1", "watched.held")]
        explained = kfin("explain", kind, "watched.held", "-n", "a", "--from-snapshot", str(listing))
        assert explained.code == 0 and "example.com/keep" in explained.stdout
