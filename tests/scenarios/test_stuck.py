"""kfin stuck on a cluster: every Terminating object of every kind, its blocker, filters and formats."""

import json
import re

import pytest
import yaml

from kfin.errors import ExitCode
from tests.runner import kfin

CRD_GROUP = "example.com"


def configmap(name, **meta):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": {"k": "v"}}


def stuck_scene(cluster):
    """A ConfigMap and a Secret held by custom finalizers, a Widget whose operator is gone, a Service."""
    for obj in (configmap("held", finalizers=["example.com/block"]),
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "finalizers": ["example.com/vault"]},
                 "stringData": {"password": "hunter2"}},
                {"apiVersion": "v1", "kind": "Service", "metadata": {
                    "name": "lb", "finalizers": ["service.kubernetes.io/load-balancer-cleanup"]},
                 "spec": {"ports": [{"port": 80}]}}):
        cluster.delete(cluster.create(obj))
    group = cluster.widget_crd()
    widget = cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                             "metadata": {"name": "w1", "finalizers": [f"{group}/cleanup"]}})
    cluster.delete(widget)
    cluster.create(configmap("alive", finalizers=["example.com/block"]))  # has a finalizer but is not deleted
    return group


def rows(result):
    assert result.code in (0, ExitCode.FOUND), result.stderr
    return json.loads(result.stdout)["items"]


