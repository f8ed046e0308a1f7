"""kfin explain on a cluster: each catalog family's verdict from live facts, and the same from a snapshot."""

import json

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenario import KCM_DOWN, namespace_behind_an_unavailable_apiservice

RBAC = "rbac.authorization.k8s.io/v1"


def explain(cluster, *args):
    result = kfin("explain", *args, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return json.loads(result.stdout)


def finding(report, finalizer):
    return next(f for f in report["findings"] if f["finalizer"] == finalizer)


def ensure_default_sa(cluster):
    if cluster.get(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/default") is None:
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})


def claim(cluster, name="data", volume=None):
    return cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                                    "storageClassName": cluster.name("manual"),
                                    **({"volumeName": volume} if volume else {})}})


def pod_using(cluster, name, claim_name, node=True):
    ensure_default_sa(cluster)
    return cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        **({"nodeName": cluster.name("node")} if node else {}),
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim_name}}]}})


def test_a_claim_used_by_a_scheduled_pod_is_holding(cluster):
    pvc = claim(cluster)
    pod_using(cluster, "db-0", "data")
    pod_using(cluster, "waiting", "data", node=False)
    cluster.delete(pvc)
    report = explain(cluster, "pvc", "data", "-n", cluster.namespace)
    f = finding(report, "kubernetes.io/pvc-protection")
    assert f["verdict"] == "HOLDING" and f["family"] == "pvc-protection"
    assert f"Pod {cluster.namespace}/db-0" in f["condition"] and "waiting" not in f["condition"]
    assert any("waiting references the claim but is not scheduled" in e for e in f["evidence"])
    assert "deletes the claim while Pods may still mount it" in f["risk"] and f["removeCommand"] is None


@pytest.mark.fake_only(KCM_DOWN)
def test_a_released_claim_waits_for_the_controller_and_is_orphaned_when_it_is_down(fake, fake_kubeconfig):
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/persistentvolumeclaims", {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    fake.stop_controllers()  # kube-controller-manager stops
    api.delete("/api/v1/namespaces/default/persistentvolumeclaims/data")
    base = ("explain", "pvc", "data", "--kubeconfig", str(fake_kubeconfig), "-o", "json")
    f = json.loads(kfin(*base).stdout)["findings"][0]
    assert f["verdict"] == "WAITING" and f["controllerAlive"] is True and f["removeCommand"] is None
    fake.stop_controllers(seconds_ago=600)  # ... ten minutes ago: its lease is stale
    f = json.loads(kfin(*base).stdout)["findings"][0]
    assert f["verdict"] == "STALLED" and f["controllerAlive"] is False  # only someone bringing it back helps
    assert any("kube-controller-manager is not running" in e for e in f["evidence"])
    # the control plane's finalizer: kfin removes it only with --force (issue 23), and says so in the command
    assert f["removeCommand"] == ("kfin remove persistentvolumeclaims data -n default "
                                  "--finalizer kubernetes.io/pvc-protection --force --confirm")


@pytest.mark.controllers
@pytest.mark.parametrize("policy", ["Delete", "Retain"])
def test_a_bound_volume_is_holding_and_the_risk_follows_its_reclaim_policy(cluster, policy):
    pv = cluster.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": cluster.name("pv")},
                         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                  "persistentVolumeReclaimPolicy": policy, "storageClassName": cluster.name("manual"),
                                  "hostPath": {"path": "/tmp/kfin"},
                                  "claimRef": {"namespace": cluster.namespace, "name": "data"}}})
    claim(cluster, volume=pv["metadata"]["name"])
    cluster.eventually(lambda: (cluster.get(pv) or {}).get("status", {}).get("phase") == "Bound")
    cluster.delete(pv)
    f = finding(explain(cluster, "pv", pv["metadata"]["name"]), "kubernetes.io/pv-protection")
    assert f["verdict"] == "HOLDING" and f["condition"] == f"Bound to claim {cluster.namespace}/data (in use)"
    if policy == "Delete":
        assert "is deleted with the claim, data included" in f["risk"]
    else:
        assert "the data stays on the backing disk" in f["risk"]


