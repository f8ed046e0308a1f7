"""Well-known finalizers of Kubernetes itself and of cloud controllers."""

from __future__ import annotations

from kfin.core.explain.causes.registry import (
    Action,
    Context,
    Entry,
    Finding,
    Link,
    Verdict,
    condition,
    explains,
    kfin_remove_command,
    lease_alive,
    state_line,
    waiting_on_controller_manager,
)
from kfin.core.read.facts import ClusterFacts
from kfin.model import MANAGERS, KubeObject
from kfin.util.text import counted

CLOUD_CONTROLLER = "cloud-controller-manager"
LOAD_BALANCER = "load-balancer-cleanup"  # the cause of service.kubernetes.io/load-balancer-cleanup
POD_LABELS = ("component", "k8s-app", "app", "app.kubernetes.io/name", "app.kubernetes.io/component")


def cloud_controller(facts: ClusterFacts) -> tuple[bool | None, list[str], KubeObject | None]:
    """Is a cloud controller manager (whose service controller deletes load balancers) running? (True, False when
    it is there but does not run, None when none is found or it cannot be told; what was looked for and found, as
    evidence; its Pod when that is what tells). Its leader lease in kube-system first (a lease of that name, or of a
    name ending in it); without one, its Pods in kube-system (named or
    labelled so: a cloud controller manager run without leader election keeps no lease). Many clusters run none
    (bare metal, kind, a laptop's), and a managed control plane may hide its own: so none found is not "gone"."""
    alive, liveness = lease_alive(facts, CLOUD_CONTROLLER)
    if alive is not None:
        return alive, [liveness], None
    seen = [liveness]
    leases = facts.objects("coordination.k8s.io", "leases", "kube-system", full=True) or []
    for other in sorted((le for le in leases if le.name.endswith(CLOUD_CONTROLLER)), key=lambda le: le.name):
        alive, liveness = lease_alive(facts, other.name)
        if alive is not None:
            return alive, [*seen, liveness], None
    pods = facts.objects("", "pods", "kube-system", full=True)
    if pods is None:
        return None, [*seen, "kfin could not read the Pods of kube-system to look for a cloud controller manager"], None
    mine = [
        p
        for p in pods
        if not p.terminating
        and (
            CLOUD_CONTROLLER in p.name
            or any(CLOUD_CONTROLLER in str(v) for k, v in (p.meta.get("labels") or {}).items() if k in POD_LABELS)
        )
    ]
    ready = [p for p in mine if condition(p, "Ready").get("status") == "True"]
    if ready:
        return True, [*seen, f"its Pod kube-system/{ready[0].name} is Ready"], ready[0]
    if mine:
        return False, [*seen, f"its Pod kube-system/{mine[0].name} is not Ready"], mine[0]
    return (
        None,
        [*seen, f"no Pod in kube-system is named or labelled {CLOUD_CONTROLLER} ({counted(len(pods), 'Pod')} there)"],
        None,
    )