def test_every_kind_is_scanned_and_each_blocker_named(cluster):
    group = stuck_scene(cluster)
    result = kfin("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "-o", "json")
    found = {(i["kind"], i["name"]): i for i in rows(result)}
    assert set(found) == {("ConfigMap", "held"), ("Secret", "creds"), ("Service", "lb"), ("Widget", "w1")}
    assert found[("Service", "lb")]["families"] == ["load-balancer-cleanup"]
    assert found[("Widget", "w1")]["group"] == group
    assert found[("Widget", "w1")]["blocker"].startswith(f"custom: {group}/cleanup")
    assert found[("ConfigMap", "held")]["finalizers"] == ["example.com/block"]


def test_the_table_shows_the_columns_an_operator_reads(cluster):
    group = stuck_scene(cluster)
    result = kfin("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    lines = result.stdout.splitlines()
    leading = lines[0]
    # issue 41: what to deal with first (a controller per finalizer here: how many depends on the tier's controllers)
    assert re.fullmatch(r"[1-4] root causes? holds? the 4 stuck objects below:", lines[0]), lines[0]
    lines = lines[lines.index("") + 1:]
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("KIND ")):]
    # as kubectl: no NAMESPACE column for one namespace (issue 29); the verdict shown
    assert lines[0].split() == ["KIND", "NAME", "TERMINATING", "VERDICT", "FINALIZERS", "BLOCKER"]
    widget = next(line for line in lines if " w1 " in line)
    assert f"Widget.{group}" in widget and f"{group}/cleanup" in widget and "custom:" in widget
    assert all(line == line.rstrip() for line in lines) and "\x1b[" not in result.stdout
    wide = kfin("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "-o", "wide").stdout
    assert "APIVERSION" in next(line for line in wide.splitlines() if line.startswith("KIND ")) and f"{group}/v1" in wide
    assert wide.partition("\n")[0] == leading  # wide leads with them too
    every = kfin("stuck", "--kubeconfig", str(cluster.kubeconfig), "-A").stdout.splitlines()
    assert any(line.split()[:2] == ["NAMESPACE", "KIND"] for line in every)


def test_secret_data_is_never_read(cluster):
    stuck_scene(cluster)
    kfin("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    kfin("snapshot", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "-f",
         str(cluster.workdir / "snap.json"))
    assert "hunter2" not in (cluster.workdir / "snap.json").read_text()
    assert "aHVudGVyMg" not in (cluster.workdir / "snap.json").read_text()
    if cluster.is_fake:
        secret_reads = [r for r in cluster.fake.requests_to("secrets") if r.method == "GET"]
        assert secret_reads and all(r.metadata_only for r in secret_reads)


def test_filters_by_kind_finalizer_and_age(cluster):
    group = stuck_scene(cluster)
    base = ("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "-o", "json")
    assert {i["name"] for i in rows(kfin(*base, "--kind", "cm", "--kind", "svc"))} == {"held", "lb"}
    assert {i["name"] for i in rows(kfin(*base, "--kind", f"widgets.{group}"))} == {"w1"}
    assert {i["name"] for i in rows(kfin(*base, "--finalizer", "example.com/*"))} == {"held", "creds"}
    assert rows(kfin(*base, "--older-than", "1h")) == []
    assert len(rows(kfin(*base, "--older-than", "0s"))) == 4
    unknown = kfin(*base, "--kind", "persistentvolumeclaim")
    assert unknown.code == 0
    typo = kfin(*base, "--kind", "configmapz")
    assert typo.code == ExitCode.NOT_FOUND and "did you mean configmaps?" in typo.stderr


def test_name_and_yaml_outputs(cluster):
    group = stuck_scene(cluster)
    base = ("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    names = kfin(*base, "-o", "name").stdout.split()
    assert sorted(names) == sorted(["configmap/held", "secret/creds", "service/lb", f"widget.{group}/w1"])
    report = yaml.safe_load(kfin(*base, "-o", "yaml").stdout)
    assert report["kind"] == "StuckReport" and report["complete"] is True and len(report["items"]) == 4


def test_exit_code_for_cron(cluster):
    base = ("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    clean = kfin(*base, "--exit-code")
    assert clean.code == 0 and "No stuck objects found in namespace" in clean.stderr
    cluster.delete(cluster.create(configmap("held", finalizers=["example.com/block"])))
    assert kfin(*base, "--exit-code").code == ExitCode.FOUND
    assert kfin(*base).code == 0


@pytest.mark.controllers
def test_a_stuck_namespace_is_listed_with_its_conditions(cluster):
    ns = cluster.name("doomed")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create(configmap("held", namespace=ns, finalizers=["example.com/block"]))
    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: any(c.get("type") == "NamespaceFinalizersRemaining" and c.get("status") == "True"
                                   for c in (cluster.get(f"/api/v1/namespaces/{ns}") or {}).get("status", {}).get(
                                       "conditions") or []), message="the namespace controller's conditions")
    found = {(i["kind"], i["name"]): i for i in rows(kfin("stuck", "--kubeconfig", str(cluster.kubeconfig),
                                                           "-n", ns, "-o", "json"))}
    namespace = found[("Namespace", ns)]
    assert namespace["specFinalizers"] == ["kubernetes"] and namespace["families"] == ["namespace"]
    assert "example.com/block in 1 resource instances" in namespace["blocker"]
    assert ("ConfigMap", "held") in found
    cluster.strip_finalizers(f"/api/v1/namespaces/{ns}/configmaps/held")
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to go")


@pytest.mark.controllers
def test_foreground_deletion_names_the_blocking_dependent(cluster):
    owner = cluster.create(configmap("owner"))
    cluster.create(configmap("dependent", finalizers=["example.com/block"], ownerReferences=[{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True}]))
    cluster.delete(owner, propagation="Foreground")
    cluster.eventually(lambda: (cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/dependent") or {})
                       .get("metadata", {}).get("deletionTimestamp"))
    found = {i["name"]: i for i in rows(kfin("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n",
                                             cluster.namespace, "-o", "json"))}
    assert found["owner"]["blocker"] == \
        f"foregroundDeletion: waiting for 1 blocking dependent (ConfigMap/{cluster.namespace}/dependent); " \
        "root cause: the controller of example.com"
    assert found["owner"]["rootCauses"] == [{
        "type": "controller", "object": None, "actor": "the controller of example.com", "verdict": "ORPHANED",
        "evidence": "the controller of example.com is gone: nothing will remove example.com/block"}]


def test_pagination_across_pages_gives_the_same_result(cluster):
    for i in range(7):
        cluster.delete(cluster.create(configmap(f"held-{i}", finalizers=["example.com/block"])))
    base = ("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "-o", "name")
    paged = kfin(*base, "--chunk-size", "2")
    assert paged.code == 0 and paged.stdout == kfin(*base).stdout
    assert len(paged.stdout.split()) == 7
    if cluster.is_fake:
        assert any("continue" in r.query for r in cluster.fake.requests_to("configmaps"))


def test_a_user_who_may_not_list_one_resource_gets_a_partial_result(cluster):
    stuck_scene(cluster)
    core = ["pods", "services", "secrets", "namespaces", "persistentvolumeclaims", "persistentvolumes",
            "serviceaccounts", "endpoints", "events", "limitranges", "resourcequotas", "podtemplates",
            "replicationcontrollers", "nodes", "componentstatuses"]  # everything but configmaps
    reader = cluster.read_only_kubeconfig([
        {"apiGroups": [""], "resources": core, "verbs": ["get", "list"]},
        {"apiGroups": ["apps", "batch", "apiextensions.k8s.io", f"{cluster.suffix}.example.com", "rbac.authorization.k8s.io",
                       "storage.k8s.io", "networking.k8s.io", "policy", "discovery.k8s.io", "coordination.k8s.io",
                       "autoscaling", "events.k8s.io", "resource.k8s.io"], "resources": ["*"], "verbs": ["get", "list"]}])
    # -v: each type that could not be read (more than a few of them are otherwise one summary line)
    result = kfin("stuck", "--kubeconfig", str(reader), "-n", cluster.namespace, "-o", "json", "-v")
    assert result.code == ExitCode.PARTIAL
    assert "warning: list of configmaps in namespace" in result.stderr and '"list" on "configmaps"' in result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert any(f["target"] == f"configmaps in namespace {cluster.namespace}" and f["reason"] == "Forbidden"
               for f in report["failures"])
    assert {i["name"] for i in report["items"]} >= {"creds", "lb", "w1"}


def test_a_snapshot_gives_the_same_result_as_the_live_scan(cluster):
    stuck_scene(cluster)
    snap = cluster.workdir / "snap.json"
    saved = kfin("snapshot", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "-f", str(snap))
    assert saved.code == 0 and "saved" in saved.stderr
    live = kfin("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "-o", "json")
    offline = kfin("stuck", "--from-snapshot", str(snap), "-o", "json")
    strip = lambda r: [{k: v for k, v in i.items() if k not in ("terminatingSeconds",)} for i in rows(r)]
    assert strip(offline) == strip(live)


def claim_and_user(cluster, node=True):
    if cluster.get(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/default") is None:
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    pvc = cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                          "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                                   "storageClassName": cluster.name("manual"), "volumeName": cluster.name("pv")}})
    pod = cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0"}, "spec": {
        **({"nodeName": cluster.name("node")} if node else {}), "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}})
    return pvc, pod


def test_a_held_claim_names_the_pod_that_uses_it(cluster):
    pvc, pod = claim_and_user(cluster)
    cluster.delete(pvc)
    [row] = rows(kfin("stuck", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "-o", "json",
                      "--kind", "pvc"))
    assert row["blocker"] == f"pvc-protection: in use by Pod {cluster.namespace}/db-0 (on node {cluster.name('node')})"
    # Only the Pods of the claim's namespace were read in full, and no Secret at all.
    if cluster.is_fake:
        full_pod_reads = [r for r in cluster.fake.requests_to("pods") if r.method == "GET" and not r.metadata_only]
        assert [r.path for r in full_pod_reads] == [f"/api/v1/namespaces/{cluster.namespace}/pods"]


@pytest.mark.controllers
def test_a_bound_volume_names_its_claim_and_reclaim_policy(cluster):
    pv = cluster.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": cluster.name("pv")},
                         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                  "persistentVolumeReclaimPolicy": "Retain", "storageClassName": cluster.name("manual"),
                                  "hostPath": {"path": "/tmp/kfin"},
                                  "claimRef": {"namespace": cluster.namespace, "name": "data"}}})
    pvc, pod = claim_and_user(cluster)
    cluster.eventually(lambda: (cluster.get(pv) or {}).get("status", {}).get("phase") == "Bound",
                       message="the binder to bind the volume")
    cluster.delete(pv)
    result = kfin("stuck", "-A", "--kubeconfig", str(cluster.kubeconfig), "-o", "json", "--kind", "pv")
    row = next(r for r in rows(result) if r["name"] == cluster.name("pv"))
    assert row["blocker"] == f"pv-protection: still Bound to claim {cluster.namespace}/data (reclaim policy Retain)"


@pytest.mark.controllers
def test_lost_claims_and_retained_volumes_are_related_problems(cluster):
    """A claim whose bound volume was forced away turns Lost (capture 27 of causes); a volume released with
    reclaim policy Retain keeps its disk: both are reported beside the stuck objects."""
    def bound(name, policy):
        pv = cluster.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": cluster.name(name)},
                             "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                      "persistentVolumeReclaimPolicy": policy, "storageClassName": cluster.name("manual"),
                                      "hostPath": {"path": "/tmp/kfin"},
                                      "claimRef": {"namespace": cluster.namespace, "name": name}}})
        cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                                 "storageClassName": cluster.name("manual"), "volumeName": pv["metadata"]["name"]}})
        cluster.eventually(lambda: (cluster.get(pv) or {}).get("status", {}).get("phase") == "Bound")
        return pv
    lost = bound("lost", "Retain")
    cluster.delete(lost)
    cluster.strip_finalizers(lost)
    cluster.eventually(lambda: (cluster.get(f"/api/v1/namespaces/{cluster.namespace}/persistentvolumeclaims/lost")
                                or {}).get("status", {}).get("phase") == "Lost", message="the claim to turn Lost")
    kept = bound("kept", "Retain")
    cluster.delete(f"/api/v1/namespaces/{cluster.namespace}/persistentvolumeclaims/kept")
    cluster.eventually(lambda: (cluster.get(kept) or {}).get("status", {}).get("phase") == "Released")
    result = kfin("stuck", "-A", "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    related = {(p["type"], p["object"]) for p in json.loads(result.stdout)["related"]}
    assert ("LostClaim", f"PersistentVolumeClaim/{cluster.namespace}/lost") in related
    assert ("RetainedVolume", f"PersistentVolume/{kept['metadata']['name']}") in related
    assert f"warning: related: claim {cluster.namespace}/lost is Lost" in result.stderr


def test_a_user_who_may_read_few_types_gets_one_summary_line_and_each_with_v(cluster):
    """A user who may only read a few types: the forbidden lists were a warning each (some 50 lines before the
    answer); they are one summary line, still saying the answer is partial (and exit 8), each one listed with -v."""
    stuck_scene(cluster)
    reader = cluster.read_only_kubeconfig([{"apiGroups": [""], "resources": ["configmaps", "namespaces"],
                                            "verbs": ["get", "list"]}], name="few-types")
    args = ("stuck", "--kubeconfig", str(reader), "-n", cluster.namespace)
    result = kfin(*args)
    assert result.code == ExitCode.PARTIAL, result
    [summary] = [line for line in result.stderr.splitlines() if "could not read" in line]
    counted = re.fullmatch(r"warning: could not read (\d+) resource types \(forbidden\); -v for the list", summary)
    assert counted and int(counted.group(1)) > 3, summary
    assert not [line for line in result.stderr.splitlines() if line.startswith("warning: list of ")], result.stderr
    assert "ConfigMap" in result.stdout and "held" in result.stdout  # what it could read is answered
    listed = kfin(*args, "-v")
    assert listed.code == ExitCode.PARTIAL
    each = [line for line in listed.stderr.splitlines() if line.startswith("warning: list of ")]
    assert len({line.split(" failed:")[0].removesuffix(f" in namespace {cluster.namespace}") for line in each}) \
        == int(counted.group(1)), listed.stderr
    assert all("forbidden" in line for line in each) and "could not read" not in listed.stderr
    report = json.loads(kfin(*args, "-o", "json").stdout)
    assert report["complete"] is False and len(report["failures"]) >= int(counted.group(1))
