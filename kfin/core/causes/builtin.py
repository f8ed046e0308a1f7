"""Well-known finalizers of Kubernetes itself and of cloud controllers."""

from __future__ import annotations

from kfin.core.causes.registry import (
    Action,
    Context,
    Entry,
    Finding,
    Link,
    Verdict,
    explains,
    kfin_remove_command,
    lease_alive,
    state_line,
    waiting_on_controller_manager,
)


@explains(
    "load-balancer-cleanup",
    Entry(
        "service.kubernetes.io/load-balancer-cleanup",
        "a Service until its cloud load balancer is deleted",
        "the cloud controller manager (service controller)",
    ),
)
def load_balancer(ctx: Context) -> Finding:
    risk = "removing it leaves the cloud load balancer (and its public address) behind, still billed"
    outside = "the Service's cloud load balancer and its public address"  # said first, as a catalog entry's is
    alive, liveness = lease_alive(ctx.facts, "cloud-controller-manager")
    if alive is False:
        found = ctx.finding(
            "the cloud controller manager that deletes the load balancer is not running",
            # the control plane's: it acts again once someone brings it back, so never ORPHANED
            Verdict.STALLED,
            fix="bring the cloud controller manager back, or delete the load balancer "
            "in the cloud console, then remove the finalizer",
            risk=risk,
            evidence=[liveness],
            alive=alive,
        )
        found.infrastructure = outside
        found.remove_command = kfin_remove_command(ctx.obj, ctx.finalizer)
        found.links.append(
            Link(
                "controller",
                liveness,
                actor="cloud-controller-manager",
                step=(
                    Action(None, note="bring the cloud controller manager back"),
                    Action(
                        found.remove_command, when="instead, once you deleted the load balancer in the cloud console"
                    ),
                ),
            )
        )
        return found
    found = ctx.finding(
        "waiting for the cloud controller manager to delete the load balancer",
        Verdict.WAITING,
        fix="check the cloud controller manager's logs for errors deleting the load balancer",
        risk=risk,
        evidence=[liveness],
        alive=alive,
    )
    found.summary = "a Service until its cloud load balancer is deleted"
    found.infrastructure = outside
    found.links.append(
        Link("cloud", "the cloud controller manager deletes the load balancer", actor="cloud-controller-manager")
    )
    return found


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
        found = ctx.finding(
            f"{len(instances)} {plural}.{group} remain",
            Verdict.HOLDING,
            fix="unstick the custom resources first (their blockers are named below)",
            risk=risk,
            evidence=evidence,
            controller="kube-apiserver (CRD finalizer)",
        )
        found.links = [
            Link("custom-resource", "a custom resource of this definition remains", target=o)
            for o in instances
            if o.terminating
        ]
        return found
    return ctx.finding(
        f"no {plural}.{group} remain: kube-apiserver should finish",
        Verdict.WAITING,
        fix="nothing to fix: kube-apiserver removes it",
        risk=risk,
        controller="kube-apiserver (CRD finalizer)",
    )


@explains("unknown")
def unknown(ctx: Context) -> Finding:
    found = ctx.finding(
        f"{ctx.finalizer!r} is not a domain-qualified name: kfin cannot tell which controller owns it",
        Verdict.UNKNOWN,
        fix="find the tool that added it (annotations and managedFields of the object "
        "name the writers: kubectl get -o yaml --show-managed-fields)",
        risk="unknown: whatever that finalizer was meant to clean up will not be cleaned up",
    )
    found.summary = f"{ctx.finalizer} (unknown must remove it)"
    return found
