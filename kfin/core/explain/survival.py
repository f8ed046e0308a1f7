"""Would an object's finalizers outlive the deletion that deletes it: who would remove each one, and whether that
controller lives on (it runs in the namespace being deleted, it is not running, none can be found). One answer for
what a blocking chain says will hold a Terminating namespace next and for what kfin preflight predicts of every
object a deletion deletes.
"""

from __future__ import annotations

from msgspec import Struct

from kfin.core.explain.causes import explain_object
from kfin.core.explain.causes.builtin import LOAD_BALANCER, cloud_controller
from kfin.core.explain.causes.custom import find_grants, identities, is_ready, ownership, who_added, workloads_of_grant
from kfin.core.explain.causes.ecosystem import find_controller, holdings
from kfin.core.explain.causes.registry import (
    Action,
    Context,
    Verdict,
    control_plane_owned,
    controller_manager,
    family,
    prose,
)
from kfin.core.read.facts import Facts
from kfin.model import JSON, MANAGERS, KubeObject

FIRST = "first"  # _survives' step for an object to delete before the target, while its controller runs


class Stuck(Struct):
    """An object the deletion would leave Terminating, and why."""

    obj: KubeObject
    finalizer: str  # "" for a gate of the whole object (a namespace's discovery)
    reason: str
    verdict: str  # what explain would say once it is stuck
    actions: tuple[Action, ...] = ()  # what to do first so that it is not
    first: bool = False  # delete it before the target, while its controller still runs
    certain: bool = True  # False: a rule that only may hold it (a policy kfin could not evaluate): a dry run decides
    race: bool = False  # not certain because its controller may still finish first (a teardown's race)

    @property
    def step(self) -> str:
        """What to do first, in a sentence (the plan gives its commands, each on its own)."""
        return prose(self.actions)

    def to_dict(self) -> JSON:
        return {
            "object": reference(self.obj),
            "finalizer": self.finalizer or None,
            "reason": self.reason,
            "verdict": self.verdict,
            "step": self.step or None,
            "certain": self.certain,  # false: a race, or a rule only the server's answer decides
            "race": self.race,
        }


def reference(obj: KubeObject) -> JSON:
    """How the JSON output names an object."""
    return {
        "apiVersion": obj.type.api_version,
        "kind": obj.type.kind,
        "namespace": obj.namespace or None,
        "name": obj.name,
    }


def wait_step(obj: KubeObject) -> tuple[Action, ...]:
    ns = f" -n {obj.namespace}" if obj.namespace else ""
    return (Action(f"kfin wait {obj.type.qualified} {obj.name}{ns} --timeout 10m"),)


def delete_step(obj: KubeObject, cascade: str = "background") -> tuple[Action, ...]:
    """The DELETE of `obj` (with kubectl's --cascade), as a plan's step."""
    ns = f" -n {obj.namespace}" if obj.namespace else ""
    policy = "" if cascade == "background" else f" --cascade={cascade}"
    return (Action(f"kubectl delete {obj.type.qualified} {obj.name}{ns}{policy}"),)


def holds_next(facts: Facts, namespace: KubeObject) -> list[Stuck]:
    """What will hold a Terminating namespace once what holds it now is dealt with: the content the namespace
    controller has not deleted yet, in its order (since 1.34 its Pods first, nothing else while one remains:
    OrderedNamespaceDeletion), each finalizer whose controller would not remove it (it runs in the namespace, so
    its Pods go first; it is not running; none is found), and the gates in front of their finalizers."""
    content = [o for o in facts.everything(namespace.name) or [] if o.namespace == namespace.name and not o.terminating]
    content.sort(key=lambda o: (o.type.group, o.type.resource) != ("", "pods"))  # stable: Pods first
    return [s for obj in content for s in predict_object(facts, obj, namespace.name, namespace)]


def predict_object(facts: Facts, obj: KubeObject, gone_namespace: str | None, target: KubeObject) -> list[Stuck]:
    """Each finalizer of an object the deletion of `target` would delete (`obj` may be `target` itself) that would
    stay: who would remove it, and would it survive."""
    if not obj.finalizers:
        return []
    stuck: list[Stuck] = []
    findings = explain_object(obj, facts).findings
    gates = [f for f in findings if f.verdict == Verdict.BLOCKED]
    if obj is target:  # what holds it now (a claim a scheduled Pod mounts) is not deleted with it
        gates += [f for f in findings if f.verdict == Verdict.HOLDING and control_plane_owned(f.finalizer)]
    for finding in gates:
        actions = tuple(a for link in finding.links for a in link.step) or (Action(None, note=finding.fix),)
        stuck.append(
            Stuck(obj, finding.finalizer, reason=finding.condition, verdict=finding.verdict.value, actions=actions)
        )
    gated = {f.finalizer for f in gates}
    for finalizer in obj.finalizers:
        if finalizer in gated:
            continue
        reason, verdict, step = _survives(facts, obj, finalizer, gone_namespace)
        if reason:
            first = step == FIRST
            actions = delete_step(obj) if first else (Action(None, note=step),)
            stuck.append(Stuck(obj, finalizer, reason=reason, verdict=verdict, actions=actions, first=first))
    return stuck


