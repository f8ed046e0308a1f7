"""WAITING, and a plan that lets a finalizer go by itself, need a live remover, proven (issue 56): a controller found
running, shown to own that finalizer name (the field manager that added it, a catalog entry, or the same name on
other objects it finalized) and saying nothing of its own that it cannot finish. Otherwise STALLED (the remover is
known and reports it cannot finish: named) or UNKNOWN (none found: what was looked for, named). `kfin stuck` and
`kfin explain` give one verdict for each finalizer, and no plan waits on nobody."""

import json
import urllib.error
import urllib.request
from datetime import UTC, datetime

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenarios.test_explain import RBAC, running_deployment

LB = "service.kubernetes.io/load-balancer-cleanup"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def explained(cluster, kind: str, name: str) -> dict:
    result = kfin("explain", kind, name, "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return json.loads(result.stdout)


def stuck_items(cluster) -> dict:
    result = kfin("stuck", "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code in (0, ExitCode.FOUND, ExitCode.PARTIAL), result.stderr
    return {item["name"]: item for item in json.loads(result.stdout)["items"]}


def one_verdict(cluster, kind: str, name: str, finalizer: str) -> tuple[dict, dict, str]:
    """(explain's finding, explain's report, the verdict) of one finalizer, after checking that `kfin stuck -o json`
    gives the object the same verdict for it (its item's findings) and, where it speaks for the object, as its own."""
    report = explained(cluster, kind, name)
    [finding] = [f for f in report["findings"] if f["finalizer"] == finalizer]
    item = stuck_items(cluster)[name]
    [listed] = [f for f in item["findings"] if f["finalizer"] == finalizer]
    assert listed == {"finalizer": finalizer, "field": "metadata.finalizers", "verdict": finding["verdict"]}, item
    if len(report["findings"]) == 1:
        assert item["verdict"] == finding["verdict"], (item, finding)
    return finding, report, finding["verdict"]


def steps(report: dict) -> list[dict]:
    return report["plan"]["steps"] if report["plan"] else []


def never_waits(report: dict) -> None:
    """No step of the plan only waits: each says what to do."""
    for step in steps(report):
        assert not (step["command"] is None and (step["note"] or "").startswith("wait")), step


# ----- (a) a LoadBalancer Service, and the cloud controller manager no cluster here runs ----------------------------

def load_balancer_service(cluster, name: str) -> dict:
    return cluster.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "finalizers": [LB]},
                           "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": 8080}]}})


def preflight(cluster, *args) -> dict:
    result = kfin("preflight", *args, "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return json.loads(result.stdout)


def test_a_load_balancer_without_a_cloud_controller_manager_is_unknown_and_stays_waiting_once_one_renews(cluster):
    """No cloud controller manager runs on either tier (the fake pretends none): nobody deletes the load balancer.
    UNKNOWN, saying what was looked for (its lease, its Pods in kube-system), no waiting step, and preflight before
    the DELETE says the Service would be left stuck. Once a cloud-controller-manager lease is created and renewed, it
    waits for it: WAITING, and preflight sees nothing left stuck."""
    svc = load_balancer_service(cluster, "web")
    other = load_balancer_service(cluster, "shop")
    lease_path = f"{LEASES}/cloud-controller-manager"
    try:
        before = preflight(cluster, "svc", "web")
        assert before["clean"] is False
        [stays] = [s for s in before["wouldBeStuck"] if s["finalizer"] == LB]
        assert stays["object"]["name"] == "web" and stays["verdict"] == "UNKNOWN"
        assert "no cloud controller manager was found" in stays["reason"]
        assert "no cloud-controller-manager lease is visible" in stays["reason"]
        assert "no Pod in kube-system is named or labelled cloud-controller-manager (" in stays["reason"]

        cluster.delete(svc)
        f, report, verdict = one_verdict(cluster, "svc", "web", LB)
        assert verdict == "UNKNOWN" and f["controllerAlive"] is None
        assert "no cloud-controller-manager lease is visible (not installed, or hidden by a managed control plane)" \
            in f["evidence"]
        assert any(e.startswith("no Pod in kube-system is named or labelled cloud-controller-manager") for e in
                   f["evidence"]), f["evidence"]
        never_waits(report)
        [step] = steps(report)
        assert step["note"].startswith("find out whether a cloud controller manager runs")
        assert step["more"][0]["command"] == (f"kfin remove services web -n {cluster.namespace} --finalizer {LB} "
                                              "--force --confirm")

        # a cloud controller manager that renews its lease: it deletes the load balancer, kfin waits for it
        lease = cluster.api.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {
            "name": "cloud-controller-manager"}, "spec": {"holderIdentity": "ccm-1", "leaseDurationSeconds": 15,
                                                          "acquireTime": micro_now(), "renewTime": micro_now()}})
        lease["spec"]["renewTime"] = micro_now()
        cluster.api.ok("PUT", lease_path, lease)  # renewed
        f, report, verdict = one_verdict(cluster, "svc", "web", LB)
        assert verdict == "WAITING" and f["controllerAlive"] is True, (verdict, f["controllerAlive"], f["evidence"])
        assert any(e.startswith("cloud-controller-manager is running (its lease was renewed") for e in f["evidence"])
        assert preflight(cluster, "svc", "shop")["clean"] is True
    finally:
        cluster.api.delete(lease_path)
        for made in (svc, other):
            cluster.strip_finalizers(made)