def operator(cluster, group, replicas, pod=True, deployment=True, pod_status=None):
    """A widget operator: its ServiceAccount, a ClusterRole granting update on widgets, a Deployment, and a
    Pod with `pod_status` (set as a kubelet would: the scenario clusters run none)."""
    ensure_default_sa(cluster)
    cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "widget-operator"}})
    cluster.create({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": cluster.name("widget-operator")},
                    "rules": [{"apiGroups": [group], "resources": ["widgets"], "verbs": ["get", "list", "update"]}]})
    cluster.create({"apiVersion": RBAC, "kind": "ClusterRoleBinding",
                    "metadata": {"name": cluster.name("widget-operator")},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": cluster.name("widget-operator")},
                    "subjects": [{"kind": "ServiceAccount", "name": "widget-operator",
                                  "namespace": cluster.namespace}]})
    template = {"metadata": {"labels": {"app": "widget-operator"}}, "spec": {
        "serviceAccountName": "widget-operator", "containers": [{"name": "op", "image": "registry.k8s.io/pause:3.10"}]}}
    if deployment:
        cluster.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "widget-operator"},
                        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "widget-operator"}},
                                 "template": template}})
    if pod:
        created = cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "widget-operator-0", "labels": {"app": "widget-operator"}},
            "spec": template["spec"]})
        cluster.set_status(created, pod_status or {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True"}]})


def stuck_widget(cluster, group, manager=None):
    """Widget w1 with the finalizer `{group}/cleanup`, being deleted; `manager`: the field manager that added it (an
    operator's own, where the scenario shows it owns the name), else the scenario's client."""
    path = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"
    widget = cluster.api.create(path + (f"?fieldManager={manager}" if manager else ""), {
        "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "finalizers": [f"{group}/cleanup"]}})
    cluster.delete(widget)
    return widget


def test_a_custom_finalizer_whose_controller_runs_is_waiting(cluster):
    """It runs and added the finalizer (its field manager, as an operator's writes carry it): WAITING."""
    group = cluster.widget_crd()
    operator(cluster, group, replicas=1)
    stuck_widget(cluster, group, manager="widget-operator")
    f = finding(explain(cluster, f"widgets.{group}", "w1", "-n", cluster.namespace), f"{group}/cleanup")
    assert f["verdict"] == "WAITING" and f["controllerAlive"] is True
    assert f"Pod {cluster.namespace}/widget-operator-0" in f["condition"]
    assert any(f"grants update on widgets.{group} to ServiceAccount {cluster.namespace}/widget-operator" in e
               for e in f["evidence"])


def test_a_custom_finalizer_whose_controller_is_scaled_to_zero_is_stalled(cluster):
    group = cluster.widget_crd()
    operator(cluster, group, replicas=0, pod=False)
    stuck_widget(cluster, group)
    f = finding(explain(cluster, f"widgets.{group}", "w1", "-n", cluster.namespace), f"{group}/cleanup")
    assert f["verdict"] == "STALLED" and f["controllerAlive"] is False
    assert f["condition"] == (f"its controller is installed but not running: its Deployment "
                              f"{cluster.namespace}/widget-operator has 0 replicas")
    assert any(f"the ClusterRole {cluster.name('widget-operator')} grants update on widgets.{group} to ServiceAccount "
               f"{cluster.namespace}/widget-operator: its Deployment {cluster.namespace}/widget-operator has 0 replicas"
               == e for e in f["evidence"]), f["evidence"]
    assert f["removeCommand"] == (f"kfin remove widgets.{group} w1 -n {cluster.namespace} "
                                  f"--finalizer {group}/cleanup --confirm")


def stuck_items(cluster, *args):
    result = kfin("stuck", "-n", cluster.namespace, *args, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return {item["name"]: item for item in json.loads(result.stdout)["items"]}


def assert_stalled_everywhere(cluster, name):
    """Issue 40: STALLED in `kfin stuck`'s JSON, kept by --verdict STALLED (any case), left out by WAITING."""
    assert stuck_items(cluster)[name]["verdict"] == "STALLED"
    assert name in stuck_items(cluster, "--verdict", "stalled")
    assert name not in stuck_items(cluster, "--verdict", "WAITING")


def test_a_custom_finalizer_whose_controller_crash_loops_is_stalled(cluster):
    group = cluster.widget_crd()
    operator(cluster, group, replicas=1, pod_status={
        "phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [{"name": "op", "ready": False, "restartCount": 12, "image": "i", "imageID": "",
                               "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]})
    stuck_widget(cluster, group)
    f = finding(explain(cluster, f"widgets.{group}", "w1", "-n", cluster.namespace), f"{group}/cleanup")
    assert f["verdict"] == "STALLED" and f["controllerAlive"] is False
    assert f["condition"] == (f"its controller is installed but not running: Pod {cluster.namespace}/widget-operator-0 "
                              "is not Ready (CrashLoopBackOff, 12 restarts)")
    assert f["fix"].startswith("fix the controller")
    assert_stalled_everywhere(cluster, "w1")


def test_a_custom_finalizer_whose_controller_is_gone_is_orphaned(cluster):
    """Only its RBAC is left: no Pod, Deployment or StatefulSet runs as the ServiceAccount it names."""
    group = cluster.widget_crd()
    operator(cluster, group, replicas=0, pod=False, deployment=False)
    stuck_widget(cluster, group)
    f = finding(explain(cluster, f"widgets.{group}", "w1", "-n", cluster.namespace), f"{group}/cleanup")
    assert f["verdict"] == "ORPHANED" and "its controller is gone (only its RBAC is left)" in f["condition"]
    assert f["removeCommand"] is not None


def test_a_custom_finalizer_nobody_may_remove_is_orphaned(cluster):
    group = cluster.widget_crd()
    stuck_widget(cluster, group)
    f = finding(explain(cluster, f"widgets.{group}", "w1", "-n", cluster.namespace), f"{group}/cleanup")
    assert f["verdict"] == "ORPHANED" and "its controller is gone" in f["condition"]
    assert f"CustomResourceDefinition widgets.{group} exists" in f["evidence"]
    # the proof is listed: what RBAC was read and found nothing, and the field manager found running nowhere
    assert any(e.startswith("RBAC read: ") and "none grants update or patch" in e for e in f["evidence"])
    assert any(e.startswith("managedFields: ") for e in f["evidence"])


@pytest.mark.controllers
def test_a_namespace_blocked_by_a_custom_resource_of_an_uninstalled_operator(cluster):
    group, ns = cluster.namespace_held_by_widget()
    report = explain(cluster, "ns", ns)
    f = finding(report, "kubernetes")
    assert f["field"] == "spec.finalizers" and f["verdict"] == "HOLDING"
    assert f"Widget.{group}/{ns}/w1 is stuck: custom: {group}/cleanup" in " ".join(f["evidence"])
    assert "/finalize" in f["risk"] and f["removeCommand"] is None
    cluster.strip_finalizers(f"/apis/{group}/v1/namespaces/{ns}/widgets/w1")


@pytest.mark.controllers
def test_a_namespace_blocked_by_an_unavailable_apiservice(cluster):
    ns, name, group_version = namespace_behind_an_unavailable_apiservice(cluster)
    f = explain(cluster, "namespace", ns)["findings"][0]
    assert f["verdict"] == "HOLDING"
    assert f["condition"].startswith(f"API discovery of {group_version} fails")
    assert f"kubectl delete apiservice {name}" in f["fix"]
    assert any(f"APIService {name} is unavailable (ServiceNotFound" in e for e in f["evidence"]), f["evidence"]


@pytest.mark.controllers
def test_foreground_deletion_blocked_by_a_dependent_names_the_chain(cluster):
    owner = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "dependent", "finalizers": ["example.com/block"], "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"],
            "blockOwnerDeletion": True}]}})
    cluster.delete(owner, propagation="Foreground")
    cluster.eventually(lambda: (cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/dependent") or {})
                       .get("metadata", {}).get("deletionTimestamp"))
    f = finding(explain(cluster, "cm", "owner", "-n", cluster.namespace), "foregroundDeletion")
    assert f["verdict"] == "HOLDING" and f["condition"] == "1 dependent with blockOwnerDeletion must go first"
    assert f["evidence"] == [f"ConfigMap/{cluster.namespace}/dependent: custom: example.com/block "
                             "(the controller of example.com must remove it)"]


def test_unqualified_finalizers_are_not_guessed(cluster):
    """Only a custom resource can carry one: built-in objects refuse it (see test_cluster_rules)."""
    group = cluster.widget_crd()
    widget = cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                             "metadata": {"name": "odd", "finalizers": ["cleanup"]}})
    cluster.delete(widget)
    f = finding(explain(cluster, f"widgets.{group}", "odd", "-n", cluster.namespace), "cleanup")
    assert f["verdict"] == "UNKNOWN" and "not a domain-qualified name" in f["condition"]


