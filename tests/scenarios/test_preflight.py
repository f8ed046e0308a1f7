"""kfin preflight (issue 25): predict, then really delete, then compare what is really left Terminating with what
was predicted. preflight itself never writes."""

import json

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenario import node_a_budget_stops, unavailable_apiservice
from tests.scenarios.test_stuck import claim_and_user


def preflight(cluster, *args, kubeconfig=None):
    seen = len(cluster.fake.requests) if cluster.is_fake else 0
    result = kfin("preflight", *args, "-o", "json", "--kubeconfig", str(kubeconfig or cluster.kubeconfig))
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    if cluster.is_fake:  # a prediction reads, it never writes: anything else it sends the server takes as a dry run
        sent = [r for r in cluster.fake.requests[seen:] if r.method != "GET"]
        assert all(r.dry_run for r in sent), [(r.method, r.path, r.query) for r in sent]
    return json.loads(result.stdout)


def really_stuck(cluster, namespace=None):
    """(kind, name, finalizer) of every Terminating object kfin stuck reports after the deletion."""
    scope = ("-n", namespace) if namespace else ("-A",)
    result = kfin("stuck", *scope, "-o", "json", "--kubeconfig", str(cluster.kubeconfig))
    assert result.code in (0, ExitCode.FOUND, ExitCode.PARTIAL), result.stderr
    return {(i["kind"], i["name"]): i for i in json.loads(result.stdout)["items"]}


def predicted(report):
    return {(s["object"]["kind"], s["object"]["name"], s["finalizer"], s["verdict"]) for s in report["wouldBeStuck"]}


def deleted(report):
    return {(d["kind"], d["name"]) for d in report["wouldDelete"]}


def widget_operator(cluster, group: str, namespace: str, cluster_wide: bool) -> None:
    """Namespace `namespace` with the Widget operator's ServiceAccount, its right to update Widgets (in its own
    namespace, or everywhere through a suffixed ClusterRole) and its Deployment (never running: no such image)."""
    rbac = "rbac.authorization.k8s.io/v1"
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    cluster.create({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "operator", "namespace": namespace}})
    role_kind, binding_kind = ("ClusterRole", "ClusterRoleBinding") if cluster_wide else ("Role", "RoleBinding")
    where = {"name": cluster.name("widgets")} if cluster_wide else {"name": "operator", "namespace": namespace}
    cluster.create({"apiVersion": rbac, "kind": role_kind, "metadata": where,
                    "rules": [{"apiGroups": [group], "resources": ["widgets"],
                               "verbs": ["get", "list", "watch", "update", "patch"]}]})
    cluster.create({"apiVersion": rbac, "kind": binding_kind, "metadata": where,
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": where["name"]},
                    "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": namespace}]})
    labels = {"app": "widget-operator"}
    cluster.create({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "widget-operator", "namespace": namespace},
                    "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                        "metadata": {"labels": labels},
                        "spec": {"serviceAccountName": "operator",
                                 "containers": [{"name": "c", "image": "registry.invalid/widget-operator:none"}]}}}})


@pytest.mark.controllers
def test_a_namespace_that_holds_its_own_operator(cluster):
    """The operator's Deployment and the rights to update its Widgets live in the namespace being deleted: the
    namespace controller deletes the operator with the rest, and nothing removes the Widget's finalizer after.
    preflight says so, and the plan deletes the Widget first."""
    group = cluster.widget_crd()
    ns = cluster.name("team")
    widget_operator(cluster, group, ns, cluster_wide=False)
    cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                    "metadata": {"name": "w1", "namespace": ns, "finalizers": [f"{group}/cleanup"]}})

    report = preflight(cluster, "namespace", ns)
    assert report["clean"] is False
    kinds = [d["kind"] for d in report["wouldDelete"]]  # in the namespace controller's order: Pods first (1.34)
    assert "Pod" in kinds and kinds == sorted(kinds, key=lambda k: k != "Pod"), kinds
    [(kind, name, finalizer, verdict)] = [p for p in predicted(report) if p[0] == "Widget"]
    assert (name, finalizer, verdict) == ("w1", f"{group}/cleanup", "ORPHANED")
    [reason] = [s["reason"] for s in report["wouldBeStuck"] if s["object"]["kind"] == "Widget"]
    assert f"lives in namespace {ns}, deleted with it" in reason
    actions = [s["command"] or s["note"] for s in report["plan"]]
    assert actions[0] == f"kubectl delete widgets.{group} w1 -n {ns}"
    assert actions[-2:] == [f"kubectl delete namespaces {ns}", f"kfin wait namespaces {ns} --timeout 10m"]

    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: (cluster.get(f"/apis/{group}/v1/namespaces/{ns}/widgets/w1") or {})
                       .get("metadata", {}).get("deletionTimestamp"), message="the namespace controller")
    left = really_stuck(cluster, ns)
    assert ("Widget", "w1") in left and ("Namespace", ns) in left
    assert {k for k in left if k[0] != "Namespace"} == {("Widget", "w1")}  # what was predicted, and nothing more
    cluster.strip_finalizers(f"/apis/{group}/v1/namespaces/{ns}/widgets/w1")


