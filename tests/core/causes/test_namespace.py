"""The namespace controller's `kubernetes` finalizer (spec.finalizers), on plain values."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from kfin.model import Failure
from tests.values import custom_type, facts, lease, obj

DELETING = timedelta(hours=2)


def namespace(name: str = "team-a", deleting: bool = True, conditions: list | None = None):
    return obj("namespaces", name, deleting_for=DELETING if deleting else None, spec={"finalizers": ["kubernetes"]},
               status={"phase": "Terminating" if deleting else "Active", "conditions": conditions or []})


def test_content_that_remains_holds_the_namespace_and_the_stuck_part_is_linked():
    ns = namespace()
    stuck = obj("configmaps", "settings", "team-a", finalizers=("example.com/keep",), deleting_for=DELETING)
    other = obj("secrets", "token", "team-a")
    [finding] = explain_object(ns, facts(ns, stuck, other, lease())).findings
    assert finding.location == "spec.finalizers" and finding.verdict == Verdict.HOLDING
    assert finding.condition.startswith("2 objects remain (1 terminating)")
    assert [link.target.name for link in finding.links] == ["settings"]


def test_an_unavailable_apiservice_is_the_root_cause_not_the_content():
    ns = namespace()
    broken = obj("apiservices.apiregistration.k8s.io", "v1beta1.metrics.k8s.io",
                 spec={"group": "metrics.k8s.io", "version": "v1beta1"},
                 status={"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints",
                                         "message": "no endpoints"}]})
    [finding] = explain_object(ns, facts(ns, broken, lease())).findings
    assert finding.verdict == Verdict.HOLDING and "discovery" in finding.condition
    assert [link.target.name for link in finding.links] == ["v1beta1.metrics.k8s.io"]
    assert "apiservice v1beta1.metrics.k8s.io" in finding.fix


def test_an_empty_namespace_waits_for_the_controller():
    ns = namespace()
    [finding] = explain_object(ns, facts(ns, lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True


def test_a_condition_without_a_type_is_ignored_not_a_crash():
    ns = namespace(conditions=[{}, {"type": "NamespaceContentRemaining", "status": "False"}])
    [finding] = explain_object(ns, facts(ns, lease())).findings
    assert finding.verdict == Verdict.WAITING


# The namespace controller's condition when RBAC refuses it: makeDeleteContentCondition's "Failed to delete all
# resource types, N remaining: " (pkg/controller/namespace/deletion/status_condition_utils.go) joining NewForbidden
# of a collection around apiserver's forbiddenMessage (endpoints/handlers/responsewriters/errors.go)
REFUSED = ('Failed to delete all resource types, 1 remaining: configmaps is forbidden: User '
           '"system:serviceaccount:kube-system:namespace-controller" cannot deletecollection resource "configmaps" in '
           'API group "" in the namespace "team-a"')
CONTROLLER_ROLE = "system:controller:namespace-controller"


def bootstrap_rbac(verbs: tuple[str, ...] = ("get", "list", "delete")):
    role = obj("clusterroles.rbac.authorization.k8s.io", CONTROLLER_ROLE,
               rules=[{"apiGroups": ["*"], "resources": ["*"], "verbs": list(verbs)}])
    binding = obj("clusterrolebindings.rbac.authorization.k8s.io", CONTROLLER_ROLE,
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CONTROLLER_ROLE},
                  subjects=[{"kind": "ServiceAccount", "name": "namespace-controller", "namespace": "kube-system"}])
    return role, binding


def test_a_namespace_controller_that_rbac_forbids_is_stalled_with_the_right_it_lacks():
    """Issue 40: its NamespaceDeletionContentFailure says RBAC refuses it deletecollection of configmaps (its
    ClusterRole was edited): STALLED, naming the bootstrap ClusterRole and binding that give it the right, not UNKNOWN."""
    ns = namespace(conditions=[{"type": "NamespaceDeletionContentFailure", "status": "True",
                                "reason": "ContentDeletionFailed", "message": REFUSED}])
    cm = obj("configmaps", "settings", "team-a")
    role, binding = bootstrap_rbac()
    [finding] = explain_object(ns, facts(ns, cm, role, binding, lease())).findings
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is True
    assert finding.condition.startswith("RBAC forbids the namespace controller "
                                        "(system:serviceaccount:kube-system:namespace-controller) deletecollection on "
                                        "configmaps")
    assert finding.fix.startswith(f"restore ClusterRole {CONTROLLER_ROLE} (its rule {{apiGroups: [\"*\"], resources: "
                                  '["*"], verbs: ["get", "list", "delete", "deletecollection"]}) and its '
                                  f"ClusterRoleBinding {CONTROLLER_ROLE} to ServiceAccount kube-system/namespace-controller")
    assert f'ClusterRole {CONTROLLER_ROLE} grants no deletecollection on configmaps (API group "")' in finding.evidence
    assert f"condition NamespaceDeletionContentFailure: {REFUSED}" in finding.evidence
    [link] = finding.links
    assert link.kind == "forbidden" and link.target is role and link.step
    assert [a.command for a in link.step] == [None] and link.step[0].note in finding.fix  # no kubectl command for it


def test_a_namespace_controller_whose_binding_is_gone_names_it_and_a_kube_controller_manager_acting_as_itself():
    ns = namespace(conditions=[{"type": "NamespaceDeletionContentFailure", "status": "True",
                                "reason": "ContentDeletionFailed", "message": REFUSED}])
    role, _ = bootstrap_rbac(("get", "list", "delete", "deletecollection"))
    [finding] = explain_object(ns, facts(ns, obj("configmaps", "settings", "team-a"), role, lease())).findings
    assert finding.verdict == Verdict.STALLED
    assert f"ClusterRoleBinding {CONTROLLER_ROLE} was not found" in finding.evidence
    assert not any(line.startswith(f"ClusterRole {CONTROLLER_ROLE} grants no") for line in finding.evidence)
    # without --use-service-account-credentials, kube-controller-manager asks as itself
    itself = REFUSED.replace("system:serviceaccount:kube-system:namespace-controller", "system:kube-controller-manager")
    ns = namespace(conditions=[{"type": "NamespaceDeletionContentFailure", "status": "True",
                                "reason": "ContentDeletionFailed", "message": itself}])
    [finding] = explain_object(ns, facts(ns, obj("configmaps", "settings", "team-a"), lease())).findings
    assert finding.verdict == Verdict.STALLED
    assert finding.fix.startswith("grant system:kube-controller-manager deletecollection on configmaps")


# The namespace controller's condition when an aggregated API is down (client-go's ErrGroupDiscoveryFailed, as
# pkg/controller/namespace/deletion/status_condition_utils.go ProcessDiscoverResourcesErr words it; the real tier's)
DISCOVERY_FAILED = {"type": "NamespaceDeletionDiscoveryFailure", "status": "True", "reason": "DiscoveryFailed",
                    "lastTransitionTime": "2026-11-23T11:59:00Z",
                    "message": "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of "
                               "server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"}
WIDGETS = custom_type()


def apiservice(available: bool):
    return obj("apiservices.apiregistration.k8s.io", "v1beta1.metrics.k8s.io",
               spec={"group": "metrics.k8s.io", "version": "v1beta1", "service": {"name": "metrics-server"}},
               status={"conditions": [{"type": "Available", "status": "True" if available else "False",
                                       "lastTransitionTime": "2026-11-23T11:59:30Z",
                                       "reason": "Passed" if available else "ServiceNotFound", "message": "m"}]})


def test_an_unavailable_apiservice_and_stuck_content_are_both_named():
    """The namespace controller deletes what it can discover although discovery fails: what it deleted and is
    still held is named beside the APIService, never hidden by it."""
    ns = namespace(conditions=[DISCOVERY_FAILED])
    widget = obj(WIDGETS, "w1", "team-a", finalizers=("example.com/cleanup",), deleting_for=DELETING)
    [finding] = explain_object(ns, facts(ns, widget, apiservice(False), lease())).findings
    assert finding.verdict == Verdict.HOLDING
    assert "cannot finish" in finding.condition and "stops before" not in finding.condition
    assert [link.kind for link in finding.links] == ["content", "discovery-failure"]
    assert [link.target.name for link in finding.links] == ["w1", "v1beta1.metrics.k8s.io"]
    assert "kubectl delete apiservice v1beta1.metrics.k8s.io" in finding.fix and "<" not in finding.fix


def test_a_discovery_failure_the_live_cluster_contradicts_is_out_of_date_and_planned_for_nowhere():
    """The APIService is gone (or Available again) but the controller has not retried yet: the condition is said to
    be out of date, the empty namespace waits for the controller, and nothing is planned for the APIService."""
    ns = namespace(conditions=[DISCOVERY_FAILED])
    for present in ((), (apiservice(True),)):
        [finding] = explain_object(ns, facts(ns, *present, lease())).findings
        assert finding.verdict == Verdict.WAITING, finding
        assert "out of date" in finding.condition and "has not retried since" in finding.condition
        assert ("APIService v1beta1.metrics.k8s.io is gone" if not present else
                "APIService v1beta1.metrics.k8s.io is Available again since 2026-11-23T11:59:30Z") in finding.condition
        assert not finding.links and "apiservice" not in finding.fix
        assert finding.fix.startswith("nothing to fix: the namespace controller retries within a minute (its backoff)")
        assert any(line.startswith(f"condition NamespaceDeletionDiscoveryFailure: {DISCOVERY_FAILED['message']} "
                                   "(True since 2026-11-23T11:59:00Z, 60s ago): out of date") for line in finding.evidence)


def test_an_out_of_date_discovery_failure_leaves_what_still_holds_the_namespace():
    ns = namespace(conditions=[DISCOVERY_FAILED])
    widget = obj(WIDGETS, "w1", "team-a", finalizers=("example.com/cleanup",), deleting_for=DELETING)
    [finding] = explain_object(ns, facts(ns, widget, lease())).findings
    assert finding.verdict == Verdict.HOLDING and finding.condition.startswith("1 object remains (1 terminating): ")
    assert [link.target.name for link in finding.links] == ["w1"]


def test_a_discovery_failure_kfin_sees_too_without_an_apiservice_names_no_placeholder():
    ns = namespace(conditions=[DISCOVERY_FAILED])
    failed = Failure("discovery", "metrics.k8s.io/v1beta1", "ServiceUnavailable", "service unavailable (503)")
    [finding] = explain_object(ns, facts(ns, lease(), failures=(failed,))).findings
    assert finding.verdict == Verdict.HOLDING and "cannot finish" in finding.condition
    assert "<" not in finding.fix and "kubectl get --raw /apis/metrics.k8s.io/v1beta1" in finding.fix
