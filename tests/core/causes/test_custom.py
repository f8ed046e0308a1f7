"""Custom finalizers: the controller found in the cluster through RBAC, managedFields and workloads
(kfin/core/explain/causes/custom.py), on plain values."""

from datetime import timedelta

from kfin.model import MANAGERS
from kfin.core.explain.causes import Verdict, explain_object
from tests.values import custom_type, facts, obj, pod

DELETING = timedelta(hours=1)
WIDGETS = custom_type()
FINALIZER = "example.com/cleanup"


def widget(**kwargs: object):
    return obj(WIDGETS, "w1", "shop", finalizers=(FINALIZER,), deleting_for=DELETING, **kwargs)  # type: ignore[arg-type]


def grant(account: str = "widget-operator", namespace: str = "operators"):
    role = obj("clusterroles.rbac.authorization.k8s.io", "widget-operator",
               rules=[{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "update"]}])
    binding = obj("clusterrolebindings.rbac.authorization.k8s.io", "widget-operator",
                  roleRef={"kind": "ClusterRole", "name": "widget-operator"},
                  subjects=[{"kind": "ServiceAccount", "name": account, "namespace": namespace}])
    return role, binding


def operator_pod(ready: bool):
    running = pod("widget-operator-1", "operators")
    running.raw["spec"]["serviceAccountName"] = "widget-operator"
    running.raw["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return running


def test_a_running_controller_allowed_to_update_the_resource_is_waited_for():
    """It runs and added the finalizer (its field manager is its ServiceAccount): shown to own it, WAITING."""
    w = widget(**{MANAGERS: {FINALIZER: "widget-operator"}})
    [finding] = explain_object(w, facts(w, *grant(), operator_pod(ready=True), extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True


def test_an_installed_controller_that_does_not_run_is_stalled_with_its_pod_named():
    """It will not remove the finalizer until someone fixes it: STALLED, not WAITING (issue 40)."""
    w = widget()
    [finding] = explain_object(w, facts(w, *grant(), operator_pod(ready=False), extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is False
    assert [link.target.name for link in finding.links] == ["widget-operator-1"]


def test_no_grant_no_workload_no_manager_is_orphaned():
    w = widget()
    [finding] = explain_object(w, facts(w, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.ORPHANED and finding.remove_command


def test_rbac_that_cannot_be_read_is_unknown():
    w = widget()
    known = facts(w, extra_types=(WIDGETS,), unlisted=("clusterroles", "clusterrolebindings"))
    [finding] = explain_object(w, known).findings
    assert finding.verdict == Verdict.UNKNOWN


def test_the_field_manager_that_added_it_is_evidence():
    w = widget(**{MANAGERS: {FINALIZER: "widget-operator"}})
    [finding] = explain_object(w, facts(w, extra_types=(WIDGETS,))).findings
    assert 'added by field manager "widget-operator"' in " ".join(finding.evidence)


def binding_to(role_name: str, rules: list, subject: dict):
    role = obj("clusterroles.rbac.authorization.k8s.io", role_name, rules=rules)
    bound = obj("clusterrolebindings.rbac.authorization.k8s.io", role_name,
                roleRef={"kind": "ClusterRole", "name": role_name}, subjects=[subject])
    return role, bound


def test_a_system_role_that_names_the_resource_is_a_controller_kfin_cannot_call_gone():
    """kube-controller-manager's rights come from system: roles, bound to a User: never ORPHANED then."""
    w = widget()
    rbac = binding_to("system:controller:widget-controller",
                      [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["update"]}],
                      {"kind": "User", "name": "system:kube-controller-manager"})
    [finding] = explain_object(w, facts(w, *rbac, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.UNKNOWN
    assert "User system:kube-controller-manager" in finding.condition


def test_a_system_role_with_wildcards_only_is_no_evidence_of_this_controller():
    w = widget()
    rbac = binding_to("system:controller:generic-garbage-collector",
                      [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "update", "patch"]}],
                      {"kind": "ServiceAccount", "name": "generic-garbage-collector", "namespace": "kube-system"})
    [finding] = explain_object(w, facts(w, *rbac, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.ORPHANED


def test_a_custom_role_with_wildcards_is_followed_to_its_workload():
    w = widget(**{MANAGERS: {FINALIZER: "widget-operator"}})
    rbac = binding_to("widget-operator", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
                      {"kind": "ServiceAccount", "name": "widget-operator", "namespace": "operators"})
    [finding] = explain_object(w, facts(w, *rbac, operator_pod(ready=True), extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True


def test_a_running_controller_forbidden_to_update_is_named_with_the_missing_grant():
    w = widget(**{MANAGERS: {FINALIZER: "widget-operator"}})
    operator = obj("deploy.apps", "widget-operator", "operators",
                   spec={"replicas": 1, "template": {"spec": {"serviceAccountName": "widget-operator"}}},
                   status={"readyReplicas": 1})
    reader = binding_to("widget-reader", [{"apiGroups": ["example.com"], "resources": ["widgets"],
                                           "verbs": ["get", "list"]}],
                        {"kind": "ServiceAccount", "name": "widget-operator", "namespace": "operators"})
    [finding] = explain_object(w, facts(w, operator, *reader, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is True  # runs, cannot act (issue 40)
    assert "forbidden to update widgets.example.com" in finding.condition
    assert "grant ServiceAccount operators/widget-operator update and patch on widgets.example.com" in finding.fix


def operator_deployment(replicas: int = 1, ready: int = 0):
    return obj("deploy.apps", "widget-operator", "operators",
               spec={"replicas": replicas, "template": {"spec": {"serviceAccountName": "widget-operator"}}},
               status={"readyReplicas": ready})


def test_a_crash_looping_controller_named_by_its_field_manager_is_stalled_with_its_pod():
    """Issue 40: the Deployment of the field manager that added it runs a Pod in CrashLoopBackOff: it will not act
    until someone fixes it. Its Pod is found through its ReplicaSet (named after the Deployment and the
    pod-template-hash label both carry), without reading ReplicaSets."""
    w = widget(**{MANAGERS: {FINALIZER: "widget-operator"}})
    deployment = operator_deployment()
    crashing = pod("widget-operator-7d9f-x2k9p", "operators", labels={"pod-template-hash": "7d9f"})
    crashing.raw["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "widget-operator-7d9f", "uid": "rs"}]
    crashing.raw["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
                              "containerStatuses": [{"name": "op", "ready": False, "restartCount": 12,
                                                     "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
    other = pod("widget-operator-other", "operators", labels={"pod-template-hash": "7d9f"})
    other.raw["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "another-7d9f", "uid": "rs2"}]
    [finding] = explain_object(w, facts(w, deployment, other, crashing, *grant(), extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is False
    assert finding.condition == (
        "its controller Deployment operators/widget-operator (the field manager that added it) is installed but not "
        "running (0/1 ready): Pod operators/widget-operator-7d9f-x2k9p is not Ready (CrashLoopBackOff, 12 restarts)")
    assert finding.fix.startswith("fix or scale up Deployment operators/widget-operator")
    assert finding.summary == f"{FINALIZER} (the controller of example.com is installed but not running)"


def test_a_controller_scaled_to_zero_is_stalled_and_says_so():
    w = widget(**{MANAGERS: {FINALIZER: "widget-operator"}})
    [finding] = explain_object(w, facts(w, operator_deployment(replicas=0), extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.STALLED
    assert finding.condition.endswith("is installed but not running (0/0 ready): scaled to zero")


def test_a_running_controller_bound_to_cluster_admin_is_allowed_not_forbidden():
    """cluster-admin is no evidence of who the controller is, but it does allow it to update: WAITING."""
    w = widget(**{MANAGERS: {FINALIZER: "widget-operator"}})
    admin = binding_to("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
                       {"kind": "ServiceAccount", "name": "widget-operator", "namespace": "operators"})
    [finding] = explain_object(w, facts(w, operator_deployment(ready=1), *admin, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True
    assert "forbidden" not in finding.condition


def test_a_running_controller_is_not_called_forbidden_when_the_namespace_rbac_cannot_be_read():
    """A RoleBinding kfin may not read could grant it: no claim of a missing grant then."""
    w = widget(**{MANAGERS: {FINALIZER: "widget-operator"}})
    known = facts(w, operator_deployment(ready=1), extra_types=(WIDGETS,), unlisted=("rolebindings",))
    [finding] = explain_object(w, known).findings
    assert finding.verdict != Verdict.STALLED and "forbidden to update" not in finding.condition
