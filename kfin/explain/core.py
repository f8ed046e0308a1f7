"""Findings, verdicts and the registry of explainers, one per finalizer family."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Callable

from kfin.durations import format_age
from kfin.facts import Facts
from kfin.finalizers import Family, family
from kfin.model import KubeObject, parse_time


class Verdict(str, Enum):
    HOLDING = "HOLDING"  # what the finalizer protects is still there: removing it would break something
    WAITING = "WAITING"  # the condition is gone; its controller should remove it
    ORPHANED = "ORPHANED"  # nothing will ever remove it: its controller is gone
    UNKNOWN = "UNKNOWN"  # kfin could not check (not readable, or not a name it can place)


@dataclass
class Finding:
    finalizer: str
    field: str  # metadata.finalizers or spec.finalizers
    family: str
    protects: str
    controller: str
    condition: str  # the live condition, in a sentence
    verdict: Verdict
    fix: str
    risk: str
    evidence: list[str] = field(default_factory=list)
    controller_alive: bool | None = None
    remove_command: str | None = None  # when removing the finalizer is the right next step

    def to_dict(self) -> dict:
        out = asdict(self)
        out["verdict"] = self.verdict.value
        out["controllerAlive"] = out.pop("controller_alive")
        out["removeCommand"] = out.pop("remove_command")
        return out


@dataclass
class Context:
    obj: KubeObject
    finalizer: str
    field: str
    facts: Facts
    family: Family

    def finding(self, condition: str, verdict: Verdict, fix: str, risk: str, evidence=(), alive=None,
                controller: str | None = None) -> Finding:
        return Finding(self.finalizer, self.field, self.family.name, self.family.protects,
                       controller or self.family.owner, condition, verdict, fix, risk, list(evidence), alive)


Explainer = Callable[[Context], Finding]
EXPLAINERS: dict[str, Explainer] = {}


def explains(*families: str):
    """Register an explainer for finalizer families (the names in kfin.finalizers.FAMILIES)."""
    def register(fn: Explainer) -> Explainer:
        for name in families:
            EXPLAINERS[name] = fn
        return fn
    return register


def remove_command(obj: KubeObject, finalizer: str) -> str:
    ns = f" -n {obj.namespace}" if obj.namespace else ""
    return f"kfin remove {obj.type.qualified} {obj.name}{ns} --finalizer {finalizer} --confirm"


def lease_alive(facts: Facts, name: str) -> tuple[bool | None, str]:
    """Is the leader of kube-system/<name> (kube-controller-manager, cloud-controller-manager) renewing its
    lease? (None, why) when that cannot be seen, as on many managed control planes."""
    lease = facts.find("coordination.k8s.io", "leases", "kube-system", name, full=True)
    if lease is None:
        leases = facts.objects("coordination.k8s.io", "leases", "kube-system", full=True)
        if leases is None:
            return None, f"could not read the {name} lease"
        return None, f"no {name} lease is visible (not installed, or hidden by a managed control plane)"
    spec = lease.raw.get("spec") or {}
    renewed = parse_time(spec.get("renewTime"))
    if renewed is None:
        return None, f"the {name} lease has no renewTime"
    age = (facts.inventory.observed_at - renewed).total_seconds()
    limit = max(60, 4 * (spec.get("leaseDurationSeconds") or 15))
    if age <= limit:
        return True, f"{name} is running (its lease was renewed {format_age(age)} ago)"
    return False, f"{name} is not running: its lease was last renewed {format_age(age)} ago"


def controller_manager(facts: Facts) -> tuple[bool | None, str]:
    return lease_alive(facts, "kube-controller-manager")


def waiting_on_controller_manager(ctx: Context, condition: str, risk: str, evidence=()) -> Finding:
    """The protected condition is gone: kube-controller-manager should remove the finalizer now."""
    alive, liveness = controller_manager(ctx.facts)
    if alive is False:
        fix = ("kube-controller-manager is down: bring it back and it will remove the finalizer; "
               "removing it by hand is safe only while the condition above stays true")
    else:
        fix = ("nothing to fix: kube-controller-manager should remove it within seconds; if it does not, "
               "check its logs")
    found = ctx.finding(condition, Verdict.WAITING, fix, risk, [*evidence, liveness], alive)
    if alive is False:
        found.remove_command = remove_command(ctx.obj, ctx.finalizer)
    return found


def explain_finalizer(obj: KubeObject, finalizer: str, where: str, facts: Facts) -> Finding:
    fam = family(finalizer)
    ctx = Context(obj, finalizer, where, facts, fam)
    explainer = EXPLAINERS.get(fam.name)
    if explainer is None:
        explainer = EXPLAINERS["unknown"]
    return explainer(ctx)


@dataclass
class Explanation:
    obj: KubeObject
    findings: list[Finding]
    terminating_seconds: float | None

    def to_dict(self, facts: Facts) -> dict:
        o = self.obj
        return {
            "apiVersion": "kfin.dev/v1", "kind": "Explanation",
            "object": {"apiVersion": o.type.api_version, "kind": o.type.kind, "resource": o.type.resource,
                       "group": o.type.group, "namespace": o.namespace or None, "name": o.name, "uid": o.uid,
                       "deletionTimestamp": o.meta.get("deletionTimestamp"),
                       "finalizers": o.finalizers, "specFinalizers": o.spec_finalizers},
            "terminating": o.terminating,
            "terminatingSeconds": None if self.terminating_seconds is None else int(self.terminating_seconds),
            "findings": [f.to_dict() for f in self.findings],
            "failures": [f.to_dict() for f in facts.inventory.failures],
        }


def explain_object(obj: KubeObject, facts: Facts) -> Explanation:
    findings = [explain_finalizer(obj, f, "metadata.finalizers", facts) for f in obj.finalizers]
    findings += [explain_finalizer(obj, f, "spec.finalizers", facts) for f in obj.spec_finalizers]
    since = obj.deletion_requested_at
    seconds = (facts.inventory.observed_at - since).total_seconds() if since else None
    return Explanation(obj, findings, seconds)
