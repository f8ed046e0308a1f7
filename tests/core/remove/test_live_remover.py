"""WAITING needs a live remover, proven (kfin/core/explain/causes/custom.py, builtin.py, evidence.py and the registry's
account_for_evidence), on plain values: found running, shown to own the finalizer name, and saying nothing of its own
that it cannot finish; otherwise STALLED (the remover is known: what it reports is named) or UNKNOWN (what was looked
for is named), and no plan waits on nobody."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from kfin.model import MANAGERS, format_time
from tests.core.causes.test_custom import FINALIZER, WIDGETS, grant, operator_pod
from tests.values import NOW, facts, lease, obj, pod

OWNED = {MANAGERS: {FINALIZER: "widget-operator"}}  # the operator added it: its field manager is its ServiceAccount
LB = "service.kubernetes.io/load-balancer-cleanup"


def widget(name="w1", deleting_for=timedelta(minutes=30), **fields):
    return obj(WIDGETS, name, "shop", finalizers=(FINALIZER,), deleting_for=deleting_for, **fields)


def with_events(known, events):
    """The facts, reading `events` as the object's (newest first), as kfin.api.events gives them."""
    known.events_about = lambda _obj: events
    return known


def event(kind, reason, message, ago, count=1):
    return {"type": kind, "reason": reason, "message": message, "count": count,
            "lastTimestamp": format_time(NOW - ago), "source": "widget-operator"}


def running(*objects, events=()):
    return with_events(facts(*objects, *grant(), operator_pod(ready=True), extra_types=(WIDGETS,)), list(events))


def only_step(finding):
    """The actions of the one link that carries a step: what the plan says to do."""
    [link] = [link for link in finding.links if link.step]
    return link.step


# ----- what the remover reports -----------------------------------------------------------------------------------

def test_a_warning_since_the_deletion_from_a_known_remover_is_stalled_and_named_with_what_to_fix():
    w = widget(**OWNED)
    report = event("Warning", "ReconcileError", "failed to delete bucket: secret aws-creds not found",
                   timedelta(minutes=1), count=12)
    [finding] = explain_object(w, running(w, events=[report])).findings
    said = "Warning event ReconcileError: failed to delete bucket: secret aws-creds not found (x12)"
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is True
    assert finding.condition == f"the controller of example.com runs but reports it cannot finish: {said}"
    assert finding.evidence[0].startswith("before: WAITING: its controller is running")
    first, instead = only_step(finding)
    assert first.note == f"fix what the controller of example.com reports: {said}" and first.command is None
    assert instead.command == finding.remove_command == \
        f"kfin remove widgets.example.com w1 -n shop --finalizer {FINALIZER} --confirm"


def test_a_warning_answered_by_progress_since_stays_waiting_with_the_progress_quoted():
    w = widget(**OWNED)
    events = [event("Normal", "Deleting", "deleting bucket, 3 of 10 objects left", timedelta(seconds=10)),
              event("Warning", "ReconcileError", "throttled", timedelta(minutes=2))]
    [finding] = explain_object(w, running(w, events=events)).findings
    assert finding.verdict == Verdict.WAITING
    assert "its controller reports progress: Normal event Deleting: deleting bucket, 3 of 10 objects left" in \
        finding.evidence


def test_a_warning_from_before_the_deletion_is_a_doubt_not_a_report_that_it_cannot_finish():
    w = widget(deleting_for=timedelta(minutes=5), **OWNED)
    [finding] = explain_object(w, running(w, events=[event("Warning", "SyncFailed", "quota exceeded",
                                                             timedelta(hours=1))])).findings
    assert finding.verdict == Verdict.UNKNOWN
    assert "Warning event SyncFailed: quota exceeded" in finding.condition
    [step] = only_step(finding)  # no plan waits: it says where to look
    assert step.note.startswith("find out what holds it from that evidence")


def test_the_conditions_an_operator_writes_say_whether_it_can_finish():
    """Crossplane's Synced False ReconcileError and Cluster API's Paused True say it cannot; Crossplane's Ready False
    Deleting and Cluster API's Deleting True with the step it is at are progress."""
    cases = [
        ([{"type": "Synced", "status": "False", "reason": "ReconcileError", "message": "AccessDenied"}],
         Verdict.STALLED, "condition Synced False (ReconcileError): AccessDenied"),
        ([{"type": "Paused", "status": "True", "reason": "Paused"}],
         Verdict.STALLED, "condition Paused True (Paused) (its reconciliation is paused)"),
        ([{"type": "Synced", "status": "False", "reason": "ReconcilePaused"}],
         Verdict.STALLED, "condition Synced False (ReconcilePaused) (its reconciliation is paused)"),
        ([{"type": "Deleting", "status": "True", "reason": "InternalError", "message": "check the logs"}],
         Verdict.STALLED, "condition Deleting True (InternalError): check the logs"),
        ([{"type": "Ready", "status": "False", "reason": "Deleting"}],
         Verdict.WAITING, "its controller reports progress: condition Ready False (Deleting)"),
        ([{"type": "Deleting", "status": "True", "reason": "DrainingNode", "message": "3 Pods left"}],
         Verdict.WAITING, "its controller reports progress: condition Deleting True (DrainingNode): 3 Pods left"),
    ]
    for conditions, verdict, line in cases:
        w = widget(status={"conditions": conditions}, **OWNED)
        [finding] = explain_object(w, running(w)).findings
        assert finding.verdict == verdict, (conditions, finding)
        assert line in finding.condition + " ".join(finding.evidence), (line, finding)


