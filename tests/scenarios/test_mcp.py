"""kfin mcp on a cluster, through the SDK's own client over stdio: a removal goes through only with a fresh digest
and --allow-writes, a stale digest is refused, and a running controller that lost its grant is answered with the
missing grant and no removal."""

import pytest

pytest.importorskip("mcp", reason="kfin mcp's extra (pip install -e '.[test]' installs it)")

from tests.mcp_client import CLIENT, document, error_line, with_kfin_mcp  # noqa: E402
from tests.scenarios.test_explain import RBAC, running_deployment  # noqa: E402
from tests.scenarios.test_remove import records, stuck_configmap  # noqa: E402


def started(cluster, audit_log, *flags):
    return ["--kubeconfig", cluster.kubeconfig, "-n", cluster.namespace, "--audit-log", audit_log, *flags]


def plan_args(name="held", **more):
    return {"kind": "configmap", "name": name, **more}


def test_a_removal_goes_through_only_with_a_fresh_digest_and_writes_allowed(cluster, tmp_path):
    audit_log = tmp_path / "audit.jsonl"
    cm = stuck_configmap(cluster)

    async def read_only(session):
        planned = document(await session.call_tool("plan_removal", plan_args()))
        return planned, await session.call_tool("apply_removal", {"digest": planned["digest"]})

    planned, applied = with_kfin_mcp(started(cluster, audit_log), read_only)
    assert planned["remove"] == ["example.com/a", "example.com/b"] and planned["writesAllowed"] is False
    assert planned["object"]["uid"] == cm["metadata"]["uid"]
    assert planned["object"]["resourceVersion"] == cluster.get(cm)["metadata"]["resourceVersion"]
    assert [op["op"] for op in planned["patch"]] == ["test", "test", "remove", "remove"]
    assert "started without --allow-writes" in error_line(applied)
    assert cluster.get(cm)["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    assert records(audit_log) == []

    async def writable(session):
        forged = await session.call_tool("apply_removal", {"digest": "sha256:" + "0" * 64})
        one = document(await session.call_tool("plan_removal", plan_args(finalizers=["example.com/a"])))
        applied = await session.call_tool("apply_removal", {"digest": one["digest"]})
        again = await session.call_tool("apply_removal", {"digest": one["digest"]})
        return forged, one, applied, again

    forged, one, applied, again = with_kfin_mcp(started(cluster, audit_log, "--allow-writes"), writable)
    assert "no removal was planned with this digest" in error_line(forged)
    assert one["remove"] == ["example.com/a"] and one["writesAllowed"] is True
    done = document(applied)
    assert done["result"] == "removed" and done["removed"] == ["example.com/a"] and done["ok"] is True
    assert cluster.get(cm)["metadata"]["finalizers"] == ["example.com/b"]
    assert "no removal was planned with this digest" in error_line(again)  # a digest is used once

    async def last(session):  # the last finalizer, then kfin wait sees it go
        planned = document(await session.call_tool("plan_removal", plan_args()))
        applied = document(await session.call_tool("apply_removal", {"digest": planned["digest"]}))
        waited = document(await session.call_tool("wait", {"kind": "configmap", "name": "held", "timeout_seconds": 60,
                                                           "uid": cm["metadata"]["uid"]}))
        return planned, applied, waited

    planned, applied, waited = with_kfin_mcp(started(cluster, audit_log, "--allow-writes"), last)
    assert planned["remove"] == ["example.com/b"] and applied["result"] == "removed"
    assert waited["gone"] is True and waited["exitCode"] == 0
    assert cluster.get(cm) is None
    record, last_record = records(audit_log)
    assert last_record["removed"] == ["example.com/b"] and last_record["mcpClient"] == record["mcpClient"]
    assert record["mcpClient"] == f"{CLIENT.name} {CLIENT.version}" and record["removed"] == ["example.com/a"]
    assert record["object"]["uid"] == cm["metadata"]["uid"] and record["forced"] is False
    assert record["verdicts"] == {"example.com/a": "ORPHANED", "example.com/b": "ORPHANED"}


def test_a_stale_digest_is_refused(cluster, tmp_path):
    audit_log = tmp_path / "audit.jsonl"
    cm = stuck_configmap(cluster)
    path = cluster.path_of(cm)

    async def body(session):
        planned = document(await session.call_tool("plan_removal", plan_args()))
        # the object changes after the plan (a label: the finalizers are the same, its resourceVersion is not),
        # by someone at a terminal (kubectl label's field manager)
        cluster.api.ok("PATCH", path + "?fieldManager=kubectl-label", {"metadata": {"labels": {"changed": "yes"}}},
                       content_type="application/merge-patch+json")
        return planned, await session.call_tool("apply_removal", {"digest": planned["digest"]})

    planned, applied = with_kfin_mcp(started(cluster, audit_log, "--allow-writes"), body)
    line = error_line(applied)
    assert "changed since plan_removal" in line and "plan it again" in line
    now = cluster.get(cm)["metadata"]
    assert now["resourceVersion"] != planned["object"]["resourceVersion"] and now["resourceVersion"] in line
    assert now["finalizers"] == ["example.com/a", "example.com/b"] and records(audit_log) == []


@pytest.mark.controllers
def test_a_running_controller_forbidden_to_update_is_answered_with_the_missing_grant(cluster, tmp_path):
    """SREGym's finalizer deadlock: the operator runs but its Role lost patch and update on its objects. Through MCP,
    kfin names the grant and removes nothing, even asked by name and with writes allowed."""
    audit_log = tmp_path / "audit.jsonl"
    group = cluster.widget_crd()
    running_deployment(cluster, "widget-operator", "widget-operator")
    cluster.create({"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "widget-reader"}, "rules": [
        {"apiGroups": [group], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]})
    cluster.create({"apiVersion": RBAC, "kind": "RoleBinding", "metadata": {"name": "widget-reader"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": "widget-operator",
                                  "namespace": cluster.namespace}]})
    path = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"
    cluster.api.ok("POST", f"{path}?fieldManager=widget-operator",
                   {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "finalizers": [f"{group}/x"]}})
    cluster.delete(f"{path}/w1")
    widget = {"kind": f"widgets.{group}", "name": "w1"}
    grant = f"grant ServiceAccount {cluster.namespace}/widget-operator update and patch on widgets.{group}"

    async def body(session):
        return (await session.call_tool("explain", widget),
                await session.call_tool("stuck", {}),
                await session.call_tool("plan_removal", widget),
                await session.call_tool("plan_removal", dict(widget, finalizers=[f"{group}/x"])),
                await session.call_tool("apply_removal", {"digest": "sha256:" + "0" * 64}))

    explained, listed, planned, named, applied = with_kfin_mcp(started(cluster, audit_log, "--allow-writes"), body)
    [f] = document(explained)["findings"]
    assert f["verdict"] == "STALLED" and f["controllerAlive"] is True
    assert f"forbidden to update widgets.{group}" in f["condition"] and f["fix"].startswith(grant)
    [item] = [i for i in document(listed)["items"] if i["metadata"]["name"] == "w1"]
    assert item["verdict"] == "STALLED"
    for plan in (document(planned), document(named)):  # refused, by default and asked by name: the grant is named
        assert plan["digest"] is None and plan["remove"] == [] and plan["patch"] is None
        assert plan["refused"].startswith("refused to remove finalizers from") and grant in plan["refused"]
    assert "kfin mcp removes only what kfin proved nothing else will remove" in document(named)["refused"]
    assert planned.meta == {"exitCode": 10}
    assert "no removal was planned with this digest" in error_line(applied)
    assert cluster.get(f"{path}/w1")["metadata"]["finalizers"] == [f"{group}/x"] and records(audit_log) == []
    cluster.strip_finalizers(f"{path}/w1")