@pytest.mark.controllers
def test_a_crd_whose_resources_carry_the_finalizer_of_an_operator_that_is_gone(cluster):
    """Deleting the CRD deletes its Widgets; one carries the finalizer of an operator that is not installed, so
    it stays, and the CRD waits for it (customresourcecleanup). A Widget without finalizers goes."""
    group = cluster.widget_crd()
    cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                    "metadata": {"name": "w1", "finalizers": [f"{group}/cleanup"]}})
    cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w2"}})
    crd = f"widgets.{group}"

    report = preflight(cluster, "crd", crd)
    assert deleted(report) == {("Widget", "w1"), ("Widget", "w2")}
    assert predicted(report) == {("Widget", "w1", f"{group}/cleanup", "ORPHANED"),
                                 ("CustomResourceDefinition", crd, "customresourcecleanup.apiextensions.k8s.io",
                                  "HOLDING")}  # the CRD waits for w1 (kfin guard's words: its pointer leads here)
    [wait] = [s["reason"] for s in report["wouldBeStuck"] if s["object"]["kind"] == "CustomResourceDefinition"]
    assert wait == "it waits for its custom resources to go: w1 left stuck"
    assert report["plan"][0]["command"] is None
    assert report["plan"][0]["note"].startswith(f"install what removes {group}/cleanup")

    cluster.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
    widget = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets/w1"
    cluster.eventually(lambda: (cluster.get(widget) or {}).get("metadata", {}).get("deletionTimestamp"),
                       message="the CRD cleanup to delete the Widgets")
    cluster.eventually(lambda: cluster.get(f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets/w2") is None,
                       message="the Widget without finalizers to go")
    left = really_stuck(cluster, cluster.namespace)
    assert set(left) == {("Widget", "w1")}
    cluster.eventually(lambda: ("CustomResourceDefinition", crd) in really_stuck(cluster),
                       message="kfin stuck to see the CRD waiting for w1, as predicted")
    cluster.strip_finalizers(widget)


@pytest.mark.controllers
def test_a_namespace_that_an_unavailable_apiservice_would_stop(cluster):
    """An APIService whose Service does not exist: the namespace controller's discovery would fail, so it would
    delete all it can discover but never finish. preflight names the APIService; after the deletion the namespace
    is really held, and explain names the same APIService.
    On a real control plane it stops every namespace deletion while it exists: the APIService is suffixed, and
    the cluster's cleanup (which runs when the test fails too) deletes it before anything else."""
    name, _ = unavailable_apiservice(cluster)
    ns = cluster.name("team")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    result = kfin("preflight", "ns", ns, "-o", "json", "--exit-code", "--kubeconfig", str(cluster.kubeconfig))
    assert result.code == ExitCode.FOUND, result.stderr
    report = json.loads(result.stdout)
    [gate] = [s for s in report["wouldBeStuck"] if s["object"]["kind"] == "Namespace"]
    assert f"APIService {name} is unavailable" in gate["reason"] and gate["reason"].endswith(
        "the namespace controller would delete all it can discover, but never finish")
    assert gate["step"].startswith(f"if its server was uninstalled: kubectl delete apiservice {name}")
    [step] = [s for s in report["plan"] if s["command"] == f"kubectl delete apiservice {name}"]
    assert step["when"] == "if its server was uninstalled" and step["more"][0]["note"] == "repair its backend"

    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: any(c.get("type") == "NamespaceDeletionDiscoveryFailure" and c.get("status") == "True"
                                   for c in (cluster.get(f"/api/v1/namespaces/{ns}") or {}).get("status", {})
                                   .get("conditions") or []), message="the namespace controller to stop")
    explained = json.loads(kfin("explain", "ns", ns, "--kubeconfig", str(cluster.kubeconfig), "-o", "json").stdout)
    [root] = explained["chain"]["rootCauses"]
    assert root["object"] == f"APIService.apiregistration.k8s.io/{name}"


