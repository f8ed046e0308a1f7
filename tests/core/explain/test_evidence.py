"""Issue 40: no answer contradicts the evidence kfin holds. For every cause kfin knows (each finalizer name of the
registry's catalog and of the operators' catalog, and each cause of a deletion without a finalizer), on every kind
of object it may sit on: when the object reports a failure condition, or kfin's own read of what it needs failed, the
answer is never that progress is under way (WAITING) nor worded as an all-clear."""

from datetime import timedelta

import pytest

from kfin.core.read import catalog
from kfin.core.explain.causes import Verdict, explain_object
from kfin.core.explain.causes.registry import CATALOG, DELETION_CAUSES, account_for_evidence
from kfin.model import MANAGERS, Failure
from tests.core.causes.test_custom import FINALIZER, WIDGETS, grant, operator_pod
from tests.values import custom_type, facts, lease, node, obj, pod

ALL_CLEAR = ("within seconds", "is empty", "complete on its own", "nothing to fix", "goes by itself",
             "should complete", "nothing would be left stuck")
KINDS = ("namespaces", "pvc", "pv", "pods", "services", "configmaps", "deploy.apps", "widgets")


def _names() -> list[str]:
    """A concrete finalizer name of every entry, kfin's causes' and the operators' catalog's."""
    patterns = [entry.pattern for entry, _ in CATALOG] + [p for e in catalog.Catalog().entries() for p in e.finalizers]
    return sorted({p.replace("*", "x") for p in patterns})


def _object(kind: str, finalizer: str, **fields):
    namespace = "" if kind in ("namespaces", "pv") else "shop"
    rtype = custom_type() if kind == "widgets" else kind
    if kind == "namespaces":
        return obj(rtype, "team-a", finalizers=() if finalizer == "kubernetes" else (finalizer,),
                   deleting_for=timedelta(hours=2), spec={"finalizers": ["kubernetes"]}, **fields)
    return obj(rtype, "subject", namespace, finalizers=(finalizer,), deleting_for=timedelta(hours=2), **fields)


def _said(explanation) -> list[tuple[str, str]]:
    return [(f.verdict.value, " ".join([f.condition, f.fix, f.line])) for f in explanation.findings]


def _assert_no_all_clear(explanation, evidence: str) -> None:
    assert explanation.findings, "a Terminating object with evidence against it gets an answer"
    for verdict, words in _said(explanation):
        assert verdict != Verdict.WAITING.value, (evidence, words)
        assert not [p for p in ALL_CLEAR if p in words], (evidence, words)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("finalizer", _names())
def test_a_failure_condition_never_yields_an_all_clear(finalizer, kind):
    condition = {"type": "NamespaceDeletionContentFailure" if kind == "namespaces" else "CleanupFailed",
                 "status": "True", "reason": "Failed", "message": "cleanup failed: backend unreachable"}
    subject = _object(kind, finalizer, status={"conditions": [condition]})
    explanation = explain_object(subject, facts(subject, lease(), node("node-1"), extra_types=(custom_type(),)))
    _assert_no_all_clear(explanation, "a failure condition")
    assert any("cleanup failed: backend unreachable" in " ".join([*f.evidence, f.condition])
               for f in explanation.findings)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("finalizer", _names())
def test_a_failed_read_of_its_own_kind_never_yields_an_all_clear(finalizer, kind):
    subject = _object(kind, finalizer)
    where = f" in namespace {subject.namespace}" if subject.namespace else ""
    failed = Failure("list", f"{subject.type.qualified}{where}", "InternalError", "the server could not read it")
    explanation = explain_object(subject, facts(subject, lease(), node("node-1"), failures=(failed,),
                                                extra_types=(custom_type(),)))
    _assert_no_all_clear(explanation, "a failed read")


def _deleted_without_finalizers():
    failing = {"type": "CleanupFailed", "status": "True", "message": "preStop hook failed"}
    graceful = pod("web-0", "shop", deleting_for=timedelta(hours=2), grace_seconds=30)
    graceful.raw["status"]["conditions"] = [failing]
    unpurged = obj("namespaces", "team-a", deleting_for=timedelta(hours=2), spec={"finalizers": []},
                   status={"phase": "Terminating", "conditions": [
                       {"type": "NamespaceDeletionContentFailure", "status": "True", "message": "preStop hook failed"}]})
    return [graceful, unpurged]