@explains(
    LOAD_BALANCER,
    Entry(
        "service.kubernetes.io/load-balancer-cleanup",
        "a Service until its cloud load balancer is deleted",
        "the cloud controller manager (service controller)",
    ),
    reads=(("coordination.k8s.io", "leases", "kube-system"),),
)
def load_balancer(ctx: Context) -> Finding:
    risk = "removing it leaves the cloud load balancer (and its public address) behind, still billed"
    outside = "the Service's cloud load balancer and its public address"  # said first, as a catalog entry's is
    alive, looked, pod = cloud_controller(ctx.facts)
    seen = list(looked)
    manager = (ctx.obj.raw.get(MANAGERS) or {}).get(ctx.finalizer)
    if manager:
        seen.append(f'managedFields: {ctx.finalizer} was added by field manager "{manager}"')
    remove = kfin_remove_command(ctx.obj, ctx.finalizer)
    if alive is False:
        return ctx.finding(
            "the cloud controller manager that deletes the load balancer is not running",
            # the control plane's: it acts again once someone brings it back, so never ORPHANED
            Verdict.STALLED,
            fix="bring the cloud controller manager back, or delete the load balancer "
            "in the cloud console, then remove the finalizer",
            risk=risk,
            evidence=seen,
            alive=alive,
            infrastructure=outside,
            remove_command=remove,
            links=[
                Link(
                    "controller",
                    looked[-1],
                    target=pod,
                    actor=None if pod else CLOUD_CONTROLLER,
                    step=(
                        Action(None, note="bring the cloud controller manager back"),
                        Action(remove, when="instead, once you deleted the load balancer in the cloud console"),
                    ),
                )
            ],
        )
    if alive is None:  # nothing shown to act: never "wait", never ORPHANED (a managed control plane may hide it)
        return ctx.finding(
            "no cloud controller manager was found to delete the load balancer: looked for its lease and its Pods "
            "in kube-system",
            Verdict.UNKNOWN,
            fix="find out whether a cloud controller manager runs (a managed control plane may hide it, and it "
            "then removes the finalizer itself); if none does (bare metal, kind, a local cluster), delete the "
            "load balancer by hand where one was made, then remove the finalizer",
            risk=risk,
            evidence=seen,
            alive=None,
            summary="no cloud controller manager found to delete its load balancer",
            infrastructure=outside,
            remove_command=remove,
            links=[
                Link(
                    "cloud",
                    "no cloud controller manager was found: " + "; ".join(looked),
                    actor=CLOUD_CONTROLLER,
                    step=(
                        Action(None, note="find out whether a cloud controller manager runs (its logs, your provider)"),
                        Action(
                            remove,
                            when="if none runs, once the load balancer is deleted by hand (or none was ever made)",
                        ),
                    ),
                )
            ],
        )
    return ctx.finding(
        "waiting for the cloud controller manager to delete the load balancer",
        Verdict.WAITING,
        fix="check the cloud controller manager's logs for errors deleting the load balancer",
        risk=risk,
        evidence=seen,
        alive=alive,
        summary="a Service until its cloud load balancer is deleted",
        infrastructure=outside,
        links=[Link("cloud", "the cloud controller manager deletes the load balancer", actor=CLOUD_CONTROLLER)],
    )


@explains(
    "job-tracking",
    Entry(
        "batch.kubernetes.io/job-tracking",
        "a Job's Pod until the Job controller counts it",
        "kube-controller-manager (job controller)",
    ),
)
def job_tracking(ctx: Context) -> Finding:
    return waiting_on_controller_manager(
        ctx, "the Job controller has not yet counted this Pod", risk="low: the Job may miscount this Pod's result"
    )


@explains(
    "crd-cleanup",
    Entry(
        "customresourcecleanup.apiextensions.k8s.io",
        "a CustomResourceDefinition until its custom resources are deleted",
        "kube-apiserver (CRD finalizer)",
    ),
)
def crd_cleanup(ctx: Context) -> Finding:
    facts, crd = ctx.facts, ctx.obj
    full = facts.find(crd.type.group, crd.type.resource, "", crd.name, full=True) or crd
    spec = full.raw.get("spec") or {}
    group, plural = (
        spec.get("group") or crd.name.partition(".")[2],
        (spec.get("names") or {}).get("plural") or crd.name.partition(".")[0],
    )
    risk = (
        "removing it leaves the custom resources in etcd, unreachable, with their finalizers' cleanup never "
        "done; they return if the CRD is created again"
    )
    instances = facts.objects(group, plural)
    if instances is None:
        return ctx.finding(
            f"kfin could not list the {plural}.{group} resources",
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl get {plural}.{group} -A",
            risk=risk,
            controller="kube-apiserver (CRD finalizer)",
        )
    if instances:
        evidence = [f"{o.ref}: {state_line(o, facts)}" for o in instances[:10]]
        remain = "remains" if len(instances) == 1 else "remain"
        return ctx.finding(
            f"{counted(len(instances), 'custom resource')} of {plural}.{group} {remain}",
            Verdict.HOLDING,
            fix="unstick the custom resources first (their blockers are named below)",
            risk=risk,
            evidence=evidence,
            controller="kube-apiserver (CRD finalizer)",
            links=[
                Link("custom-resource", "a custom resource of this definition remains", target=o)
                for o in instances
                if o.terminating
            ],
        )
    return ctx.finding(
        f"no {plural}.{group} remain: kube-apiserver should finish",
        Verdict.WAITING,
        fix="nothing to fix: kube-apiserver removes it",
        risk=risk,
        controller="kube-apiserver (CRD finalizer)",
    )


@explains("unknown")
def unknown(ctx: Context) -> Finding:
    return ctx.finding(
        f"{ctx.finalizer!r} is not a domain-qualified name: kfin cannot tell which controller owns it",
        Verdict.UNKNOWN,
        fix="find the tool that added it (annotations and managedFields of the object "
        "name the writers: kubectl get -o yaml --show-managed-fields)",
        risk="unknown: whatever that finalizer was meant to clean up will not be cleaned up",
        summary=f"{ctx.finalizer} (unknown must remove it)",
    )
