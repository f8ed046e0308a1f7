"""PodGroups of workload-aware scheduling (scheduling.k8s.io/v1alpha2, alpha in 1.36 behind the GenericWorkload
feature gate): kube-apiserver's PodGroupProtection admission plugin puts `scheduling.k8s.io/podgroup-protection` on
every PodGroup it creates, and kube-controller-manager's podgroup-protection controller removes it from a deleted
PodGroup once no Pod of its namespace that has not finished (phase other than Succeeded or Failed) names it in
spec.schedulingGroup.podGroupName, scheduled or not, Terminating or not
(plugin/pkg/admission/scheduling/podgroupprotection, pkg/controller/scheduling/podgroupprotection)."""

from __future__ import annotations

from kfin.core.explain.causes.registry import (
    CONTROLLER_MANAGER_LEASE,
    OBJECT_NAMESPACE,
    Action,
    Context,
    Entry,
    Finding,
    Link,
    Verdict,
    explains,
    waiting_on_controller_manager,
)
from kfin.model import KubeObject
from kfin.util.text import first_few

FINISHED = ("Succeeded", "Failed")  # the controller's isPodTerminated: phase only


def group_of(pod: KubeObject) -> str | None:
    """The PodGroup a Pod names (spec.schedulingGroup.podGroupName), if any."""
    spec = pod.raw.get("spec")
    group = spec.get("schedulingGroup") if isinstance(spec, dict) else None
    name = group.get("podGroupName") if isinstance(group, dict) else None
    return name if isinstance(name, str) and name else None


def _phase(pod: KubeObject) -> str:
    status = pod.raw.get("status")
    return str(status.get("phase") or "Pending") if isinstance(status, dict) else "Pending"


def _state(pod: KubeObject) -> str:
    node = (pod.raw.get("spec") or {}).get("nodeName")
    return ("Terminating" if pod.terminating else _phase(pod)) + (f", on node {node}" if node else ", not scheduled")


def _described(pod: KubeObject) -> str:
    return f"Pod {pod.namespace}/{pod.name} ({_state(pod)})"


def _step(pod: KubeObject) -> tuple[Action, ...]:
    owners = [f"{r.get('kind')} {r.get('name')}" for r in pod.owner_references if r.get("controller")]
    if pod.terminating:
        return (
            Action(
                f"kfin explain pod -n {pod.namespace} {pod.name}",
                note=f"let Pod {pod.namespace}/{pod.name} finish its deletion",
            ),
        )
    delete = Action(f"kubectl delete pod -n {pod.namespace} {pod.name}")
    if not owners:
        return (delete,)
    return delete, Action(None, when=f"instead, if {owners[0]} would recreate it", note=f"scale down {owners[0]}")


@explains(
    "podgroup-protection",
    Entry(
        "scheduling.k8s.io/podgroup-protection",
        "a PodGroup while Pods that have not finished name it (spec.schedulingGroup.podGroupName)",
        "kube-controller-manager (podgroup-protection controller)",
    ),
    reads=(("", "pods", OBJECT_NAMESPACE), CONTROLLER_MANAGER_LEASE),
)
def podgroup_protection(ctx: Context) -> Finding:
    group, facts = ctx.obj, ctx.facts
    risk = (
        "removing it deletes the PodGroup while its Pods still name it: the scheduler no longer finds the group "
        "whose policy (gang minCount) it schedules them by, and a PodGroup created again under that name is taken "
        "as theirs, with whatever policy it has"
    )
    pods = facts.objects("", "pods", group.namespace, full=True)
    if pods is None:
        return ctx.finding(
            "kfin could not read the Pods of its namespace, which decide it",
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl get pods -n {group.namespace} -o "
            "custom-columns=NAME:.metadata.name,GROUP:.spec.schedulingGroup.podGroupName,PHASE:.status.phase",
            risk=risk,
        )
    named = [p for p in pods if group_of(p) == group.name]
    members = [p for p in named if _phase(p) not in FINISHED]
    evidence = [f"{_described(p)} names it but has finished: it does not hold it" for p in named if p not in members]
    if not members:
        return waiting_on_controller_manager(
            ctx,
            "no Pod that has not finished names it any more",
            risk=risk,
            evidence=evidence,
            summary="no unfinished Pod names it any more; kube-controller-manager should release it",
        )
    described = [_described(p) for p in members]
    owners = sorted(
        {
            f"{r.get('kind')} {p.namespace}/{r.get('name')}"
            for p in members
            for r in p.owner_references
            if r.get("controller")
        }
    )
    fix = (
        f"let its Pods finish, or delete them ({first_few([f'{p.namespace}/{p.name}' for p in members], 5)})"
        + (f"; scale down {', '.join(owners)} first, which would recreate them" if owners else "")
        + "; the controller then removes the finalizer"
    )
    more = f" and {len(members) - 1} more" if len(members) > 1 else ""
    return ctx.finding(
        f"named by {len(members)} Pod{'s' if len(members) > 1 else ''} that ha{'ve' if len(members) > 1 else 's'} "
        "not finished: " + ", ".join(described),
        Verdict.HOLDING,
        fix=fix,
        risk=risk,
        evidence=[*(f"{d} names it in spec.schedulingGroup.podGroupName" for d in described[:10]), *evidence],
        summary=f"held by its member {described[0]}{more}",
        links=[
            Link("member-pod", f"a member that has not finished ({_state(p)})", target=p, step=_step(p))
            for p in members
        ],
    )