def test_errors_missing_object_unknown_kind_and_forbidden(cluster):
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    missing = kfin("explain", "pvc", "nope", *base)
    assert missing.code == ExitCode.NOT_FOUND and 'persistentvolumeclaims "nope" not found' in missing.stderr
    unknown = kfin("explain", "pvcz", "x", *base)
    assert unknown.code == ExitCode.NOT_FOUND and "did you mean" in unknown.stderr
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held"}})
    reader = cluster.read_only_kubeconfig([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
                                          name="podreader")
    denied = kfin("explain", "configmap", "held", "--kubeconfig", str(reader), "-n", cluster.namespace)
    assert denied.code == ExitCode.FORBIDDEN
    assert f'kfin needs "get" on "configmaps" in namespace "{cluster.namespace}"' in denied.stderr


@pytest.mark.controllers
def test_the_same_explanations_come_out_of_a_snapshot(cluster):
    group = cluster.widget_crd()
    operator(cluster, group, replicas=0, pod=False)
    stuck_widget(cluster, group)
    pvc = claim(cluster)
    pod_using(cluster, "db-0", "data")
    cluster.delete(pvc)
    snap = cluster.workdir / "snap.json"
    assert kfin("snapshot", "-A", "--kubeconfig", str(cluster.kubeconfig), "-f", str(snap)).code in (0, 8)
    for args in ((f"widgets.{group}", "w1"), ("pvc", "data")):
        live = explain(cluster, *args, "-n", cluster.namespace)
        offline = json.loads(kfin("explain", *args, "-n", cluster.namespace, "--from-snapshot", str(snap),
                                  "-o", "json").stdout)
        # the live explanation asks the server too (a dry run of the removal its plan holds), which a snapshot
        # cannot: that line of evidence is the live one's own
        strip = lambda r: [{k: [e for e in v if not e.startswith("dry run (dryRun=All)")] if k == "evidence" else v
                            for k, v in f.items() if k not in ("controllerAlive",)} for f in r["findings"]]
        assert strip(offline) == strip(live)


def test_managed_fields_name_the_controller_when_rbac_cannot_be_read(cluster):
    """A read-only user who may not read RBAC: the field manager that added the finalizer (managedFields, in
    metadata-only answers too) names the controller; its Deployment is installed but not running."""
    group = cluster.widget_crd()
    ensure_default_sa(cluster)
    cluster.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "widget-operator"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "widget-operator"}},
        "template": {"metadata": {"labels": {"app": "widget-operator"}},
                     "spec": {"containers": [{"name": "c", "image": "kfin.invalid/widget-operator:none"}]}}}})
    path = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"
    code, _ = cluster.api.send("POST", path + "?fieldManager=widget-operator", {
        "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "finalizers": [f"{group}/cleanup"]}})
    assert code == 201
    cluster.delete(f"{path}/w1")
    reader = cluster.read_only_kubeconfig([{"apiGroups": ["", "apps", group, "apiextensions.k8s.io"],
                                            "resources": ["*"], "verbs": ["get", "list", "watch"]}], name="no-rbac")
    result = kfin("explain", f"widgets.{group}", "w1", "-n", cluster.namespace, "--kubeconfig", str(reader), "-o", "json")
    f = finding(json.loads(result.stdout), f"{group}/cleanup")
    assert f'managedFields: {group}/cleanup was added by field manager "widget-operator"' in f["evidence"]
    assert f["verdict"] == "STALLED" and f["controllerAlive"] is False
    assert f"Deployment {cluster.namespace}/widget-operator (the field manager that added it) is installed but not " \
           "running (0/1 ready)" in f["condition"]


def running_deployment(cluster, name: str, service_account: str) -> dict:
    """Deployment `name` (one replica, running as `service_account`) whose Pod is marked Running and Ready, as a
    kubelet would: the replicaset and deployment controllers count it, on the fake as on a real control plane
    (which has no kubelet). Returns the Deployment once it reports the replica ready."""
    labels = {"app": name}
    if cluster.get(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/{service_account}") is None:
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": service_account}})
    deployment = cluster.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
            "serviceAccountName": service_account, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}})
    pods = f"/api/v1/namespaces/{cluster.namespace}/pods?labelSelector=app%3D{name}"
    [pod] = cluster.eventually(lambda: cluster.api.get(pods)["items"], message="the Deployment's Pod")
    cluster.set_status(dict(pod, apiVersion="v1", kind="Pod"),  # a list's items carry neither
                       {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    return cluster.eventually(lambda: (lambda d: d if (d.get("status") or {}).get("readyReplicas") == 1 else None)(
        cluster.get(deployment)), message="the Deployment to count its ready Pod")


@pytest.mark.controllers
def test_a_running_controller_forbidden_to_update_is_named_with_the_missing_grant(cluster):
    """The widget operator runs (the field manager that added the finalizer) but no RBAC lets it update widgets."""
    group = cluster.widget_crd()
    running_deployment(cluster, "widget-operator", "widget-operator")
    path = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"
    cluster.api.ok("POST", f"{path}?fieldManager=widget-operator",
                   {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "finalizers": [f"{group}/x"]}})
    cluster.delete(f"{path}/w1")
    [f] = explain(cluster, f"widgets.{group}", "w1", "-n", cluster.namespace)["findings"]
    assert f["verdict"] == "STALLED" and f["controllerAlive"] is True  # it runs, but cannot act (issue 40)
    assert f"forbidden to update widgets.{group}" in f["condition"]
    assert f["fix"].startswith(f"grant ServiceAccount {cluster.namespace}/widget-operator update and patch on "
                               f"widgets.{group}")
    assert_stalled_everywhere(cluster, "w1")
    # the grant it lacks, given: it may act again, and is WAITING, no longer STALLED
    cluster.create({"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "widget-writer"}, "rules": [
        {"apiGroups": [group], "resources": ["widgets"], "verbs": ["get", "patch", "update"]}]})
    cluster.create({"apiVersion": RBAC, "kind": "RoleBinding", "metadata": {"name": "widget-writer"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-writer"},
                    "subjects": [{"kind": "ServiceAccount", "name": "widget-operator",
                                  "namespace": cluster.namespace}]})
    [f] = explain(cluster, f"widgets.{group}", "w1", "-n", cluster.namespace)["findings"]
    assert f["verdict"] == "WAITING" and "forbidden" not in f["condition"]
    cluster.strip_finalizers(f"{path}/w1")


@pytest.mark.controllers
def test_a_deployment_whose_own_pod_crash_loops_is_stalled_with_that_pod_named(cluster):
    """Issue 40: the field manager's Deployment created its Pod (through a ReplicaSet, which the deployment
    controller names after it and the pod-template-hash label); that Pod crash-loops, as a kubelet would
    report it. kfin names it, without reading ReplicaSets, and the verdict is STALLED."""
    group = cluster.widget_crd()
    ensure_default_sa(cluster)
    labels = {"app": "widget-operator"}
    cluster.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "widget-operator"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
            "containers": [{"name": "op", "image": "registry.k8s.io/pause:3.10"}]}}}})
    pods = f"/api/v1/namespaces/{cluster.namespace}/pods?labelSelector=app%3Dwidget-operator"
    [pod] = cluster.eventually(lambda: cluster.api.get(pods)["items"], message="the Deployment's Pod")
    cluster.set_status(dict(pod, apiVersion="v1", kind="Pod"), {
        "phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [{"name": "op", "ready": False, "restartCount": 7, "image": "registry.k8s.io/pause:3.10",
                               "imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]})
    path = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"
    cluster.api.ok("POST", f"{path}?fieldManager=widget-operator",
                   {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "finalizers": [f"{group}/x"]}})
    cluster.delete(f"{path}/w1")
    [f] = explain(cluster, f"widgets.{group}", "w1", "-n", cluster.namespace)["findings"]
    assert f["verdict"] == "STALLED" and f["controllerAlive"] is False
    assert f["condition"].endswith(f"is installed but not running (0/1 ready): Pod {cluster.namespace}/"
                                   f"{pod['metadata']['name']} is not Ready (CrashLoopBackOff, 7 restarts)")
    assert f["fix"].startswith(f"fix or scale up Deployment {cluster.namespace}/widget-operator")
    assert_stalled_everywhere(cluster, "w1")
    cluster.strip_finalizers(f"{path}/w1")
