"""The contract under any answer a server may give: every command, any endpoint kfin reads answering
junk (or failing), and kfin keeps its word: a documented exit code (never 70), at most one `error:`
line, no write without --confirm, no Secret data in any output."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfin.errors import ExitCode
from tests.fakeapi import Fault
from tests.runner import kfin

SECRET_VALUE = "c2VjcmV0LXZhbHVlLWtmaW4="
DOCUMENTED = {int(code) for code in ExitCode} - {ExitCode.INTERNAL}
ENDPOINTS = ["^/version$", "^/api$", "^/apis$", "^/api/v1$", "^/apis/apps/v1$", "^/api/v1/configmaps$",
             "^/api/v1/namespaces/team/configmaps$", "^/api/v1/namespaces/team/configmaps/held$",
             "^/api/v1/namespaces$", "^/api/v1/namespaces/team$", "^/api/v1/secrets$", "^/api/v1/pods$",
             "^/apis/rbac.authorization.k8s.io/v1/clusterroles$", "^/apis/apps/v1/deployments$",
             "^/apis/authentication.k8s.io/v1/selfsubjectreviews$"]
COMMANDS = [["version"], ["stuck", "-A", "-o", "json"], ["stuck", "-n", "team"], ["snapshot", "-A", "-f", "-"],
            ["explain", "cm", "held", "-n", "team"], ["explain", "ns", "team", "-o", "yaml"],
            ["graph", "namespace", "team"], ["graph", "cm", "held", "-n", "team", "-o", "dot"],
            ["remove", "cm", "held", "-n", "team"], ["remove", "-n", "team", "--all-stuck", "--yes"],
            ["remove", "cm", "held", "-n", "team", "--finalizer", "example.com/hold", "--server-dry-run"]]
JSON_JUNK = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                             st.sampled_from(["items", "metadata", "kind", "resources", "groups", "name", "versions",
                                              "continue", "status", "spec", "finalizers"]), inner, max_size=3),
                         max_leaves=8)
FAULTS = st.one_of(
    st.builds(lambda body: {"body": json.dumps(body).encode()}, JSON_JUNK),
    st.builds(lambda data: {"body": data}, st.binary(max_size=12)),
    st.sampled_from([{"status": 500}, {"status": 403}, {"status": 404}, {"status": 429}, {"drop": True}]))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(endpoint=st.sampled_from(ENDPOINTS), fault=FAULTS, command=st.sampled_from(COMMANDS))
def test_any_answer_keeps_the_contract(fake, fake_kubeconfig, tmp_path, monkeypatch, endpoint, fault, command):
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    if not fake.cluster.find(fake.cluster.types[("", "namespaces")], "", "team"):
        fake.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        fake.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": "team"},
                    "data": {"password": SECRET_VALUE}})
        fake.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "held", "namespace": "team", "finalizers": ["example.com/hold"]}})
    fake.faults[:] = [Fault(path=endpoint, **fault)]
    fake.requests.clear()
    result = kfin(*command, "--kubeconfig", str(fake_kubeconfig), "--refresh" if command[0] in (
        "stuck", "snapshot", "explain", "graph") else "--request-timeout=10s")
    assert result.code in DOCUMENTED, result
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    assert len([line for line in result.stderr.splitlines() if line.startswith("error:")]) <= 1, result.stderr
    assert SECRET_VALUE not in result.stdout + result.stderr
    writes = [r for r in fake.requests if r.method in ("PATCH", "PUT", "DELETE") or (
        r.method == "POST" and "review" not in r.path)]
    dry = [r for r in writes if r.query.get("dryRun") == ["All"]]
    assert writes == dry, [(r.method, r.path) for r in writes]
    held = fake.cluster.find(fake.cluster.types[("", "configmaps")], "team", "held")
    assert held["metadata"]["finalizers"] == ["example.com/hold"]