def test_a_control_plane_finalizer_against_a_warning_is_unknown_not_stalled():
    """kube-controller-manager reports through the causes of its own finalizers: a Warning quoted, UNKNOWN."""
    deploy = obj("deploy.apps", "web", "shop", finalizers=("foregroundDeletion",), deleting_for=timedelta(minutes=5))
    known = with_events(facts(deploy, lease()), [event("Warning", "FailedDelete", "denied", timedelta(minutes=1))])
    [finding] = explain_object(deploy, known).findings
    assert finding.verdict == Verdict.UNKNOWN


# ----- who owns the finalizer name --------------------------------------------------------------------------------

def test_a_finalizer_a_person_added_is_not_the_running_operators():
    w = widget(**{MANAGERS: {FINALIZER: "kubectl-edit"}})
    [finding] = explain_object(w, running(w)).findings
    assert finding.verdict == Verdict.UNKNOWN and finding.controller_alive is None
    assert 'added by field manager "kubectl-edit" (a person\'s kubectl, not a controller)' in finding.condition
    assert "no other widgets.example.com carries example.com/cleanup" in finding.evidence
    assert finding.remove_command == f"kfin remove widgets.example.com w1 -n shop --finalizer {FINALIZER} --confirm"
    find_out, remove = only_step(finding)
    assert find_out.note.startswith(f"find out what {FINALIZER} guards") and remove.command == finding.remove_command


def test_the_same_name_the_operator_put_on_another_object_is_its_own():
    w = widget(**{MANAGERS: {FINALIZER: "kubectl-edit"}})
    other = widget("w2", **OWNED)
    [finding] = explain_object(w, running(w, other)).findings
    assert finding.verdict == Verdict.WAITING
    assert any("owns example.com/cleanup: it added it to Widget shop/w2" in e for e in finding.evidence)


def test_a_controller_named_after_the_field_manager_by_its_container_owns_it():
    """controller-runtime's default field manager is its binary's name (`manager`), its container's too."""
    w = widget(**{MANAGERS: {FINALIZER: "manager"}})
    operator = operator_pod(ready=True)
    operator.raw["status"]["containerStatuses"] = [{"name": "manager", "ready": True, "restartCount": 0}]
    known = with_events(facts(w, *grant(), operator, extra_types=(WIDGETS,)), [])
    [finding] = explain_object(w, known).findings
    assert finding.verdict == Verdict.WAITING
    operator.raw["status"]["containerStatuses"] = [{"name": "webhook", "ready": True, "restartCount": 0}]
    known = with_events(facts(w, *grant(), operator, extra_types=(WIDGETS,)), [])
    [finding] = explain_object(w, known).findings
    assert finding.verdict == Verdict.UNKNOWN  # another writer's name: not shown to be its own


# ----- an operator outside the cluster, shown by its writes -------------------------------------------------------

def written(ago, manager="kopf", created_ago=timedelta(days=30)):
    """A widget created `created_ago` whose finalizer `manager` added, and which it last wrote to `ago`."""
    w = widget(deleting_for=timedelta(minutes=20), **{MANAGERS: {FINALIZER: manager}}, spec={"bucket": "b"})
    w.raw["metadata"]["creationTimestamp"] = format_time(NOW - created_ago)
    w.raw["metadata"]["managedFields"] = [{"manager": manager, "operation": "Update", "time": format_time(NOW - ago)}]
    return w


