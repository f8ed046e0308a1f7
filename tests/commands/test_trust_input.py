"""Bad input gets one clear line: snapshots, kubectl Lists and discovery caches of any shape."""

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.paths import PROJECT

EXAMPLE = json.loads((PROJECT / "examples" / "stuck-cluster.json").read_text())
ALLOWED = {ExitCode.OK, ExitCode.USAGE, ExitCode.NOT_FOUND, ExitCode.PARTIAL}
COMMANDS = [["stuck", "-A", "-o", "json"], ["stuck", "-A"], ["graph", "namespace", "shop"],
            ["graph", "namespace", "shop", "-o", "json"], ["explain", "pvc", "data-postgres-0", "-n", "shop"],
            ["explain", "pv", "pvc-7f3a91"], ["explain", "ns", "team-a"], ["explain", "deploy", "web", "-n", "shop"],
            ["explain", "databases.acme.io", "orders", "-n", "team-a", "-o", "json"]]


def paths(value, prefix=()):
    """Every path into a JSON value."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, prefix + (index,))


ALL_PATHS = [p for p in paths(EXAMPLE) if p]
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.text(max_size=3), st.just([]), st.just({}),
                 st.just([1, "a", None]), st.just({"a": 1}), st.just([{"name": 5}]))


def mutated(path, value):
    document = copy.deepcopy(EXAMPLE)
    node = document
    for key in path[:-1]:
        node = node[key]
    if value == "<delete>":
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return document


def check(result):
    assert result.code in ALLOWED, result
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    if result.code == ExitCode.USAGE:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, result.stderr


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(ALL_PATHS), value=st.one_of(JUNK, st.just("<delete>")),
       command=st.sampled_from(COMMANDS))
def test_any_malformed_snapshot_is_a_clear_error_never_a_crash(tmp_path, path, value, command):
    file = tmp_path / "snapshot.json"
    file.write_text(json.dumps(mutated(path, value)))
    check(kfin(*command, "--from-snapshot", str(file)))


@pytest.mark.parametrize("document, says", [
    ({"apiVersion": "kfin.dev/v1", "kind": "Snapshot", "objects": [5]}, "objects[0]"),
    ({"apiVersion": "kfin.dev/v1", "kind": "Snapshot", "objects": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                                   "metadata": {"name": "a", "finalizers": "x"}}]},
     "metadata.finalizers"),
    ({"apiVersion": "kfin.dev/v1", "kind": "Snapshot", "resources": [{"group": 1}], "objects": []}, "resources[0]"),
    ({"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": []}]}, "items[0]"),
    ({"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": 5, "kind": "Pod", "metadata": {"name": "a"}}]},
     "apiVersion"),
    ({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p", "ownerReferences": {}}}]},
     "ownerReferences"),
    ({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u", "controller": "yes"}]}}]},
     "metadata.ownerReferences is a list, not a list of owner references"),
    # issue 27: a deletionTimestamp that is not a time was shown as Terminating for "0s"
    ({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "metadata": {
        "name": "p", "deletionTimestamp": "yesterday", "finalizers": ["a.io/x"]}}]},
     "metadata.deletionTimestamp is a string, not an RFC 3339 time"),
    ({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "metadata": {
        "name": "p", "deletionTimestamp": "2026-13-45T00:00:00Z", "finalizers": ["a.io/x"]}}]},
     "metadata.deletionTimestamp is a string, not an RFC 3339 time"),
])
def test_a_malformed_item_is_named(tmp_path, document, says):
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(document))
    for command in (["stuck", "-A"], ["graph", "namespace", "default"]):
        result = kfin(*command, "--from-snapshot", str(file))
        assert result.code == ExitCode.USAGE, result
        assert result.stderr.startswith(f"error: {file}: ") and says in result.stderr, result.stderr


@pytest.mark.parametrize("cache", ['{"resources": 5}', "[]", "null", '{"groupVersions": [], "etags": {}, '
                                   '"resources": [{"group": 5}]}', "\xff garbage"])
def test_a_corrupt_discovery_cache_is_rebuilt(fake, fake_kubeconfig, cache):
    from kfin.api.discovery import cache_file

    path = cache_file(fake.url)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cache, errors="surrogateescape")
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.OK, result
    assert "groupVersions" in json.loads(path.read_text())
