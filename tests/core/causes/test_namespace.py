"""The namespace controller's `kubernetes` finalizer (spec.finalizers), on plain values."""

from datetime import timedelta

from kfin.core.causes import Verdict, explain_object
from tests.values import facts, lease, obj

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