def test_a_node_whose_drain_a_budget_would_stop(cluster):
    """Karpenter's termination finalizer drains the node first: a Pod covered by a budget that allows no
    disruption would stop it. preflight lists the Pods the deletion evicts and names the budget."""
    node = node_a_budget_stops(cluster)

    report = preflight(cluster, "node", node["metadata"]["name"])
    assert deleted(report) == {("Pod", "db-0"), ("Pod", "web-0")}
    [held] = report["wouldBeStuck"]
    assert (held["object"]["kind"], held["finalizer"], held["verdict"]) == ("Node", "karpenter.sh/termination", "HOLDING")
    assert f"Pod {cluster.namespace}/db-0 is covered by PodDisruptionBudget db" in held["reason"]
    assert held["step"].startswith(f"let PodDisruptionBudget.policy/{cluster.namespace}/db allow a disruption")

    cluster.delete(node)
    left = really_stuck(cluster)
    assert left[("Node", node["metadata"]["name"])]["finalizers"] == ["karpenter.sh/termination"]
    cluster.strip_finalizers(node)


@pytest.mark.controllers
def test_a_namespace_nothing_would_hold(cluster):
    """A namespace with a ConfigMap and no finalizers but the namespace's own: clean, exit 0 with --exit-code,
    and it really goes."""
    ns = cluster.name("clean")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns},
                    "data": {"a": "b"}})
    result = kfin("preflight", "namespace", ns, "--exit-code", "--kubeconfig", str(cluster.kubeconfig))
    assert result.code == 0, result.stderr
    assert "nothing would be left stuck" in result.stdout
    report = preflight(cluster, "namespace", ns)
    assert report["clean"] is True and report["wouldBeStuck"] == []
    assert ("ConfigMap", "settings") in deleted(report)
    cluster.delete(f"/api/v1/namespaces/{ns}")
    assert cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace")


@pytest.mark.parametrize("scheduled", [True, False])
def test_a_claim_a_pod_mounts(cluster, scheduled):
    """pvc-protection holds a claim while a scheduled Pod (spec.nodeName set) references it, whatever its phase;
    an unscheduled Pod does not hold it. The Pod is not deleted with the claim, so preflight says the claim
    would stay, and names the Pod."""
    pvc, pod = claim_and_user(cluster, node=scheduled)
    cluster.eventually(lambda: "kubernetes.io/pvc-protection" in cluster.get(pvc)["metadata"].get("finalizers", []),
                       message="the pvc-protection admission plug-in")
    report = preflight(cluster, "pvc", "data", "-n", cluster.namespace)
    cluster.delete(pvc)
    if scheduled:
        assert predicted(report) == {("PersistentVolumeClaim", "data", "kubernetes.io/pvc-protection", "HOLDING")}
        [held] = report["wouldBeStuck"]
        assert f"Pod {cluster.namespace}/db-0" in held["reason"]
        left = really_stuck(cluster, cluster.namespace)
        assert left[("PersistentVolumeClaim", "data")]["finalizers"] == ["kubernetes.io/pvc-protection"]
        cluster.delete(pod, grace=0)
    else:
        assert report["clean"] is True
        assert cluster.eventually(lambda: cluster.get(pvc) is None, message="the claim to go")