# ----- (b), (c) an operator that runs and owns its finalizer, and what it reports -----------------------------------

def bucket_operator(cluster) -> tuple[str, str]:
    """(group, Widgets path): the bucket operator runs (Deployment and ServiceAccount bucket-operator, its Pod Ready
    as a kubelet would say) and may update Widgets (a ClusterRole bound to its ServiceAccount)."""
    group = cluster.widget_crd()
    running_deployment(cluster, "bucket-operator", "bucket-operator")
    role = cluster.name("bucket-operator")
    cluster.create({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": role}, "rules": [
        {"apiGroups": [group], "resources": ["widgets"], "verbs": ["get", "list", "watch", "update", "patch"]}]})
    cluster.create({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": role},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [{"kind": "ServiceAccount", "name": "bucket-operator",
                                  "namespace": cluster.namespace}]})
    return group, f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"


def widget_finalized_by(cluster, path: str, name: str, finalizer: str, manager: str, delete: bool = True) -> dict:
    """Widget `name`, whose finalizer field manager `manager` added (its first write, as an operator's patch of a
    Widget made by someone else), then deleted."""
    group = path.split("/")[2]
    made = cluster.api.create(path, {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name},
                                     "spec": {"bucket": f"b-{name}"}})
    code, answer = cluster.api.send("PATCH", f"{path}/{name}?fieldManager={manager}",
                                    {"metadata": {"finalizers": [finalizer]}},
                                    content_type="application/merge-patch+json")
    assert code == 200, answer
    added = [m["manager"] for m in answer["metadata"].get("managedFields") or []
             if f'v:"{finalizer}"' in (m.get("fieldsV1") or {}).get("f:metadata", {}).get("f:finalizers", {})]
    assert added == [manager], answer["metadata"].get("managedFields")  # what kfin reads
    if delete:
        cluster.delete(f"{path}/{name}")
    return made


def report_event(cluster, widget: dict, name: str, kind: str, reason: str, message: str, count: int) -> None:
    """An Event about the Widget as its operator reports one (a recorder's core v1 Event), last seen now."""
    meta = widget["metadata"]
    cluster.create({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
                    "involvedObject": {"apiVersion": widget["apiVersion"], "kind": "Widget", "name": meta["name"],
                                       "namespace": cluster.namespace, "uid": meta["uid"]},
                    "reason": reason, "message": message, "type": kind, "count": count,
                    "firstTimestamp": now(), "lastTimestamp": now(), "source": {"component": "bucket-operator"}})


def write_status(cluster, path: str, name: str, conditions: list[dict]) -> None:
    """The operator's status conditions on the Widget (its CRD has no status subresource: written on the object)."""
    code, answer = cluster.api.send("PATCH", f"{path}/{name}?fieldManager=bucket-operator",
                                    {"status": {"conditions": conditions}},
                                    content_type="application/merge-patch+json")
    assert code == 200, answer