def _survives(facts: Facts, obj: KubeObject, finalizer: str, gone_namespace: str | None) -> tuple[str, str, str]:
    """("", "", "") when the finalizer's controller would remove it; else (why it would stay, the verdict, the
    step that avoids it)."""
    fam = family(finalizer, facts.catalog)
    ctx = Context(obj, finalizer, "metadata.finalizers", facts, fam)
    if fam.entry is not None:
        held = [h for h in holdings(ctx, fam.entry) or [] if h.effect == "holds"]
        if held and any(h.get("logic") == "drain" for h in fam.entry.holders):
            target = held[0].target
            step = (
                f"let {target.ref} allow a disruption (scale its workload up, or relax the budget), or move "
                "what it covers away first"
                if target is not None and target.type.resource == "poddisruptionbudgets"
                else f"deal with {held[0].text} first"
            )
            return f"its drain would stop: {held[0].text} ({held[0].meaning})", "HOLDING", step
    if fam.name == LOAD_BALANCER:  # the cloud controller manager's, which many clusters do not run
        alive, looked, _ = cloud_controller(facts)
        if alive is True:
            return "", "", ""
        if alive is False:
            return (
                f"{looked[-1]}: nothing deletes its load balancer",
                "STALLED",
                "bring the cloud controller manager back first",
            )
        return (
            f"no cloud controller manager was found to delete its load balancer and remove {finalizer} ("
            + "; ".join(looked)
            + ")",
            "UNKNOWN",
            "find out whether a cloud controller manager runs first; if none does, delete the load balancer by hand "
            "(where one was made) and remove the finalizer once the Service is deleted",
        )
    if control_plane_owned(finalizer):
        alive, liveness = controller_manager(facts)
        if alive is False:
            return f"{liveness}: nothing removes {finalizer}", "STALLED", "bring kube-controller-manager back first"
        return "", "", ""
    workloads = finalizer_controllers(ctx)
    if workloads is None:
        return (
            f"kfin could not find who removes {finalizer} (RBAC or workloads unreadable)",
            "UNKNOWN",
            f"find what removes {finalizer} and make sure it runs",
        )
    if not workloads:
        return (
            f"no controller of {finalizer} runs or is installed: nothing will remove it",
            "ORPHANED",
            f"install what removes {finalizer}, or clean up what it guards and remove it by hand",
        )
    inside = [w for w, _ in workloads if gone_namespace and w.namespace == gone_namespace]
    outside_running = [w for w, running in workloads if running and w.namespace != gone_namespace]
    manager = (obj.raw.get(MANAGERS) or {}).get(finalizer)
    # a catalog's controller owns its names; another must be shown to, where managedFields say who added it (an object
    # of a manifest or a snapshot of old may not say: its running controller is taken to remove it, as before)
    if outside_running and fam.entry is None and manager:
        who = f"{outside_running[0].type.kind} {outside_running[0].namespace}/{outside_running[0].name}"
        if not any(ownership(ctx, identities(w), who)[0] for w in outside_running):
            added = who_added(manager)
            return (
                f"{finalizer} was added by {added}, and no running controller is shown to own it: nothing is "
                "shown to remove it",
                "UNKNOWN",
                f"find out what {finalizer} guards and whether anything removes it ({added}) first",
            )
    if outside_running:
        return "", "", ""
    if inside:
        w = inside[0]
        return (
            f"its controller {w.type.kind} {w.namespace}/{w.name} lives in namespace {gone_namespace}, deleted "
            "with it: nothing will remove the finalizer once it is gone",
            "ORPHANED",
            FIRST,
        )
    w = workloads[0][0]
    return (
        f"its controller {w.type.kind} {w.namespace}/{w.name} is not running",
        "STALLED",
        f"fix or scale up {w.type.kind} {w.namespace}/{w.name} first",
    )


def finalizer_controllers(ctx: Context) -> list[tuple[KubeObject, bool]] | None:
    """(workload or Pod, running) of whatever would remove the finalizer: the catalog's controller, else what
    RBAC grants update on the resource to; None when kfin cannot tell."""
    entry = ctx.family.entry
    if entry is not None and entry.controller.searchable:
        found = find_controller(ctx.facts, entry.controller)
        if found:
            return [(w, ready > 0) for w, ready, _ in found]
    grants = find_grants(ctx)
    if grants is None:
        return None
    out: list[tuple[KubeObject, bool]] = []
    for grant in grants:
        if grant.subject_kind != "ServiceAccount":
            return None  # a User or Group (kube-controller-manager): kfin cannot tell where it runs
        pods, _, _ = workloads_of_grant(ctx, grant)
        out += [(p, is_ready(p)) for p in pods]
        if not pods:
            out += [(w, False) for w in _idle_workloads(ctx, grant.namespace, grant.service_account)]
    return out


def _idle_workloads(ctx: Context, namespace: str, account: str) -> list[KubeObject]:
    out = []
    for group, resource in (("apps", "deployments"), ("apps", "statefulsets")):
        for w in ctx.facts.objects(group, resource, namespace, full=True) or []:
            template = ((w.raw.get("spec") or {}).get("template") or {}).get("spec") or {}
            if template.get("serviceAccountName") == account:
                out.append(w)
    return out