@pytest.mark.controllers
@pytest.mark.parametrize("deleting", ["namespace", "deployment"])
def test_an_operator_uninstalled_before_its_custom_resources(cluster, deleting):
    """The operator runs in its own namespace, with a ClusterRole to update Widgets everywhere; a Widget in
    another namespace carries its finalizer. Deleting the operator's namespace (or its Deployment) leaves the
    Widget in place, but nothing will remove its finalizer after: once deleted, it sticks. preflight says so and
    its plan deletes the Widget first; deleting in the wrong order really leaves the Widget stuck."""
    group = cluster.widget_crd()
    ops = cluster.name("ops")
    widget_operator(cluster, group, ops, cluster_wide=True)
    widget = cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                             "metadata": {"name": "w1", "finalizers": [f"{group}/cleanup"]}})

    target = ("namespace", ops) if deleting == "namespace" else ("deployment", "widget-operator", "-n", ops)
    report = preflight(cluster, *target)
    assert report["clean"] is False and report["wouldBeStuck"] == []
    [left] = report["leftWithoutController"]
    assert (left["object"]["kind"], left["object"]["namespace"], left["object"]["name"], left["finalizer"]) == (
        "Widget", cluster.namespace, "w1", f"{group}/cleanup")
    # named by its Deployment, also where what runs is its Pod (a real cluster's, through its ReplicaSet: that the
    # deletion takes those too is what a real server showed kfin's prediction had missed, answering clean: true)
    assert f"its only controller Deployment {ops}/widget-operator is deleted" in left["reason"]
    if deleting == "deployment":
        assert {d["kind"] for d in report["wouldDelete"]} == {"ReplicaSet", "Pod"}
    actions = [s["command"] or s["note"] for s in report["plan"]]
    assert actions[:2] == [f"kubectl delete widgets.{group} w1 -n {cluster.namespace}",
                           f"kfin wait widgets.{group} w1 -n {cluster.namespace} --timeout 10m"]

    cluster.delete(f"/api/v1/namespaces/{ops}" if deleting == "namespace"
                   else f"/apis/apps/v1/namespaces/{ops}/deployments/widget-operator")
    cluster.delete(widget)
    stuck = really_stuck(cluster, cluster.namespace)
    assert stuck[("Widget", "w1")]["finalizers"] == [f"{group}/cleanup"]
    cluster.strip_finalizers(widget)


@pytest.mark.controllers
def test_what_holds_a_namespace_next_is_named_before_it_holds(cluster):
    """Issue 40: since 1.34 the namespace controller deletes a namespace's Pods first and nothing else while one
    remains. A Pod kept by a finalizer holds the namespace now; the Widget whose operator runs in the namespace is
    not deleted yet. kfin explain names what holds it now first, then what will hold it next (the Widget, whose
    operator goes with the Pods), with the step that avoids it; removing the Pod's finalizer shows it was right."""
    group = cluster.widget_crd()
    ns = cluster.name("next")
    widget_operator(cluster, group, ns, cluster_wide=False)
    cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                    "metadata": {"name": "w1", "namespace": ns, "finalizers": [f"{group}/cleanup"]}})
    pod = cluster.api.create(f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/none"}]}})
    assert pod is not None
    widget = f"/apis/{group}/v1/namespaces/{ns}/widgets/w1"
    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: (cluster.get(f"/api/v1/namespaces/{ns}/pods/held") or {})
                       .get("metadata", {}).get("deletionTimestamp"), message="the namespace controller")
    assert not cluster.get(widget)["metadata"].get("deletionTimestamp")  # Pods first: the Widget waits

    result = kfin("explain", "ns", ns, "-o", "json", "--kubeconfig", str(cluster.kubeconfig))
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    plan = json.loads(result.stdout)["plan"]
    actions = [s["command"] or s["note"] for s in plan["steps"]]
    now = next(i for i, a in enumerate(actions) if f"pods held -n {ns}" in a or "pod held" in a)
    later = actions.index(f"kubectl delete widgets.{group} w1 -n {ns}")
    assert now < later, actions
    why = plan["steps"][later]["why"]
    assert why.startswith("next, it would hold the namespace: ") and f"lives in namespace {ns}" in why, why
    assert any(f"Widget.{group}/{ns}/w1" in line and "would hold it" in line for line in plan["afterwards"]), plan

    cluster.strip_finalizers(f"/api/v1/namespaces/{ns}/pods/held")  # what holds it now, dealt with
    cluster.eventually(lambda: (cluster.get(widget) or {}).get("metadata", {}).get("deletionTimestamp"),
                       message="the namespace controller to delete the Widget")
    assert ("Widget", "w1") in really_stuck(cluster, ns)  # as predicted: nothing removes its finalizer
    cluster.strip_finalizers(widget)


@pytest.mark.controllers
def test_a_namespace_already_being_deleted(cluster):
    """Issue 41, item 10: preflight of a namespace already Terminating (held by a ConfigMap whose finalizer
    nothing removes) says so first, predicts what its deletion leaves, and plans to follow it (kfin wait), never to
    delete it again."""
    ns = cluster.name("going")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    held = cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "held", "namespace": ns, "finalizers": ["example.com/hold"]}})
    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: (cluster.get(held) or {}).get("metadata", {}).get("deletionTimestamp"),
                       message="the namespace controller to delete the ConfigMap")
    try:
        report = preflight(cluster, "namespace", ns)
        assert report["terminating"] is True and report["clean"] is False
        assert ("ConfigMap", "held", "example.com/hold", "ORPHANED") in predicted(report), report["wouldBeStuck"]
        actions = [s["command"] or s["note"] for s in report["plan"]]
        assert actions[-1] == f"kfin wait namespaces {ns} --timeout 10m", actions
        assert not any(a.startswith("kubectl delete namespace") for a in actions), actions

        result = kfin("preflight", "namespace", ns, "--kubeconfig", str(cluster.kubeconfig))
        assert result.code in (0, ExitCode.PARTIAL), result.stderr
        first = result.stdout.splitlines()[0]
        assert first.startswith(f"Namespace/{ns} is already being deleted (since "), result.stdout
        assert "kfin preflight predicts what its deletion leaves" in " ".join(result.stdout.split())
        assert "kubectl delete namespace" not in result.stdout
    finally:
        cluster.strip_finalizers(held)
    assert cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace")