@pytest.mark.controllers
def test_an_operator_that_reports_it_cannot_finish_is_stalled_in_stuck_and_explain_alike(cluster):
    """The bucket operator runs and added the finalizer, but reports ReconcileError twelve times on the Widget: it
    cannot finish. STALLED in both commands, the event named with its reason, message and count, and the plan says
    what to fix instead of waiting. A Synced condition it writes False with ReconcileError is the same evidence."""
    group, path = bucket_operator(cluster)
    finalizer = f"{group}/bucket-cleanup"
    widget = widget_finalized_by(cluster, path, "w1", finalizer, "bucket-operator")
    other = widget_finalized_by(cluster, path, "w2", finalizer, "bucket-operator")
    try:
        f, _, verdict = one_verdict(cluster, f"widgets.{group}", "w1", finalizer)
        assert verdict == "WAITING" and f["controllerAlive"] is True, f  # nothing said against it yet

        message = "failed to delete bucket: secret aws-creds not found"
        report_event(cluster, widget, "w1.reconcile", "Warning", "ReconcileError", message, 12)
        said = f"Warning event ReconcileError: {message} (x12)"
        f, report, verdict = one_verdict(cluster, f"widgets.{group}", "w1", finalizer)
        assert verdict == "STALLED" and f["controllerAlive"] is True, f
        assert f["condition"] == f"the controller of {group} runs but reports it cannot finish: {said}"
        assert said in stuck_items(cluster)["w1"]["blocker"]
        never_waits(report)
        [step] = steps(report)
        assert step["note"] == f"fix what the controller of {group} reports: {said}"
        assert step["more"][0]["command"] == (f"kfin remove widgets.{group} w1 -n {cluster.namespace} "
                                              f"--finalizer {finalizer} --confirm")
        assert [(e["reason"], e["count"], e["message"]) for e in report["events"]] == [("ReconcileError", 12, message)]

        # Crossplane's way: Synced False with ReconcileError and the error, on the object itself
        error = "cannot delete external resource: AccessDenied"
        write_status(cluster, path, "w2", [{"type": "Ready", "status": "False", "reason": "Deleting",
                                            "lastTransitionTime": now()},
                                           {"type": "Synced", "status": "False", "reason": "ReconcileError",
                                            "message": error, "lastTransitionTime": now()}])
        f, report, verdict = one_verdict(cluster, f"widgets.{group}", "w2", finalizer)
        assert verdict == "STALLED", f
        assert f["condition"].endswith(f"reports it cannot finish: condition Synced False (ReconcileError): {error}")
        never_waits(report)
    finally:
        for made in (widget, other):
            cluster.strip_finalizers(f"{path}/{made['metadata']['name']}")


@pytest.mark.controllers
def test_an_operator_that_reports_progress_stays_waiting_in_stuck_and_explain_alike(cluster):
    """The counterpart: the same operator reports progress (a Normal event; Ready False with reason Deleting, as
    Crossplane writes it; a Warning it answered with progress since), nothing it says is a failure: WAITING in both
    commands, its progress quoted."""
    group, path = bucket_operator(cluster)
    finalizer = f"{group}/bucket-cleanup"
    widget = widget_finalized_by(cluster, path, "w1", finalizer, "bucket-operator")
    other = widget_finalized_by(cluster, path, "w2", finalizer, "bucket-operator")
    try:
        report_event(cluster, widget, "w1.deleting", "Normal", "Deleting", "deleting bucket, 3 of 10 objects left", 4)
        f, _, verdict = one_verdict(cluster, f"widgets.{group}", "w1", finalizer)
        assert verdict == "WAITING" and f["controllerAlive"] is True, (verdict, f["controllerAlive"], f["evidence"])
        assert ("its controller reports progress: Normal event Deleting: deleting bucket, 3 of 10 objects left (x4)"
                in f["evidence"]), f["evidence"]

        write_status(cluster, path, "w2", [{"type": "Ready", "status": "False", "reason": "Deleting",
                                            "lastTransitionTime": now()},
                                           {"type": "Synced", "status": "True", "reason": "ReconcileSuccess",
                                            "lastTransitionTime": now()}])
        f, _, verdict = one_verdict(cluster, f"widgets.{group}", "w2", finalizer)
        assert verdict == "WAITING", f
        assert "its controller reports progress: condition Ready False (Deleting)" in f["evidence"], f["evidence"]
    finally:
        for made in (widget, other):
            cluster.strip_finalizers(f"{path}/{made['metadata']['name']}")