def test_recent_writes_by_the_field_manager_that_added_it_are_a_remover_acting_from_outside():
    w = written(timedelta(seconds=40))
    [finding] = explain_object(w, facts(w, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True
    assert finding.condition.startswith('no workload of its controller runs in the cluster, but field manager "kopf", '
                                        "which added it, last wrote to Widget shop/w1 40s ago")


def test_a_write_since_the_deletion_long_ago_is_unknown_and_an_old_one_is_only_evidence():
    since = written(timedelta(minutes=15))  # after the deletion (20 minutes ago), but not within 10 minutes
    [finding] = explain_object(since, facts(since, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.UNKNOWN and "since the deletion" in finding.condition
    old = written(timedelta(hours=3))
    [finding] = explain_object(old, facts(old, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.ORPHANED
    assert 'field manager "kopf", which added it, last wrote to Widget shop/w1 3h ago' in finding.evidence


def test_the_write_that_created_it_is_no_sign_of_a_remover():
    created = written(timedelta(seconds=40), created_ago=timedelta(seconds=40))
    [finding] = explain_object(created, facts(created, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.ORPHANED
    again = written(timedelta(seconds=20), created_ago=timedelta(seconds=40))  # a write of a later second
    [finding] = explain_object(again, facts(again, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.WAITING
    by_hand = written(timedelta(seconds=40), manager="kubectl-patch")
    [finding] = explain_object(by_hand, facts(by_hand, extra_types=(WIDGETS,))).findings
    assert finding.verdict == Verdict.ORPHANED  # a person's kubectl removes nothing by itself


# ----- the cloud controller manager -------------------------------------------------------------------------------

def service():
    return obj("svc", "frontend", "shop", finalizers=(LB,), deleting_for=timedelta(hours=1))


def ccm_pod(ready: bool):
    found = pod("aws-cloud-controller-manager-x1", "kube-system", labels={"k8s-app": "aws-cloud-controller-manager"})
    found.raw["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return found


def test_a_load_balancer_is_waited_for_only_where_a_cloud_controller_manager_is_found():
    svc = service()
    [none] = explain_object(svc, facts(svc, lease())).findings
    assert none.verdict == Verdict.UNKNOWN and none.controller_alive is None
    assert list(none.evidence[:2]) == [
        "no cloud-controller-manager lease is visible (not installed, or hidden by a managed control plane)",
        "no Pod in kube-system is named or labelled cloud-controller-manager (0 Pods there)"]
    assert [a.command for a in only_step(none)] == [None, f"kfin remove services frontend -n shop --finalizer {LB} "
                                                          "--force --confirm"]
    [found] = explain_object(svc, facts(svc, ccm_pod(ready=True))).findings
    assert found.verdict == Verdict.WAITING and "its Pod kube-system/aws-cloud-controller-manager-x1 is Ready" in \
        found.evidence
    [down] = explain_object(svc, facts(svc, ccm_pod(ready=False))).findings
    assert down.verdict == Verdict.STALLED and [link.target.name for link in down.links] == [
        "aws-cloud-controller-manager-x1"]
    [named] = explain_object(svc, facts(svc, lease("k3s-cloud-controller-manager"))).findings
    assert named.verdict == Verdict.WAITING


# ----- a framework's operator (kopf), as its catalog entry describes it ------------------------------------------

KOPF = "kopf.zalando.org/KopfFinalizerMarker"


def kopf_widget(**annotations):
    meta = {"annotations": annotations} if annotations else {}
    w = obj(WIDGETS, "w1", "shop", finalizers=(KOPF,), deleting_for=timedelta(minutes=5),
            **{MANAGERS: {KOPF: "kopf"}})
    w.raw["metadata"].update(meta)
    return w


def test_a_finalizer_added_by_a_frameworks_field_manager_is_owned_by_the_running_controller_granted_the_type():
    """kopf's writes carry its User-Agent's name ("kopf"), not its workload's: the catalog entry names that field
    manager, so the running operator granted update on the type is shown to own the finalizer, and waited for."""
    w = kopf_widget()
    [finding] = explain_object(w, running(w)).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True, finding.condition
    assert any('the catalog names "kopf" the field manager of a Kopf-based operator' in e for e in finding.evidence)


def test_a_handler_whose_own_record_says_it_keeps_failing_is_stalled_with_its_words():
    """kopf records each handler's state in an annotation named after it (JSON: retries, success, message), and
    posts no Warning event by default: that record says it cannot finish."""
    state = '{"started": "2026-11-28T00:00:00Z", "purpose": "delete", "retries": 4, "success": false, ' \
            '"failure": false, "message": "failed to delete bucket: secret aws-creds not found"}'
    w = kopf_widget(**{"kopf.zalando.org/cleanup": state, "kopf.zalando.org/last-handled-configuration": "{}"})
    [finding] = explain_object(w, running(w)).findings
    assert finding.verdict == Verdict.STALLED, finding.condition
    assert finding.condition.endswith("reports it cannot finish: annotation kopf.zalando.org/cleanup (its own "
                                      "record of that step, tried 4 times): failed to delete bucket: secret "
                                      "aws-creds not found")
    done = state.replace('"success": false', '"success": true')
    w = kopf_widget(**{"kopf.zalando.org/cleanup": done})
    [finding] = explain_object(w, running(w)).findings
    assert finding.verdict == Verdict.WAITING, finding.condition
