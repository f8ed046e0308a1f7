"""PodGroups (kfin/core/explain/causes/scheduling.py): `scheduling.k8s.io/podgroup-protection` stays while a Pod of the
namespace that has not finished names the PodGroup in spec.schedulingGroup.podGroupName, scheduled or not,
Terminating or not (pkg/controller/scheduling/podgroupprotection: isBeingUsed, isPodTerminated)."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from kfin.model import ResourceType
from tests.values import facts, lease, obj

FINALIZER = "scheduling.k8s.io/podgroup-protection"
PODGROUPS = ResourceType("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup", True,
                         ("get", "list", "update", "patch", "delete"))


def podgroup(name: str = "trainers"):
    return obj(PODGROUPS, name, "ml", finalizers=(FINALIZER,), deleting_for=timedelta(minutes=10),
               spec={"schedulingPolicy": {"gang": {"minCount": 2}}})


def member(name: str, group: str = "trainers", phase: str = "Running", node: str | None = "node-1", **kwargs):
    spec: dict = {"schedulingGroup": {"podGroupName": group}}
    if node:
        spec["nodeName"] = node
    return obj("pods", name, "ml", spec=spec, status={"phase": phase}, **kwargs)


def test_a_podgroup_is_held_by_its_members_that_have_not_finished_scheduled_or_not():
    pg = podgroup()
    running, pending = member("worker-0"), member("worker-1", phase="Pending", node=None)
    done, other = member("worker-2", phase="Succeeded"), member("solo", group="other")
    [finding] = explain_object(pg, facts(pg, running, pending, done, other, lease())).findings
    assert finding.verdict == Verdict.HOLDING and finding.family == "podgroup-protection"
    assert [link.target.name for link in finding.links] == ["worker-0", "worker-1"]
    assert all(link.kind == "member-pod" for link in finding.links)
    assert "Pod ml/worker-1 (Pending, not scheduled)" in finding.condition
    assert any("worker-2" in line and "finished" in line for line in finding.evidence)
    assert finding.links[0].step[0].command == "kubectl delete pod -n ml worker-0" and finding.remove_command is None


def test_a_terminating_member_still_holds_it_and_its_step_is_its_own_deletion():
    pg = podgroup()
    leaving = member("worker-0", deleting_for=timedelta(minutes=5), grace_seconds=30)
    [finding] = explain_object(pg, facts(pg, leaving, lease())).findings
    assert finding.verdict == Verdict.HOLDING and "Terminating" in finding.condition
    [action] = finding.links[0].step
    assert action.command == "kfin explain pod -n ml worker-0"
    assert action.note == "let Pod ml/worker-0 finish its deletion"


def test_with_only_finished_members_it_waits_for_the_controller():
    pg = podgroup()
    [finding] = explain_object(pg, facts(pg, member("worker-0", phase="Failed"), lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True and not finding.links


def test_without_the_pods_it_is_unknown_never_orphaned():
    pg = podgroup()
    [finding] = explain_object(pg, facts(pg, lease(), unlisted=("pods",))).findings
    assert finding.verdict == Verdict.UNKNOWN and "podGroupName" in finding.fix