def node_running_a_pod(cluster, base: str, pod: str, ready: bool) -> tuple[str, str]:
    """(node, budget): Node `base` (suffixed) whose kubelet reports Ready (or stopped reporting: Unknown), Pod `pod`
    Running on it, and PodDisruptionBudget `pod` that covers it. Its heartbeat is now: a real node lifecycle
    controller keeps it Ready for its grace period (50 s), longer than the scenario needs."""
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": cluster.name(base)}})
    now = node["metadata"]["creationTimestamp"]
    status = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    if not ready:
        status = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                  "message": "Kubelet stopped posting node status."}
    conditions = {"conditions": [dict(status, lastHeartbeatTime=now, lastTransitionTime=now)]}

    def reported() -> bool:  # a real node lifecycle controller may write the node first (its taints): 409, again
        current = cluster.get(node)
        return cluster.api.send("PUT", cluster.path_of(node) + "/status", dict(current, status=conditions))[0] == 200

    cluster.eventually(reported, message="the node's status to be written")
    if cluster.get(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/default") is None:
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    created = cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "labels": {"app": pod}},
                              "spec": {"nodeName": node["metadata"]["name"],
                                       "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    cluster.set_status(created, {"phase": "Running"})
    cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": pod},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": pod}}}})
    return node["metadata"]["name"], f"PodDisruptionBudget {cluster.namespace}/{pod}"


def test_a_ready_node_is_cordoned_and_drained_before_it_is_deleted(cluster):
    """Issue 57: a Ready node running a Pod was planned as `kubectl delete nodes NAME`, "nothing would be left
    stuck". Its kubelet is alive: the plan cordons and drains it first (naming the budget that covers its Pod), then
    deletes it; deleting it as it is now is a warning of the prediction. A node whose kubelet stopped reporting
    keeps its plain plan: nothing to drain, no kubelet would stop the Pods."""
    node, budget = node_running_a_pod(cluster, "node-a", "web-0", ready=True)
    lost, _ = node_running_a_pod(cluster, "node-b", "db-0", ready=False)
    cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",  # policy/v1: {} selects every Pod
                    "metadata": {"name": "all"}, "spec": {"maxUnavailable": 1, "selector": {}}})

    report = preflight(cluster, "node", node)
    commands = [s["command"] for s in report["plan"]]
    assert commands == [f"kubectl cordon {node}", f"kubectl drain {node} --ignore-daemonsets",
                        f"kubectl delete nodes {node}", f"kfin wait nodes {node} --timeout 10m"], commands
    drain = report["plan"][1]
    assert f"{budget} covers web-0" in drain["why"], drain
    assert f"PodDisruptionBudget {cluster.namespace}/all covers web-0" in drain["why"], drain
    assert "add --force" in drain["note"]  # web-0 has no controller: kubectl drain refuses it without --force
    [warning] = report["warnings"]
    assert f"node {node} is Ready (its kubelet is alive) and runs Pod {cluster.namespace}/web-0" in warning
    assert "without eviction" in warning

    screen = kfin("preflight", "node", node, "--kubeconfig", str(cluster.kubeconfig))
    assert screen.code in (0, ExitCode.PARTIAL), screen.stderr
    assert "the deletion should complete by itself" not in screen.stdout
    assert f"  warning: node {node} is Ready" in screen.stdout
    assert screen.stdout.index(f"kubectl cordon {node}") < screen.stdout.index(f"kubectl delete nodes {node}")

    report = preflight(cluster, "node", lost)
    assert [s["command"] for s in report["plan"]] == [f"kubectl delete nodes {lost}",
                                                      f"kfin wait nodes {lost} --timeout 10m"]
    assert report["warnings"] == [] and report["clean"] is True
