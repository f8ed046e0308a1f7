"""Names become paths: no argument can make kfin request anything but the object it names.

Every hostile name, namespace or kind is refused before a request is sent (exit 2, one `error:` line),
and the names that are valid path segments reach the server percent-encoded, as one segment.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfin.errors import ExitCode
from kfin.api.paths import api_path
from kfin.names import path_segment_problem
from tests.runner import kfin

SECRET_VALUE = "c2VjcmV0LXZhbHVl"  # base64 of secret-value: must never be printed


@pytest.fixture
def stage(fake, fake_kubeconfig, tmp_path, monkeypatch):
    """A Secret next to a stuck ConfigMap, in namespace `team`; the request log starts empty."""
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    fake.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    fake.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": "team"},
                "data": {"password": SECRET_VALUE}})
    fake.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "held", "namespace": "team", "finalizers": ["example.com/hold"]}})
    kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))  # fills the discovery cache
    fake.requests.clear()
    return fake


def object_requests(fake):
    """Requests that name one object (anything but discovery and whole-type lists)."""
    discovery = {"/version", "/api", "/apis", "/api/v1"}
    out = []
    for r in fake.requests:
        parts = r.path.strip("/").split("/")
        if r.path in discovery or (parts[0] == "apis" and len(parts) <= 3) or r.verb == "list":
            continue
        out.append(r)
    return out


HOSTILE_NAMES = ["../secrets/token", "..", ".", "a/b", "held%2F..", "", "x" * 300, "held\x1b[31m", "held\nx"]
HOSTILE_NAMESPACES = ["../..", "..", "team/secrets", "Team", "team?x=1", "-team", "team\x00", "a" * 64, "team#x"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
@pytest.mark.parametrize("command", [["explain", "cm"], ["remove", "cm"], ["graph", "cm"]])
def test_a_hostile_name_is_refused_before_any_request(stage, fake_kubeconfig, command, name):
    result = kfin(*command, name, "-n", "team", "--confirm" if command[0] == "remove" else "-o", *(
        [] if command[0] == "remove" else ["json"]), "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.USAGE, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: invalid name"), result.stderr
    assert "\x1b" not in result.stderr and "\x00" not in result.stderr
    assert stage.requests == []


@pytest.mark.parametrize("namespace", HOSTILE_NAMESPACES)
@pytest.mark.parametrize("command", [["stuck"], ["snapshot", "-f", "-"], ["explain", "cm", "held"],
                                     ["remove", "cm", "held", "--confirm"], ["graph", "namespace", "team"]])
def test_a_hostile_namespace_is_refused_before_any_request(stage, fake_kubeconfig, command, namespace):
    result = kfin(*command, "-n", namespace, "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.USAGE, result
    assert result.stderr.startswith("error: invalid namespace") and result.stderr.count("\n") == 1, result.stderr
    assert stage.requests == []


@pytest.mark.parametrize("kind", ["../../api/v1/secrets", "cm?x", "cm/held", "", "cm#", "secrets "])
def test_a_hostile_kind_is_refused(stage, fake_kubeconfig, kind):
    for command in (["explain", kind, "held"], ["stuck", "--kind", kind], ["graph", kind, "held"]):
        result = kfin(*command, "-n", "team", "--kubeconfig", str(fake_kubeconfig))
        assert result.code == ExitCode.USAGE, (command, result)
        if kind == "cm/held" and command[0] != "stuck":  # a valid KIND/NAME and a NAME again: one word too many
            assert "'held' is one argument too many" in result.stderr, result.stderr
        else:
            assert result.stderr.startswith("error: invalid resource type"), result.stderr
    assert stage.requests == []


def test_the_kubeconfig_namespace_is_checked_too(stage, tmp_path):
    kubeconfig = stage.kubeconfig(tmp_path / "evil", namespace="../../apis")
    result = kfin("stuck", "--kubeconfig", str(kubeconfig))
    assert result.code == ExitCode.CONFIG and "invalid namespace of context" in result.stderr, result
    assert stage.requests == []


@pytest.mark.parametrize("name", ["held#x", "held?dryRun=All", "held x", "held;drop", "hé"])
def test_a_name_that_is_a_valid_segment_reaches_only_its_own_url(stage, fake_kubeconfig, name):
    """`remove cm 'held#x' --confirm` used to patch "held": now it asks for "held#x", which does not exist."""
    result = kfin("remove", "cm", name, "-n", "team", "--confirm", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.NOT_FOUND, result
    own = f"/api/v1/namespaces/team/configmaps/{name}"
    assert [r.path for r in object_requests(stage)] == [own]
    # where it may be instead: lists of its own type only, metadata-only, the name sent as a field selector's value
    lists = [r for r in stage.requests if r.verb == "list"]
    assert {r.path for r in lists} <= {"/api/v1/configmaps", "/api/v1/namespaces/team/configmaps"}, lists
    assert all(r.metadata_only for r in lists)
    assert stage.cluster.find(stage.cluster.types[("", "configmaps")], "team", "held")["metadata"]["finalizers"] \
        == ["example.com/hold"]


def test_paths_are_made_of_percent_encoded_segments():
    assert api_path("api", "v1", "namespaces", "a/b", "configmaps", "../x?y#z") == \
        "/api/v1/namespaces/a%2Fb/configmaps/..%2Fx%3Fy%23z"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(alphabet=st.sampled_from(list("abc./%?#&=;: \\\x1b\n-_")) | st.characters(), max_size=12))
def test_any_name_reaches_only_the_named_object_and_never_a_secret(stage, fake_kubeconfig, name):
    stage.requests.clear()
    for command in (["explain", "cm", "-o", "json"], ["remove", "cm", "--confirm"]):
        # the name after `--`, as a shell user passes one that starts with "-"
        result = kfin(*command, "-n", "team", "--kubeconfig", str(fake_kubeconfig), "--", name)
        assert result.code in (ExitCode.OK, ExitCode.USAGE, ExitCode.NOT_FOUND, ExitCode.REFUSED), result
        assert SECRET_VALUE not in result.stdout + result.stderr
        if path_segment_problem(name):
            assert result.code == ExitCode.USAGE and result.stderr.count("\n") == 1, result
    own = f"/api/v1/namespaces/team/configmaps/{name}"
    assert all(r.path == own for r in object_requests(stage)), [r.path for r in object_requests(stage)]
    assert not any("secrets" in r.path for r in stage.requests)
    held = stage.cluster.find(stage.cluster.types[("", "configmaps")], "team", "held")
    assert held["metadata"]["finalizers"] == ["example.com/hold"]
    assert json.dumps(stage.cluster.find(stage.cluster.types[("", "secrets")], "team", "token")["data"]) == \
        json.dumps({"password": SECRET_VALUE})


@pytest.mark.parametrize("field, value", [
    ("name", ".."), ("name", "."), ("name", "%2e%2e"), ("name", "pods/../../secrets"), ("name", "pods\n"),
    ("name", "Secrets"), ("name", "a" * 254), ("kind", "Pod\x1b[31m"), ("kind", "1Pod"),
])
def test_discovery_names_are_checked_as_the_api_server_names_them(field, value):
    """Issue 27: a name from discovery becomes a path segment; an aggregated API could name a resource "..".
    Legacy and aggregated discovery alike refuse what the API server never serves."""
    from kfin.api.resources import parse_resource_list
    from kfin.api.shapes import ShapeError

    entry = {"name": "widgets", "kind": "Widget", "namespaced": True, "verbs": ["get", "list"]}
    entry[field] = value
    with pytest.raises(ShapeError, match="which the API server never serves"):
        parse_resource_list("example.com", "v1", {"resources": [entry]})


def test_discovery_entries_that_name_subresources_are_not_resource_types(fake, fake_kubeconfig):
    """Issue 41: an aggregated discovery entry naming a subresource (pods/exec, with list among its verbs) was taken
    for a type of its own: kfin listed /api/v1/pods/exec. Legacy discovery already left subresources out."""
    from tests.fakeapi import Fault

    def entry(name, kind, verbs, scope="Namespaced"):
        return {"resource": name, "responseKind": {"group": "", "version": "v1", "kind": kind}, "scope": scope,
                "verbs": verbs}

    core = [entry("namespaces", "Namespace", ["get", "list"], "Cluster"), entry("configmaps", "ConfigMap", ["get", "list"]),
            entry("pods/exec", "PodExecOptions", ["create", "get", "list"])]
    fake.faults.append(Fault(path="^/api$", body={"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                                                  "items": [{"metadata": {}, "versions": [
                                                      {"version": "v1", "resources": core, "freshness": "Current"}]}]}))
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.OK, result
    assert not [r.path for r in fake.requests if "exec" in r.path]


def test_discovery_names_kubernetes_serves_pass():
    from kfin.api.resources import parse_resource_list

    doc = {"resources": [{"name": n, "kind": k, "namespaced": True, "verbs": ["get", "list"]} for n, k in (
        ("pods", "Pod"), ("pods/log", "Pod"), ("customresourcedefinitions", "CustomResourceDefinition"),
        ("my-widgets", "My-Widget"))]}
    assert [t.resource for t in parse_resource_list("example.com", "v1", doc)] == ["pods", "customresourcedefinitions", "my-widgets"]