# ----- (d) a finalizer a person added --------------------------------------------------------------------------------

@pytest.mark.controllers
def test_a_finalizer_a_person_added_is_not_waited_for_although_the_operator_of_its_group_runs(cluster):
    """The bucket operator runs and finalizes its Widgets with bucket-cleanup. Someone added `hold` to w1 with
    kubectl (field manager kubectl-client-side-apply): the operator never wrote that name, on w1 or any other Widget,
    and will never remove it. UNKNOWN, naming who added it, the kfin remove step for after checking what it guards.
    The operator's own name on w2, and the same name put back by hand on w3, are its own: WAITING."""
    group, path = bucket_operator(cluster)
    held, own = f"{group}/hold", f"{group}/bucket-cleanup"
    by_hand = widget_finalized_by(cluster, path, "w1", held, "kubectl-client-side-apply", delete=False)
    by_operator = widget_finalized_by(cluster, path, "w2", own, "bucket-operator")
    again = widget_finalized_by(cluster, path, "w3", own, "kubectl-edit")
    try:
        # foreseen before the DELETE: nothing is shown to remove it
        [stays] = [s for s in preflight(cluster, f"widgets.{group}", "w1")["wouldBeStuck"] if s["finalizer"] == held]
        assert stays["verdict"] == "UNKNOWN" and "kubectl-client-side-apply" in stays["reason"], stays
        cluster.delete(f"{path}/w1")
        f, report, verdict = one_verdict(cluster, f"widgets.{group}", "w1", held)
        assert verdict == "UNKNOWN" and f["controllerAlive"] is None, f
        assert ('added by field manager "kubectl-client-side-apply" (a person\'s kubectl, not a controller)'
                in f["condition"]), f["condition"]
        assert any(e.startswith(f"{held} was added by field manager \"kubectl-client-side-apply\"") for e in
                   f["evidence"]), f["evidence"]
        assert f"no other widgets.{group} carries {held}" in f["evidence"]
        remove = f"kfin remove widgets.{group} w1 -n {cluster.namespace} --finalizer {held} --confirm"
        assert f["removeCommand"] == remove
        never_waits(report)
        [step] = steps(report)
        assert step["note"].startswith(f"find out what {held} guards and whether anything removes it")
        assert step["more"] == [{"command": remove, "when": "once you checked what it guards and cleaned it up by hand",
                                 "note": None}]

        f, _, verdict = one_verdict(cluster, f"widgets.{group}", "w2", own)
        assert verdict == "WAITING", f
        assert any(e.endswith(f'owns {own}: it added it (field manager "bucket-operator")') for e in f["evidence"])
        f, _, verdict = one_verdict(cluster, f"widgets.{group}", "w3", own)
        assert verdict == "WAITING", f  # the same name it put on w2: its own, whoever put it back on w3
        assert any(f"owns {own}: it added it to Widget {cluster.namespace}/w2" in e for e in f["evidence"]), f
    finally:
        for made in (by_hand, by_operator, again):
            cluster.strip_finalizers(f"{path}/{made['metadata']['name']}")


# ----- (e) an operator that runs outside the cluster, as a user ------------------------------------------------------

def made_a_second_ago(cluster, create):
    """What `create` makes, such that a write after it lands in a later second (kube-apiserver stamps creationTimestamp
    and managedFields to the second, and a write in the creation's own second cannot be told from the creation): the
    fake makes it a few seconds back (its clock), the real tier waits for the clock to pass it."""
    if cluster.is_fake:
        cluster.fake.cluster.clock_offset = -5
        try:
            return create()
        finally:
            cluster.fake.cluster.clock_offset = 0
    made = create()
    created = made["metadata"]["creationTimestamp"]
    cluster.eventually(lambda: now() > created, message="the clock to pass the creation's second")
    return made


