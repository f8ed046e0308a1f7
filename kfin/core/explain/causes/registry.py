"""The registry of causes, and what each one answers: a Finding with its verdict, its one line, and the
links of the blocking graph ("this cannot go until that is dealt with").

A cause is a finalizer family (pvc-protection, namespace, custom, ...) or something that holds a
deletion without a finalizer (a Pod's graceful deletion). Each lives in one module of this package and
registers itself with `explains`: its catalog entries (the finalizer names it covers, what they
protect, who removes them), what it reads whole (`reads=`, fetched in parallel for every stuck object
before any is explained) and its explainer. `kfin stuck`, `explain`, `graph` and `remove` all read
the same Finding, so they cannot disagree; adding a cause touches one module. An explainer returns its
Finding whole (Context.finding takes every field a cause sets); a Finding is frozen, and what a later pass
concludes of it (a gate, the server's answer, the evidence against a wait) is a new one.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from enum import Enum
from functools import lru_cache
from typing import Literal

from msgspec import Struct, field
from msgspec.structs import replace

from kfin.core.explain.causes.evidence import (
    Reports,
    controller_reports,
    creates_refused,
    failed_reads,
    failure_conditions,
)
from kfin.core.read.catalog import Catalog, CatalogEntry
from kfin.core.read.facts import ClusterFacts, Worked
from kfin.model import JSON, KubeObject, parse_time
from kfin.util.durations import format_age
from kfin.util.globs import glob_match

QUALIFIED = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


class Family(Struct, frozen=True):
    """What a finalizer is known as: its short label, what it protects and who removes it."""

    name: str  # short label shown in tables
    protects: str  # what it guards, in a phrase
    owner: str  # who removes it
    entry: CatalogEntry | None = None  # the catalog entry, for an ecosystem finalizer (kfin/data/catalog.yaml)


class Entry(Struct, frozen=True):
    """A catalog entry: the finalizer names (a glob) a cause covers, what they protect, who removes them."""

    pattern: str
    protects: str
    owner: str


class Action(Struct, frozen=True):
    """One thing a plan asks of the operator: a command to paste as it stands (one line, nothing else on it; None
    for an action outside kubectl and kfin, then said in `note`), `when` to do it (a condition: "once it is shut
    down", "instead, if ..."), and a `note` on what it does. An alternative or a last resort is an Action of its
    own, its `when` saying which."""

    command: str | None
    when: str | None = None
    note: str | None = None

    @property
    def text(self) -> str:
        """The action in a sentence, for a line of prose (explain's "Safe fix")."""
        what = self.command or self.note or ""
        if self.command and self.note:
            what += f" ({self.note})"
        return f"{self.when}: {what}" if self.when else what

    def to_dict(self) -> JSON:
        return {"command": self.command, "when": self.when, "note": self.note}


def prose(actions: Iterable[Action]) -> str:
    """Actions in a sentence, for a line of prose (a finding's fix made of the steps of what gates it)."""
    return "; ".join(dict.fromkeys(action.text for action in actions))


# What a link's end is to the object explained; a cause that finds a new kind of blocker adds its kind here
LinkKind = Literal[
    # objects that use or hold it
    "used-by-pod",
    "bound-claim",
    "bound-content",
    "attachment",
    "allocated-address",
    "reserved-for",
    "member-pod",
    "holder",
    "named-by",
    "requires",
    "custom-resource",
    "blocking-dependent",
    "content",
    "ghost",
    "snapshot-in-progress",
    "restoring",
    "cloning",
    "bound-snapshot",
    # something outside the API, or the controller that should act
    "controller",
    "kubelet",
    "cloud",
    # what the API server itself cannot do or refuses (a dry run's answer: kfin.core.explain.causes.dryrun)
    "discovery-failure",
    "conversion-failure",
    "unreadable-storage",
    "webhook",
    "admission-policy",
    "forbidden",
    "storage",
    "namespace-terminating",
    "rejected",
]


class Link(Struct):
    """An edge of the blocking graph: the object explained cannot go until `target` (an object) or
    `actor` (a controller, a cloud, a node's kubelet: something outside the API) is dealt with."""

    kind: LinkKind
    why: str  # one line: what the target does to it
    target: KubeObject | None = None
    actor: str | None = None
    # the least risky action that removes this link, when its end is a root cause, then its alternatives
    step: tuple[Action, ...] = ()
    # the last resort for this link's own object if the step is not enough (a Pod force-deleted): several
    # links into one root share its step, and the plan names every one of their last resorts
    fallback: Action | None = None
    # For a gate (a cause in front of every finalizer): the family the object's line then names, and the
    # risk of the step, put before each finalizer's own.
    family: str | None = None
    risk: str | None = None
    finalizers: tuple[str, ...] | None = None  # a gate of only these finalizers (None: of every one)
    possible: bool = False  # a gate kfin could not evaluate: named as evidence, no BLOCKED verdict

    def gates(self, finalizer: str) -> bool:
        return not self.possible and (self.finalizers is None or finalizer in self.finalizers)

    def to_dict(self) -> JSON:
        return {
            "type": self.kind,
            "why": self.why,
            "actor": self.actor,
            "step": [action.to_dict() for action in self.step],
            "fallback": None if self.fallback is None else self.fallback.to_dict(),
            "object": None if self.target is None else self.target.ref,
        }


class Verdict(str, Enum):
    HOLDING = "HOLDING"  # what the finalizer protects is still there: removing it would break something
    WAITING = "WAITING"  # the condition is gone; its controller should remove it
    STALLED = "STALLED"  # its controller is there but cannot act (forbidden, not running): someone must act
    ORPHANED = "ORPHANED"  # nothing will ever remove it: its controller is gone
    UNKNOWN = "UNKNOWN"  # kfin could not check (not readable, or not a name it can place)
    BLOCKED = "BLOCKED"  # something in front of every writer (a webhook failing closed) rejects its removal


class Finding(Struct, kw_only=True, frozen=True):
    """Why one finalizer (or a deletion without one) is still there: the cause's verdict, with its evidence and the
    actions that resolve it. Built whole by its cause (Context.finding) and never changed after: what a later pass
    concludes (a gate in front of it, the server's answer, the evidence against it) is a new Finding made with
    msgspec.structs.replace."""

    finalizer: str
    location: str  # metadata.finalizers, spec.finalizers, or "deletion" (a cause without a finalizer)
    family: str
    protects: str
    controller: str
    condition: str  # the live condition, in a sentence
    verdict: Verdict
    fix: str
    risk: str
    evidence: tuple[str, ...] = ()
    controller_alive: bool | None = None
    remove_command: str | None = None  # when removing the finalizer is the right next step
    summary: str | None = None  # the one line `kfin stuck` shows after the family (default: condition)
    links: tuple[Link, ...] = ()  # what it waits on, for the blocking graph
    detail: JSON = field(default_factory=dict)  # facts a removal needs (a Pod's node: missing, lost since)
    # what it guards outside the cluster (a catalog entry's: a cloud load balancer, a disk, a VM), left behind
    # when it is forced: said first wherever its risk is, and never removed in bulk without --force
    infrastructure: str = ""
    # what the server answered the dry run of its removal (kfin.core.explain.causes.dryrun): "removed" (accepted, and
    # the object returned no longer holds it), "kept" (accepted, but admission put it back), "rejected"; None when no
    # dry run answered it. Where the server answered, a gate judged from configuration alone decides nothing.
    answered: str | None = None

    @property
    def line(self) -> str:
        return f"{self.family}: {self.summary or self.condition}"

    def to_dict(self) -> JSON:
        return {
            "finalizer": self.finalizer,
            "field": self.location,
            "family": self.family,
            "protects": self.protects,
            "controller": self.controller,
            "condition": self.condition,
            "verdict": self.verdict.value,
            "fix": self.fix,
            "risk": self.risk,
            "evidence": list(self.evidence),
            "links": [link.to_dict() for link in self.links],
            "infrastructure": self.infrastructure or None,  # outside the cluster, left behind if forced
            "controllerAlive": self.controller_alive,
            "removeCommand": self.remove_command,
            "holders": copy.deepcopy(self.detail.get("holders", [])),  # what a catalog entry found holding it
        }


class Context(Struct):
    """What a cause is given to explain one finalizer of one object."""

    obj: KubeObject
    finalizer: str
    location: str
    facts: ClusterFacts
    family: Family

    def finding(
        self,
        condition: str,
        verdict: Verdict,
        *,
        fix: str,
        risk: str,
        evidence: Iterable[str] = (),
        alive: bool | None = None,
        controller: str | None = None,
        summary: str | None = None,
        remove_command: str | None = None,
        links: Iterable[Link] = (),
        detail: JSON | None = None,
        infrastructure: str = "",
        family: str | None = None,
        protects: str | None = None,
    ) -> Finding:
        """The finding of this finalizer (or deletion), whole: `alive` whether its controller runs (None: not known),
        `controller` who removes it when the family's owner does not say, `family` and `protects` when not the
        family's own; the rest as the Finding's fields."""
        return Finding(
            finalizer=self.finalizer,
            location=self.location,
            family=family or self.family.name,
            protects=protects or self.family.protects,
            controller=controller or self.family.owner,
            condition=condition,
            verdict=verdict,
            fix=fix,
            risk=risk,
            evidence=tuple(evidence),
            controller_alive=alive,
            remove_command=remove_command,
            summary=summary,
            links=tuple(links),
            detail={} if detail is None else detail,
            infrastructure=infrastructure,
        )


Explainer = Callable[[Context], Finding]
EXPLAINERS: dict[str, Explainer] = {}
CATALOG: list[tuple[Entry, str]] = []  # (entry, cause name), in registration order
# Causes of a deletion that waits without a finalizer: (name, applies to the object?, protects, owner).
DELETION_CAUSES: list[tuple[str, Callable[[KubeObject], bool], str, str]] = []


# What a cause reads, declared with it, so that a scan fetches it for all stuck objects at once, in parallel,
# before explaining them one by one: (group, resource, where) read whole, or (group, resource, where, False)
# names and metadata only, where EVERYWHERE (every namespace, or a cluster-scoped kind), OBJECT_NAMESPACE
# (the explained object's), or a namespace's name.
EVERYWHERE, OBJECT_NAMESPACE = "*", "."
Read = tuple[str, str, str] | tuple[str, str, str, bool]
Reads = tuple[Read, ...]
READS: dict[str, Reads] = {}
WORKLOADS = (("apps", "deployments"), ("apps", "statefulsets"), ("apps", "daemonsets"))


def entry_reads(entry: CatalogEntry) -> Reads:
    """What explaining an ecosystem finalizer reads whole, from its catalog entry: the workloads where its
    controller is looked for, and the related objects its holders name."""
    where = entry.controller.namespaces or (EVERYWHERE,)
    reads: list[Read] = (
        [(group, resource, ns) for ns in where for group, resource in WORKLOADS] if entry.controller.searchable else []
    )
    for holder in entry.holders:
        if holder.get("from") == "related" and holder.get("resource") and holder.get("group") is not None:
            reads.append((holder["group"], holder["resource"], OBJECT_NAMESPACE))
        if holder.get("logic") == "drain":
            reads += [("", "pods", EVERYWHERE), ("policy", "poddisruptionbudgets", EVERYWHERE)]
    return tuple(reads)


GATE_READS: list[Read] = []
CONTROLLER_MANAGER_LEASE = ("coordination.k8s.io", "leases", "kube-system")


def explains(name: str, *entries: Entry, reads: Reads = ()) -> Callable[[Explainer], Explainer]:
    """Register a cause: its explainer, the finalizer names it covers, and what it reads."""

    def register(fn: Explainer) -> Explainer:
        EXPLAINERS[name] = fn
        CATALOG.extend((entry, name) for entry in entries)
        READS[name] = tuple(reads)
        return fn

    return register


# Causes in front of every finalizer of an object (an admission webhook that rejects each UPDATE): each
# returns the Links that gate the object, and every finding then answers BLOCKED with them.
Gate = Callable[[KubeObject, ClusterFacts], list[Link]]
GATES: list[Gate] = []


def gates(*, reads: Reads = ()) -> Callable[[Gate], Gate]:
    """Register a cause that gates every finalizer of an object, and what it reads whole."""

    def register(fn: Gate) -> Gate:
        GATES.append(fn)
        GATE_READS.extend(reads)
        return fn

    return register


# Checks of a finding with the server (kfin.core.explain.causes.dryrun): the dry run of the removal its plan needs,
# whose answer decides (the finding's `answered`) before any gate judged from configuration; `gates` are those gates.
# Each returns the finding as checked (the one it was given where the check adds nothing).
ServerCheck = Callable[[KubeObject, Finding, list[Link], ClusterFacts], Finding]
SERVER_CHECKS: list[ServerCheck] = []


def checks_with_server(fn: ServerCheck) -> ServerCheck:
    """Register a check of each finding of a finalizer with the server."""
    SERVER_CHECKS.append(fn)
    return fn


def explains_deletion(
    name: str, applies: Callable[[KubeObject], bool], protects: str, owner: str, reads: Reads = ()
) -> Callable[[Explainer], Explainer]:
    """Register a cause that holds a deletion without a finalizer (a Pod's graceful deletion)."""

    def register(fn: Explainer) -> Explainer:
        EXPLAINERS[name] = fn
        DELETION_CAUSES.append((name, applies, protects, owner))
        READS[name] = tuple(reads)
        return fn

    return register


def reads_for(obj: KubeObject, catalog: Catalog) -> set[tuple[str, str, str | None, bool]]:
    """(group, resource, namespace or None for everywhere, whole) of what explaining `obj` with `catalog` reads,
    as its causes declare it."""
    families = [family(f, catalog) for f in obj.finalizers + obj.spec_finalizers]
    names = ["ecosystem" if fam.entry else fam.name for fam in families]
    if not names and obj.terminating:
        names = [name for name, applies, _, _ in DELETION_CAUSES if applies(obj)]
    declared = [read for name in names for read in READS.get(name, ())]
    declared += [read for fam in families if fam.entry for read in entry_reads(fam.entry)]
    if obj.finalizers:
        declared += GATE_READS
    out: set[tuple[str, str, str | None, bool]] = set()
    for group, resource, where, *whole in declared:
        namespace = None if where == EVERYWHERE else (obj.namespace or None) if where == OBJECT_NAMESPACE else where
        out.add((group, resource, namespace, whole[0] if whole else True))
    return out


# Finalizers of Kubernetes itself: kfin never calls one ORPHANED, and never removes one without --force.
CONTROL_PLANE_PATTERNS = ("kubernetes", "k8s.io/*", "*.k8s.io/*", "*kubernetes.io/*", "foregroundDeletion", "orphan")


@lru_cache(maxsize=4096)  # asked several times for each finalizer of each stuck object, at every answer
def control_plane_owned(finalizer: str) -> bool:
    """Whether the finalizer's name says it belongs to Kubernetes (kubernetes, *.k8s.io/*, *kubernetes.io/*,
    and the garbage collector's own): kube-controller-manager, kube-apiserver or a named sidecar removes it,
    including ones a newer release adds that kfin does not know."""
    return any(glob_match(finalizer, pattern) for pattern in CONTROL_PLANE_PATTERNS)


def family(finalizer: str, catalog: Catalog) -> Family:
    """The cause a finalizer belongs to: an entry of the command's catalog, else the control plane's (by its
    domain), custom (domain-qualified) or unknown. Kept per name with the catalog while the causes stay the same:
    a scan or a watching serve asks it for the same few names at every stuck object."""
    return catalog.remembered(("family", finalizer, len(CATALOG)), lambda: _family(finalizer, catalog))


def _family(finalizer: str, catalog: Catalog) -> Family:
    for entry, name in CATALOG:
        if glob_match(finalizer, entry.pattern):
            return Family(name, entry.protects, entry.owner)
    known = catalog.match(finalizer)
    if known is not None:
        return Family(known.name, known.protects, known.controller.name, known)
    if control_plane_owned(finalizer):
        return Family(
            "control-plane",
            "whatever the Kubernetes component that added it cleans up first",
            "a Kubernetes control-plane component (kube-controller-manager, kube-apiserver or a sidecar)",
        )
    if "/" in finalizer and QUALIFIED.match(finalizer):
        return Family(
            "custom", "whatever its controller cleans up first", "the controller of " + finalizer.split("/")[0]
        )
    return Family("unknown", "unknown: not a domain-qualified name, so no owner can be told", "unknown")


def condition(obj: KubeObject, kind: str) -> JSON:
    """The object's status condition of that type ({} when it has none)."""
    return next(
        (
            c
            for c in (obj.raw.get("status") or {}).get("conditions") or []
            if isinstance(c, dict) and c.get("type") == kind
        ),
        {},
    )


def kfin_remove_command(obj: KubeObject, finalizer: str) -> str:
    """The exact `kfin remove` line that removes one finalizer of an object (with --force for the control
    plane's: kfin refuses those without it)."""
    ns = f" -n {obj.namespace}" if obj.namespace else ""
    force = " --force" if control_plane_owned(finalizer) else ""
    return f"kfin remove {obj.type.qualified} {obj.name}{ns} --finalizer {finalizer}{force} --confirm"


def lease_alive(facts: ClusterFacts, name: str) -> tuple[bool | None, str]:
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


def controller_manager(facts: ClusterFacts) -> tuple[bool | None, str]:
    return lease_alive(facts, "kube-controller-manager")


def waiting_on_controller_manager(
    ctx: Context,
    condition: str,
    *,
    risk: str,
    evidence: Iterable[str] = (),
    summary: str | None = None,
    fix: str = "nothing to fix: kube-controller-manager should remove it within seconds; if it does not, check its "
    "logs",
) -> Finding:
    """The protected condition is gone: kube-controller-manager should remove the finalizer now (`fix`: what to do
    while it runs)."""
    alive, liveness = controller_manager(ctx.facts)
    if alive is not False:
        return ctx.finding(
            condition, Verdict.WAITING, fix=fix, risk=risk, evidence=[*evidence, liveness], alive=alive, summary=summary
        )
    # down, it is there (its lease says so) but acts no more: nothing progresses until someone brings it back
    remove = kfin_remove_command(ctx.obj, ctx.finalizer)
    return ctx.finding(
        condition,
        Verdict.STALLED,
        fix="kube-controller-manager is down: bring it back and it will remove the finalizer; "
        "removing it by hand is safe only while the condition above stays true",
        risk=risk,
        evidence=[*evidence, liveness],
        alive=alive,
        summary=summary,
        remove_command=remove,
        links=[
            Link(
                "controller",
                liveness,
                actor="kube-controller-manager",
                step=(
                    Action(None, note="bring kube-controller-manager back"),
                    Action(remove, when="instead, if it cannot come back"),
                ),
            )
        ],
    )


def explain_finalizer(obj: KubeObject, finalizer: str, where: str, facts: ClusterFacts) -> Finding:
    fam = family(finalizer, facts.catalog)
    ctx = Context(obj, finalizer, where, facts, fam)
    explainer = EXPLAINERS.get("ecosystem" if fam.entry else fam.name)
    if explainer is None:
        explainer = EXPLAINERS["unknown"]
    found = explainer(ctx)
    if found.verdict == Verdict.ORPHANED and control_plane_owned(finalizer):  # whatever a cause concluded
        return replace(
            found,
            verdict=Verdict.UNKNOWN,
            evidence=(
                *found.evidence,
                f"{finalizer} belongs to the Kubernetes control plane: kfin never calls it ORPHANED (a component "
                "kfin cannot see, or a newer release, may remove it)",
            ),
        )
    return found


class Explanation(Struct):
    """Every finding of one object: why each of its finalizers is still there."""

    obj: KubeObject
    findings: list[Finding]
    terminating_seconds: float | None

    def to_dict(self, facts: ClusterFacts) -> JSON:
        o = self.obj
        return {
            "apiVersion": "kfin.dev/v1",
            "kind": "Explanation",
            "object": {
                "apiVersion": o.type.api_version,
                "kind": o.type.kind,
                "resource": o.type.resource,
                "group": o.type.group,
                "namespace": o.namespace or None,
                "name": o.name,
                "uid": o.uid,
                "deletionTimestamp": o.meta.get("deletionTimestamp"),
                "finalizers": o.finalizers,
                "specFinalizers": o.spec_finalizers,
            },
            "terminating": o.terminating,
            "terminatingSeconds": None if self.terminating_seconds is None else int(self.terminating_seconds),
            "findings": [f.to_dict() for f in self.findings],
            "failures": [f.to_dict() for f in facts.inventory.failures],
        }


def explain_object(obj: KubeObject, facts: ClusterFacts) -> Explanation:
    findings = [explain_finalizer(obj, f, "metadata.finalizers", facts) for f in obj.finalizers]
    findings += [explain_finalizer(obj, f, "spec.finalizers", facts) for f in obj.spec_finalizers]
    if not findings and obj.terminating:
        for name, applies, protects, owner in DELETION_CAUSES:
            if applies(obj):
                ctx = Context(obj, "", "deletion", facts, Family(name, protects, owner))
                findings.append(EXPLAINERS[name](ctx))
    gates = [link for gate in GATES for link in gate(obj, facts)] if findings and obj.finalizers else []
    if obj.finalizers:
        findings = [gated(obj, finding, gates, facts) for finding in findings]
    since = obj.deletion_requested_at
    seconds = (facts.inventory.observed_at - since).total_seconds() if since else None
    explanation = Explanation(obj, findings, seconds)
    account_for_evidence(explanation, facts)
    return explanation


def gated(obj: KubeObject, finding: Finding, gates: list[Link], facts: ClusterFacts) -> Finding:
    """The finding of a metadata finalizer as the server's checks answer it, else as the gates judged from
    configuration (`gates`, in front of every finalizer of the object) leave it: BLOCKED by those that gate it."""
    if finding.location != "metadata.finalizers":
        return finding
    for check in SERVER_CHECKS:  # where the server answered the removal, its answer decides
        finding = check(obj, finding, gates, facts)
    if finding.answered is not None:
        return finding
    evidence = (*finding.evidence, *(f"possible gate: {link.why}" for link in gates if link.possible))
    gating = [link for link in gates if link.gates(finding.finalizer)]
    if not gating:
        return replace(finding, evidence=evidence)
    return replace(
        finding,
        evidence=(f"before: {finding.verdict.value}: {finding.condition}", *evidence),
        verdict=Verdict.BLOCKED,
        condition="; ".join(link.why for link in gating),
        summary=f"{finding.finalizer} cannot be removed: {gating[0].why}",
        family=gating[0].family or finding.family,
        fix=prose(action for link in gating for action in link.step),
        risk="; ".join([link.risk for link in gating if link.risk] + [finding.risk]),
        links=tuple(gating),
        remove_command=None,
    )


def account_for_evidence(explanation: Explanation, facts: ClusterFacts, events: list[JSON] | None = None) -> None:
    """No answer against the evidence kfin holds. The object's failure conditions and kfin's failed reads of what
    its causes read are quoted on every finding of a Terminating object (a snapshot holds them too). Where a finding
    would be WAITING ("its controller should remove it"), or a deletion kfin expects to complete on its own, what the
    object's controller reports is read too (its Events, once per object, or `events` when given; the conditions it
    writes: kfin.core.explain.causes.evidence.controller_reports): every command that explains the object reads the
    same, so they give one verdict. Against such evidence a WAITING finding becomes STALLED where its remover is known
    to run and says it cannot finish (a Warning Event since the deletion, a failing or paused condition of its own:
    named, with what to fix), else UNKNOWN, with the evidence quoted; so does an ORPHANED one whose proof needed a read
    that failed. Either way its plan no longer waits. A cause that accounts for the evidence answers otherwise (HOLDING,
    BLOCKED, STALLED ...) and keeps its verdict; progress its controller reports is quoted on a WAITING one."""
    obj = explanation.obj
    if not obj.terminating:
        return
    unread, gaps = failed_reads(facts, obj, reads_for(obj, facts.catalog))
    waits = not explanation.findings or any(f.verdict == Verdict.WAITING for f in explanation.findings)
    reports = controller_reports(obj, facts, events) if waits else Reports()
    failing = failure_conditions(obj)
    quoted = list(dict.fromkeys(failing + unread + gaps + reports.cannot_finish + reports.doubts))
    against = list(dict.fromkeys(failing + unread + reports.cannot_finish + reports.doubts))
    own = list(dict.fromkeys(failing + reports.cannot_finish))  # what its controller itself says
    if reports.progress and not against:
        progress = tuple(f"its controller reports progress: {line}" for line in reports.progress)
        explanation.findings = [
            replace(f, evidence=(*f.evidence, *progress)) if f.verdict == Verdict.WAITING else f
            for f in explanation.findings
        ]
    if not quoted and not against:
        return
    if not explanation.findings:  # "none: deletion should complete on its own" is no answer against evidence
        if not against:
            return
        ctx = Context(obj, "", "deletion", facts, Family("unknown", "nothing kfin knows of", "unknown"))
        explanation.findings.append(
            ctx.finding("no finalizer is left and nothing kfin knows holds it", Verdict.WAITING, fix="", risk="unknown")
        )
    explanation.findings = [_against(finding, obj, quoted, against, own, unread) for finding in explanation.findings]


def _against(
    finding: Finding, obj: KubeObject, quoted: list[str], against: list[str], own: list[str], unread: list[str]
) -> Finding:
    """One finding with the evidence quoted (`quoted`), and answered again where it is against it (`against`; `own`:
    what its controller itself says): a WAITING one, or an ORPHANED one whose proof needed a read that failed
    (`unread`)."""
    # what its cause showed the live cluster contradicts (a condition out of date) holds nothing
    against = [line for line in against if line not in finding.detail.get("outOfDate", ())]
    doubtful = finding.verdict == Verdict.WAITING or (finding.verdict == Verdict.ORPHANED and bool(unread))
    shown = [*finding.evidence, finding.condition]
    new = [line for line in (against if doubtful else quoted) if not any(line in text for text in shown)]
    old = [line for line in quoted if line not in new and not any(line in t for t in shown)]
    evidence = (*finding.evidence, *old, *new)
    if not doubtful or not against:  # a cause that quotes the evidence yet says WAITING has not accounted for it
        return replace(finding, evidence=evidence)
    reason = next((line for line in new if line in against), against[0])
    more = f" (+{len(against) - 1} more)" if len(against) > 1 else ""
    evidence = (f"before: {finding.verdict.value}: {finding.condition}", *evidence)
    refused = creates_refused(against)
    if refused and finding.finalizer:  # its cleanup must create something where nothing can be created now
        return replace(
            finding,
            evidence=evidence,
            verdict=Verdict.STALLED,
            condition=(
                f"its controller's cleanup creates {', '.join(refused)}, which kube-apiserver refuses while the "
                "namespace is being terminated (NamespaceLifecycle): the controller cannot finish"
            ),
            summary=f"its controller cannot create {refused[0]} to clean up (namespace being terminated)",
            fix=(
                f"do by hand the cleanup its controller cannot (what it needed {refused[0]} for), then "
                + kfin_remove_command(obj, finding.finalizer)
            ),
            remove_command=None,
        )
    if own and finding.verdict == Verdict.WAITING and _remover_known(finding):
        return _stalled_by_report(replace(finding, evidence=evidence), obj, own)
    fix = f"find out what holds it from that evidence ({reason}), then explain it again"
    unknown = replace(
        finding,
        evidence=evidence,
        verdict=Verdict.UNKNOWN,
        condition=(
            f"{reason}{more}: kfin has no cause that explains it, so it cannot tell whether this resolves by itself"
        ),
        summary=f"not progressing as kfin expected: {reason}{more}",
        fix=fix,
        remove_command=None,
    )
    return _no_wait(unknown, Action(None, note=fix))


def _remover_known(finding: Finding) -> bool:
    """Whether the finding's remover was found running and shown to own the finalizer (a cause says WAITING with
    its controller alive only then); the control plane's components report through their own causes."""
    return finding.controller_alive is True and bool(finding.finalizer) and not control_plane_owned(finding.finalizer)


def _stalled_by_report(finding: Finding, obj: KubeObject, own: list[str]) -> Finding:
    """Its remover runs but reports it cannot finish: STALLED, naming the report, with what to fix first."""
    report = own[0]
    more = f" (+{len(own) - 1} more)" if len(own) > 1 else ""
    remove = kfin_remove_command(obj, finding.finalizer)
    stalled = replace(
        finding,
        verdict=Verdict.STALLED,  # it runs, but nothing progresses until someone fixes what it reports
        condition=f"{finding.controller} runs but reports it cannot finish: {report}{more}",
        summary=f"{finding.finalizer} ({finding.controller} reports it cannot finish: {report})",
        remove_command=remove,
        fix=(
            f"fix what {finding.controller} reports ({report}): it then removes the finalizer; if it cannot be "
            f"fixed, clean up by hand what the finalizer guards, then {remove}"
        ),
    )
    return _no_wait(
        stalled,
        Action(None, note=f"fix what {finding.controller} reports: {report}"),
        Action(remove, when="instead, once what it guards is cleaned up by hand"),
    )


def _no_wait(finding: Finding, *step: Action) -> Finding:
    """The finding with a step where its links only waited on an actor: its plan says what to do, not to wait."""
    kept = [link for link in finding.links if link.target is not None or link.step]
    waited = [link for link in finding.links if link not in kept]
    actor = next((link.actor for link in waited if link.actor), None) or finding.controller
    step_link = Link(waited[0].kind if waited else "controller", finding.condition, actor=actor, step=step)
    return replace(finding, links=(*kept, step_link))


def note_readded(explanation: Explanation, readded: dict[str, str], managers: dict[str, str]) -> None:
    """Say, on each finding whose finalizer kfin removed before and that is back, who added it back (its field
    manager, from managedFields): removing it again would only be undone."""
    explanation.findings = [_readded(finding, readded, managers) for finding in explanation.findings]


def _readded(finding: Finding, readded: dict[str, str], managers: dict[str, str]) -> Finding:
    """The finding, saying who added its finalizer back since kfin removed it (if it did)."""
    when = readded.get(finding.finalizer)
    if when is None:
        return finding
    manager = managers.get(finding.finalizer)
    if manager:
        said = f'kfin removed it at {when} (audit log), and field manager "{manager}" added it back since'
    else:  # kube-apiserver records no field manager of an object left with none (kfin's removal can do that)
        said = (
            f"kfin removed it at {when} (audit log), and a writer added it back since; managedFields do not "
            "name that writer (the API server's audit log does)"
        )
    return replace(
        finding,
        evidence=(*finding.evidence, said),
        detail={**finding.detail, "readdedBy": manager},
        fix=f"find out why {manager or 'its writer'} adds it back (its logs) before removing it again; " + finding.fix,
    )


def explain_cached(obj: KubeObject, facts: ClusterFacts) -> Explanation:
    """explain_object, once per object and Facts: causes name the blockers of the objects they wait on,
    and the blocking graph follows them. An object met again while it is being explained (an ownership
    cycle) is answered with no findings rather than followed forever."""
    explained = facts.kept(EXPLANATIONS)
    key = (obj.type.group, obj.type.resource, obj.namespace, obj.name)
    if key not in explained:
        explained[key] = Explanation(obj, [], None)  # in progress
        explained[key] = explain_object(obj, facts)
    return explained[key]


# each object's explanation, by (group, resource, namespace, name)
EXPLANATIONS: Worked[tuple[str, str, str, str], Explanation] = Worked("explanations")


def state_line(obj: KubeObject, facts: ClusterFacts) -> str:
    """What holds an object, in a line: its blocker when it is being deleted."""
    return blocker_line(explain_cached(obj, facts)) if obj.terminating else "not deleted yet"


def main_finding(explanation: Explanation) -> Finding | None:
    """The finding that speaks for the object in one line: a namespace's own `kubernetes` entry when it
    has no other finalizer, else the first."""
    findings = explanation.findings
    if not findings:
        return None
    if not explanation.obj.finalizers:
        return next((f for f in findings if f.finalizer == "kubernetes"), findings[0])
    return findings[0]


def blocker_line(explanation: Explanation) -> str:
    """`kfin stuck`'s BLOCKER: the main finding's line, and how many other finalizers there are."""
    main = main_finding(explanation)
    if main is None:
        return "none: deletion should complete on its own"
    more = sum(1 for f in explanation.findings if f.location != "deletion") - 1
    return main.line + (f" (+{more} more)" if more > 0 else "")