@pytest.mark.parametrize("cause", [name for name, *_ in DELETION_CAUSES])
def test_a_deletion_without_finalizers_against_evidence_is_never_an_all_clear(cause):
    [applies] = [applies for name, applies, *_ in DELETION_CAUSES if name == cause]
    [subject] = [o for o in _deleted_without_finalizers() if applies(o)]
    explanation = explain_object(subject, facts(subject, lease(), node("node-1")))
    _assert_no_all_clear(explanation, cause)
    assert all("preStop hook failed" in " ".join([*f.evidence, f.condition]) for f in explanation.findings)


def test_warning_events_turn_a_wait_into_unknown_with_the_events_quoted():
    deploy = obj("deploy.apps", "web", "shop", finalizers=("foregroundDeletion",), deleting_for=timedelta(minutes=30))
    explanation = explain_object(deploy, facts(deploy, lease()))
    [finding] = explanation.findings
    assert finding.verdict == Verdict.WAITING  # nothing against it yet: the collector should act
    account_for_evidence(explanation, facts(deploy, lease()),
                         [{"type": "Warning", "reason": "FailedDelete", "message": "admission webhook denied the request",
                           "count": 3}])
    [finding] = explanation.findings  # the finding as the evidence left it
    assert finding.verdict == Verdict.UNKNOWN
    assert "Warning event FailedDelete: admission webhook denied the request (x3)" in finding.evidence
    assert finding.evidence[0].startswith("before: WAITING: ")


def test_a_gap_in_kfins_view_alone_adds_no_answer_and_changes_none():
    """A read kfin was forbidden (of another type than the object's) is quoted where there is an answer, and
    makes none up where there is not; only evidence that something is wrong turns a wait into UNKNOWN."""
    cm = obj("configmaps", "going", "shop", deleting_for=timedelta(seconds=5))
    gap = Failure("list", "secrets in namespace shop", "Forbidden", "forbidden")
    assert explain_object(cm, facts(cm, lease(), failures=(gap,))).findings == []
    deploy = obj("deploy.apps", "web", "shop", finalizers=("foregroundDeletion",), deleting_for=timedelta(minutes=30))
    pods = Failure("list", "pods in namespace shop", "Forbidden", "forbidden")
    [finding] = explain_object(deploy, facts(deploy, lease(), failures=(pods,))).findings
    assert finding.verdict == Verdict.WAITING


def test_a_controller_whose_cleanup_must_create_in_the_terminating_namespace_is_stalled():
    """Issue 40: a running controller whose cleanup creates something in the namespace being deleted (a Job, a
    Secret) is refused by kube-apiserver's NamespaceLifecycle for as long as the namespace terminates: it never
    finishes. Said from the object's own condition or its Warning event, STALLED with the refused object named,
    never a wait."""
    refusal = ('jobs.batch "widget-cleanup" is forbidden: unable to create new content in namespace shop because it '
               "is being terminated")
    widgets = WIDGETS
    running = (*grant(), operator_pod(ready=True))
    added = {MANAGERS: {FINALIZER: "widget-operator"}}  # by the operator: it owns the finalizer
    widget = obj(widgets, "w1", "shop", finalizers=(FINALIZER,), deleting_for=timedelta(hours=1),
                 status={"conditions": [{"type": "CleanupFailed", "status": "True", "message": refusal}]}, **added)
    [finding] = explain_object(widget, facts(widget, *running, extra_types=(widgets,))).findings
    assert finding.verdict == Verdict.STALLED, finding
    assert "creates jobs.batch widget-cleanup in namespace shop" in finding.condition
    assert finding.fix.endswith(f"kfin remove widgets.example.com w1 -n shop --finalizer {FINALIZER} --confirm")
    quiet = obj(widgets, "w2", "shop", finalizers=(FINALIZER,), deleting_for=timedelta(hours=1), **added)
    held = facts(quiet, *running, extra_types=(widgets,))
    explanation = explain_object(quiet, held)
    assert [f.verdict for f in explanation.findings] == [Verdict.WAITING]  # nothing against it yet
    account_for_evidence(explanation, held, [{"type": "Warning", "reason": "CleanupFailed", "count": 1,
                                              "message": refusal.replace("jobs.batch", "secrets")}])
    assert [f.verdict for f in explanation.findings] == [Verdict.STALLED]
