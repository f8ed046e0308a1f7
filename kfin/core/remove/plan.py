"""Removal plans: which finalizers of one object kfin would remove (or which Pod it would force-delete), and why
each other one stays, from its explanation and what was asked (--finalizer, --force, --all-stuck). Pure: nothing
here reads or writes; kfin.core.remove.apply writes a plan, guarded, and plans again from a fresh read after a race.
"""

from __future__ import annotations

import json
from typing import Any

from msgspec import Struct, field

from kfin.api.paths import resource_path
from kfin.core.explain.causes import Finding, Verdict
from kfin.core.explain.causes.pods import GRACEFUL_DELETION
from kfin.core.explain.causes.registry import control_plane_owned
from kfin.model import KubeObject, metadata_patch
from kfin.util.durations import format_age
from kfin.util.globs import glob_match


class PlanOptions(Struct, frozen=True):
    """What a plan was asked for, beyond its object: kept with the plan, so that a plan made again after a race
    asks the same."""

    patterns: tuple[str, ...] = ()  # --finalizer; none: those kfin proved nothing else will remove
    force: bool = False
    allow_live: bool = False
    node_lost_after: float = 300
    bulk: bool = False  # --all-stuck: force-deletes a Pod, or takes an outside-the-cluster finalizer, only if forced
    proven_only: bool = False  # kfin mcp: a finalizer its controller still wants is refused even when named


class Choice(Struct):
    finding: Finding
    selected: bool
    refused: str | None = None  # why it will not be removed
    warning: str | None = None


class Plan(Struct):
    obj: KubeObject
    choices: list[Choice]
    refused: str | None = None  # why nothing is done for the whole object
    asked: PlanOptions = field(default_factory=PlanOptions)

    @property
    def selected(self) -> list[Finding]:
        return [c.finding for c in self.choices if c.selected and not c.refused]

    @property
    def blocked(self) -> list[Choice]:
        return [c for c in self.choices if c.selected and c.refused]

    @property
    def refusal(self) -> str | None:
        """Why nothing of it is removed: the whole object's reason, or each refused finalizer's (a refused
        force-delete's alone: a Pod in graceful deletion has no finalizer to name); None if runnable."""
        if self.refused:
            return self.refused
        if self.refused_what.startswith("force-delete"):
            return "; ".join(c.refused or "" for c in self.blocked) or None
        return "; ".join(f"{c.finding.finalizer or 'force-delete'}: {c.refused}" for c in self.blocked) or None

    @property
    def refused_what(self) -> str:
        """What a refusal refuses, naming the object: a Pod's force-delete when that is all it asks (kfin removes
        no finalizer then: the Pod has none, only its kubelet can confirm it stopped), else a finalizer removal."""
        force = [c for c in self.blocked if c.finding.family == FORCE_DELETION]
        if not self.refused and force and len(force) == len(self.blocked):
            node = force[0].finding.detail.get("node")
            kubelet = f"the kubelet of node {node}" if node else "its node's kubelet"
            return (
                f"force-delete {self.obj.ref} (it has no finalizer; only {kubelet} can confirm its containers stopped)"
            )
        return f"remove finalizers from {self.obj.ref}"


def matches(finalizer: str, patterns: list[str]) -> bool:
    return any(glob_match(finalizer, p) for p in patterns)


FORCE_DELETION = GRACEFUL_DELETION  # a Pod's cause without a finalizer: removed by a forced DELETE