def as_user(cluster, user: str, method: str, path: str, body: dict, content_type: str = "application/json"):
    """A request sent as `user` (impersonated by the scenario's admin, as `kubectl --as`): a process run under a
    person's identity, as an operator run from a laptop is."""
    headers = {"Authorization": f"Bearer {cluster.token}", "Accept": "application/json",
               "Content-Type": content_type, "Impersonate-User": user}
    request = urllib.request.Request(cluster.server + path, data=json.dumps(body).encode(), method=method,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, context=cluster.api._context, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_an_operator_run_outside_the_cluster_as_a_user_is_never_orphaned_while_it_writes(cluster):
    """No workload in the cluster, RBAC grants update on Widgets to a User only: an operator run as that user from a
    laptop (`kopf run`). It added the finalizer and keeps writing to the Widget (field manager widget-kopf): its writes
    show it acts. WAITING in both commands, naming the field manager and when it last wrote; never ORPHANED."""
    group = cluster.widget_crd()
    user = cluster.name("dev")
    role = cluster.name("widget-dev")
    cluster.create({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": role}, "rules": [
        {"apiGroups": [group], "resources": ["widgets"], "verbs": ["get", "list", "watch", "create", "update", "patch"]}]})
    cluster.create({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": role},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]})
    path = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"
    finalizer = f"{group}/kopf-cleanup"

    def create():
        code, made = as_user(cluster, user, "POST", f"{path}?fieldManager=widget-kopf", {
            "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "finalizers": [finalizer]}})
        assert code == 201, made
        return made

    made_a_second_ago(cluster, create)
    try:
        cluster.delete(f"{path}/w1")
        code, answer = as_user(cluster, user, "PATCH", f"{path}/w1?fieldManager=widget-kopf",
                               {"metadata": {"annotations": {"kopf.example/last-attempt": now()}}},
                               "application/merge-patch+json")  # its deletion handler retries, and says so
        assert code == 200, answer
        f, report, verdict = one_verdict(cluster, f"widgets.{group}", "w1", finalizer)
        assert verdict == "WAITING", f
        assert f["condition"].startswith("no workload of its controller runs in the cluster, but field manager "
                                         f'"widget-kopf", which added it, last wrote to Widget {cluster.namespace}/w1 ')
        assert "ago: it acts from outside the cluster" in f["condition"]
        assert f"the ClusterRole {role} grants update on widgets.{group} to User {user}" in f["evidence"]
    finally:
        cluster.strip_finalizers(f"{path}/w1")


def test_an_operator_run_from_a_laptop_with_an_admin_kubeconfig_is_not_orphaned_while_it_writes(cluster):
    """The same operator run with an administrator's kubeconfig (system:masters, no RBAC binding names it): no
    workload, no grant beyond what every cluster has. What proves ORPHANED otherwise comes up empty, but its field
    manager wrote to the Widget a moment ago: someone acts. WAITING, never ORPHANED."""
    group = cluster.widget_crd()
    path = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"
    finalizer = f"{group}/kopf-cleanup"
    made_a_second_ago(cluster, lambda: cluster.api.ok("POST", f"{path}?fieldManager=widget-kopf", {
        "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "finalizers": [finalizer]}}))
    try:
        cluster.delete(f"{path}/w1")
        f, _, verdict = one_verdict(cluster, f"widgets.{group}", "w1", finalizer)
        assert verdict == "ORPHANED", f  # its write that created the Widget is no sign that anything acts since
        code, answer = cluster.api.send("PATCH", f"{path}/w1?fieldManager=widget-kopf",
                                        {"metadata": {"annotations": {"kopf.example/last-attempt": now()}}},
                                        content_type="application/merge-patch+json")
        assert code == 200, answer
        f, report, verdict = one_verdict(cluster, f"widgets.{group}", "w1", finalizer)
        assert verdict == "WAITING" and f["removeCommand"] is None, f
        assert 'field manager "widget-kopf", which added it, last wrote to Widget' in f["condition"]
    finally:
        cluster.strip_finalizers(f"{path}/w1")
