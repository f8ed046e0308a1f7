"""Custom finalizers: the controller found in the cluster through RBAC, managedFields and workloads
(kfin/core/causes/custom.py), on plain values."""

from datetime import timedelta

from kfin.api.scan import MANAGERS
from kfin.core.causes import Verdict, explain_object
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
    w = widget()
    [finding] = explain_object(w, facts(w, *grant(), operator_pod(ready=True), extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True


def test_an_installed_controller_that_does_not_run_is_waited_for_with_its_pod_named():
    w = widget()
    [finding] = explain_object(w, facts(w, *grant(), operator_pod(ready=False), extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is False
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