def _force_choice(f: Finding, force: bool, node_lost_after: float, bulk: bool) -> Choice:
    """A Pod in graceful deletion may be force-deleted only when its node is gone, or has not reported for
    `node_lost_after` seconds; otherwise only with --force. A bulk removal force-deletes only with --force:
    a node that stopped reporting may merely be cut off and still run the Pod, and marking it out of
    service (the safe fix, first) lets Kubernetes delete its Pods and detach their volumes itself."""
    choice = Choice(f, True)
    node, lost = f.detail.get("node"), f.detail.get("nodeLostSeconds")
    if f.detail.get("nodeMissing"):
        why, lost_long = f"its node {node} does not exist (the pod garbage collector deletes such Pods)", True
    elif lost is not None and lost >= node_lost_after:
        why, lost_long = f"its node {node} has not reported for {format_age(lost)} and may only be cut off", True
    elif lost is not None:
        why = f"its node {node} has been lost for {int(lost)} s only (--node-lost-after {int(node_lost_after)} s)"
        lost_long = False
    else:
        why, lost_long = f"its kubelet may still answer: {f.condition}", False
    if lost_long and not bulk:
        if not f.detail.get("nodeMissing"):
            choice.warning = f"its node {node} may only be cut off: {f.risk}"
        return choice
    if force:
        choice.warning = f"forced although {why}. Risk: {f.risk}"
    elif lost_long:
        choice.refused = f"Safe fix: {f.fix}. A bulk removal force-deletes a Pod only with --force ({why})"
    else:
        choice.refused = f"{why}. Safe fix: {f.fix}"
    return choice


def _outside_the_cluster(choice: Choice, force: bool, bulk: bool) -> None:
    """A finalizer that guards infrastructure outside the cluster (a cloud load balancer, a disk, a VM): even
    ORPHANED, forcing it leaves that running, billed and unmanaged. A bulk removal takes it only with --force
    (and says so on its line); one object's removal leads its risk with it (the finding's risk begins so)."""
    if not bulk:
        return
    f = choice.finding
    said = f"it guards infrastructure outside the cluster ({f.infrastructure}), left behind once it is removed"
    if force:
        choice.warning = f"forced although {said}{'; ' + choice.warning if choice.warning else ''}"
    else:
        choice.refused = (
            f"{said}. Safe fix: {f.fix}. A bulk removal takes such a finalizer only with --force, once what it "
            "guards is cleaned up by hand"
        )


def plan(
    obj: KubeObject,
    findings: list[Finding],
    patterns: list[str] | tuple[str, ...] | None,
    *,
    force: bool,
    allow_live: bool,
    node_lost_after: float = 300,
    bulk: bool = False,
    proven_only: bool = False,
) -> Plan:
    """Which finalizers to remove, and which are refused (with the reason and the safe fix). `bulk`: for
    --all-stuck, which force-deletes a Pod only with --force. `proven_only`: for kfin mcp (kfin/mcp/removal.py),
    which removes only what kfin proved nothing else will remove."""
    asked = PlanOptions(
        patterns=tuple(patterns or ()),
        force=force,
        allow_live=allow_live,
        node_lost_after=node_lost_after,
        bulk=bulk,
        proven_only=proven_only,
    )
    return plan_asked(obj, findings, asked)


# The verdicts kfin mcp leaves to a person even when named: their controller still wants them
WANTED = (Verdict.WAITING, Verdict.STALLED)


def plan_asked(obj: KubeObject, findings: list[Finding], asked: PlanOptions) -> Plan:
    """plan(), for what was asked already (a plan made again after a race asks what the first one did)."""
    patterns = list(asked.patterns)
    choices = []
    for f in findings:
        if f.family == FORCE_DELETION:  # --finalizer patterns name finalizers, never this
            choices.append(
                Choice(f, False) if patterns else _force_choice(f, asked.force, asked.node_lost_after, asked.bulk)
            )
            continue
        if patterns:
            chosen = matches(f.finalizer, patterns)
        else:  # by default only what kfin proved nothing else will remove
            chosen = f.verdict == Verdict.ORPHANED and not control_plane_owned(f.finalizer)
        choice = Choice(f, chosen)
        if chosen and (
            f.verdict in (Verdict.HOLDING, Verdict.UNKNOWN, Verdict.BLOCKED) or control_plane_owned(f.finalizer)
        ):
            why = {
                Verdict.HOLDING: "it is HOLDING: ",
                Verdict.UNKNOWN: "kfin could not prove what holds it: ",
                Verdict.BLOCKED: "it cannot be removed now: ",
            }.get(f.verdict, f"it belongs to the Kubernetes control plane ({f.controller}), which removes it: ")
            if asked.force:
                choice.warning = f"forced although {why}{f.condition}. Risk: {f.risk}"
            else:
                choice.refused = f"{why}{f.condition}. Safe fix: {f.fix}"
        elif chosen and f.verdict == Verdict.WAITING and f.controller_alive:
            choice.warning = f"its controller is running and should remove it ({f.condition})"
        elif chosen and f.verdict == Verdict.STALLED:  # named by --finalizer: never chosen by default
            choice.warning = (
                f"its controller is there but cannot act ({f.condition}); once it can, it cleans up: {f.fix}"
            )
        if chosen and f.infrastructure and not choice.refused:
            _outside_the_cluster(choice, asked.force, asked.bulk)
        if chosen and asked.proven_only and not choice.refused and f.verdict in WANTED:
            choice.refused = (
                f"it is {f.verdict.value}: {f.condition}. Safe fix: {f.fix}. kfin mcp removes only what kfin "
                f"proved nothing else will remove; a person may decide otherwise with kfin remove --finalizer "
                f"{f.finalizer}"
            )
        choices.append(choice)
    refused = None
    ghost = next((f for f in findings if f.family == "ghost"), None)
    if ghost is not None and not obj.terminating:  # live or not, nothing can be written to it before its namespace
        refused = f"{ghost.condition}. Safe fix: {ghost.fix}"
    elif not obj.terminating and not asked.allow_live:
        refused = (
            "it is not being deleted: removing finalizers from a live object is almost never wanted "
            "(--allow-live to do it anyway)"
        )
    elif patterns and not any(c.selected for c in choices):
        refused = f"none of its finalizers ({', '.join(f.finalizer for f in findings) or 'none'}) matches " + ", ".join(
            patterns
        )
    elif not patterns and not any(c.selected for c in choices):
        # the safe fix first: forcing is the last resort, named last
        fixes = [f"{f.fix} ({f.finalizer or f.family} is {f.verdict.value})" for f in findings]
        refused = (
            "no finalizer is safe to remove. Safe fix: " + "; ".join(dict.fromkeys(fixes)) if fixes else "no finalizer"
        ) + ". Only if that cannot be done: --finalizer NAME --force"
    return Plan(obj, choices, refused, asked)


def requests_preview(plan_: Plan) -> list[str]:
    """The requests a plan will send, in words and JSON, for the dry run to show."""
    o = plan_.obj
    lines = []
    meta = [f.finalizer for f in plan_.selected if f.location == "metadata.finalizers"]
    spec = [f.finalizer for f in plan_.selected if f.location == "spec.finalizers"]
    path = resource_path(o.type, o.namespace or None, o.name)
    if meta:
        lines.append(f"PATCH {path} (application/json-patch+json)")
        lines.append(json.dumps(metadata_patch(o.uid, o.finalizers, meta)))
    if any(f.family == FORCE_DELETION for f in plan_.selected):
        lines.append(f"DELETE {path} with gracePeriodSeconds 0 and preconditions.uid {o.uid}")
    if spec:
        lines.append(
            f"PUT {resource_path(o.type, None, o.name, 'finalize')} with the Namespace as read and "
            f"spec.finalizers: {json.dumps([f for f in o.spec_finalizers if f not in spec])}"
        )
    return lines


def as_read(o: KubeObject) -> dict[str, Any]:
    """The object a removal was planned on, as read: its identity and the version the patch was made from."""
    return {
        "apiVersion": o.type.api_version,
        "kind": o.type.kind,
        "namespace": o.namespace or None,
        "name": o.name,
        "uid": o.uid,
        "resourceVersion": o.meta.get("resourceVersion"),
    }
