"""Finalizers of the operators people run, as the catalog (kfin.core.read.catalog) describes them: their holders
(what they still wait for, hold or will clean up, read from the object or related objects), their controller
found where the catalog says it runs, and, when the catalog finds none, the custom cause's search (RBAC,
managedFields) for the proof an ORPHANED verdict needs. The risk, fix and texts are the entry's."""

from __future__ import annotations

from msgspec import Struct
from msgspec.structs import replace

from kfin.core.explain.causes import custom
from kfin.core.explain.causes.custom import RBAC_READS
from kfin.core.explain.causes.dryrun import controller_removal
from kfin.core.explain.causes.registry import (
    WORKLOADS,
    Action,
    Context,
    Finding,
    Link,
    Verdict,
    explains,
    kfin_remove_command,
)
from kfin.core.read.catalog import CatalogEntry, Controller, field_names
from kfin.core.read.facts import ClusterFacts
from kfin.model import JSON, MANAGERS, KubeObject

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


class Holding(Struct):
    """One thing a catalog finalizer waits for (holds), needs (requires), or will delete (cleans-up)."""

    effect: str
    text: str
    meaning: str
    target: KubeObject | None = None
    missing: bool = False  # a required object that is gone
    fix: str = ""  # what lets it go, when the holder says (a delete hook's owner removes its annotation)

    def to_dict(self) -> JSON:
        return {
            "effect": self.effect,
            "object": self.target.ref if self.target else None,
            "what": self.text,
            "meaning": self.meaning,
            "missing": self.missing,
        }


def _at(node: object, path: object) -> object:
    parts = path if isinstance(path, list) else str(path).split(".")
    for part in parts:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _describe(template: str, item: object) -> str:
    out = template
    for name in field_names(template):
        value = item if name == "value" else _at(item, name)
        out = out.replace("{" + name + "}", "" if value is None else str(value))
    return " ".join(out.split()).replace(" /", " ").strip()


def holdings(ctx: Context, entry: CatalogEntry) -> list[Holding] | None:
    """What the entry's holders find; None when kfin cannot read what they need (a snapshot, rights)."""
    facts, obj = ctx.facts, ctx.obj
    out: list[Holding] = []
    whole = None
    for holder in entry.holders:
        if holder.get("logic") == "drain":
            drained = _drain(facts, obj, holder, whole if whole is not None else facts.whole(obj) or obj.raw)
            if drained is None:
                return None
            out += drained
            continue
        if holder.get("from") == "self":
            whole = whole if whole is not None else facts.whole(obj)
            if whole is None:
                return None
            out += _from_self(holder, whole)
        elif holder.get("usingAt"):
            whole = whole if whole is not None else facts.whole(obj)
            if whole is None:
                return None
            using = _using(facts, obj, holder, whole)
            if using is None:
                return None
            out += using
        elif holder.get("resourceOf"):
            whole = whole if whole is not None else facts.whole(obj)
            if whole is None:
                return None
            required = _required(facts, obj, holder, whole)
            if required is None:
                return None
            out += required
        else:
            related = _related(facts, obj, holder)
            if related is None:
                return None
            out += related
    return out


def _from_self(holder: JSON, whole: JSON) -> list[Holding]:
    if holder.get("annotationPrefix"):  # <prefix>/<name>: <owner>, as Cluster API's delete hooks are written
        annotations = _at(whole, "metadata.annotations")
        prefix = holder["annotationPrefix"] + "/"
        hooks = [
            {"key": key, "name": key[len(prefix) :], "owner": value or "an owner the annotation does not name"}
            for key, value in sorted(annotations.items() if isinstance(annotations, dict) else [])
            if key.startswith(prefix)
        ]
        return [
            Holding(
                holder["effect"],
                _describe(holder["describe"], hook),
                holder["meaning"],
                fix=_describe(holder.get("fix", ""), hook),
            )
            for hook in hooks
        ]
    if holder.get("condition"):
        conditions = _at(whole, "status.conditions")
        return (
            [
                Holding(
                    holder["effect"], str(c.get("message") or c.get("reason") or holder["condition"]), holder["meaning"]
                )
                for c in conditions
                if isinstance(c, dict) and c.get("type") == holder["condition"] and c.get("status") == "True"
            ]
            if isinstance(conditions, list)
            else []
        )
    found = _at(whole, holder["path"])
    items = found if isinstance(found, list) else ([] if found in (None, "") else [found])
    out = []
    for item in items:
        split = holder.get("split")
        if split and isinstance(item, dict):
            parts = str(item.get(split["field"]) or "").split(split["separator"])
            item = dict(item, **dict(zip(split["into"], parts, strict=False)))
        out.append(Holding(holder["effect"], _describe(holder["describe"], item), holder["meaning"]))
    return out


def _related(facts: ClusterFacts, obj: KubeObject, holder: JSON) -> list[Holding] | None:
    group = obj.type.group if holder.get("sameGroup") else str(holder.get("group") or "")
    rtype = facts.resource(group, holder["resource"])
    if rtype is None:
        return []  # the cluster does not serve that kind: nothing of it can hold
    listed = facts.objects(group, holder["resource"], obj.namespace if rtype.namespaced else None, full=True)
    if listed is None:
        return None
    wanted = obj.name if holder["match"]["equals"] == "name" else obj.namespace
    return [
        Holding(holder["effect"], _describe(holder["describe"], o.raw), holder["meaning"], o)
        for o in listed
        if _at(o.raw, holder["match"]["field"]) == wanted
    ]


def _required(facts: ClusterFacts, obj: KubeObject, holder: JSON, whole: JSON) -> list[Holding] | None:
    """An object the controller needs to finish (an Issuer): named, and whether it is gone."""
    ref = _at(whole, holder["resourceOf"])
    if not isinstance(ref, dict) or not ref.get("name"):
        return []
    kind, group = str(ref.get("kind") or ""), str(ref.get("group") or obj.type.group)
    rtype = next((r for r in facts.inventory.resources if r.kind == kind and r.group.endswith(group)), None)
    if rtype is None:
        return []
    namespace = obj.namespace if rtype.namespaced else ""
    listed = facts.objects(rtype.group, rtype.resource, namespace or None)
    if listed is None:
        return None
    target = next((o for o in listed if o.name == ref["name"]), None)
    text = f"{kind} {namespace + '/' if namespace else ''}{ref['name']}"
    return [Holding("requires", text, holder["meaning"], target, missing=target is None)]


def _using(facts: ClusterFacts, obj: KubeObject, holder: JSON, whole: JSON) -> list[Holding] | None:
    """The resource that uses what the object protects ({apiVersion, kind, resourceRef: {name}}, as a Crossplane
    Usage's spec.by), while it exists; only where the object carries `whenLabel` (Crossplane waits on it only for a
    Usage its composite composed), in the object's namespace or cluster-wide."""
    if holder.get("whenLabel") and not (obj.meta.get("labels") or {}).get(holder["whenLabel"]):
        return []
    ref = _at(whole, holder["usingAt"])
    name = _at(ref, "resourceRef.name")
    if not isinstance(ref, dict) or not name:
        return []
    kind, group = str(ref.get("kind") or ""), str(ref.get("apiVersion") or "").rpartition("/")[0]
    rtype = next((r for r in facts.inventory.resources if r.kind == kind and r.group == group), None)
    if rtype is None:
        return []  # the cluster does not serve it: nothing of it can use anything
    namespace = obj.namespace if rtype.namespaced else ""
    listed = facts.objects(rtype.group, rtype.resource, namespace or None)
    if listed is None:
        return None
    target = next((o for o in listed if o.name == name), None)
    if target is None:
        return []
    text = f"{kind} {namespace + '/' if namespace else ''}{name}"
    return [Holding(holder["effect"], text, holder["meaning"], target)]


def _drain(facts: ClusterFacts, obj: KubeObject, holder: JSON, whole: JSON) -> list[Holding] | None:
    """The Pods a drain of the object's node must evict, and what stops it: a PodDisruptionBudget that
    allows no disruption, or a Pod annotated karpenter.sh/do-not-disrupt."""
    node = ""
    for source in holder["nodeName"]:
        if source == "self-if-node":
            node = obj.name if (obj.type.group, obj.type.resource) == ("", "nodes") else ""
        else:
            node = str(_at(whole, source) or "")
        if node:
            break
    if not node:
        return []
    pods = facts.objects("", "pods", None, full=True)
    budgets = facts.objects("policy", "poddisruptionbudgets", None, full=True)
    if pods is None or budgets is None:
        return None
    out = []
    for pod in pods:
        if (pod.raw.get("spec") or {}).get("nodeName") != node or pod.terminating:
            continue
        if any(ref.get("kind") == "DaemonSet" for ref in pod.owner_references):
            continue  # a drain leaves DaemonSet Pods
        labels = pod.meta.get("labels") or {}
        if (pod.meta.get("annotations") or {}).get(DO_NOT_DISRUPT) == "true":
            out.append(
                Holding(
                    "holds", f"Pod {pod.namespace}/{pod.name} is annotated {DO_NOT_DISRUPT}", "stops the drain", pod
                )
            )
            continue
        blocking = [
            b
            for b in budgets
            if b.namespace == pod.namespace
            and budget_selects(b, labels)
            and (b.raw.get("status") or {}).get("disruptionsAllowed", 1) == 0
        ]
        if blocking:
            out.append(
                Holding(
                    "holds",
                    f"Pod {pod.namespace}/{pod.name} is covered by PodDisruptionBudget "
                    f"{blocking[0].name}, which allows no disruption",
                    "stops the drain",
                    blocking[0],
                )
            )
        else:
            out.append(Holding("cleans-up", f"Pod {pod.namespace}/{pod.name}", "evicted by the drain", pod))
    return out


def budget_selects(budget: KubeObject, labels: JSON) -> bool:
    """Whether a PodDisruptionBudget's spec.selector selects Pods with these labels: in policy/v1 a null selector
    selects none, an empty one ({}) every Pod of its namespace (the field's API documentation)."""
    selector = (budget.raw.get("spec") or {}).get("selector")
    if not isinstance(selector, dict):
        return False
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return True
    match = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, values = expression.get("key"), expression.get("values") or []
        if expression.get("operator") == "In" and labels.get(key) not in values:
            return False
        if expression.get("operator") == "NotIn" and labels.get(key) in values:
            return False
        if expression.get("operator") == "Exists" and key not in labels:
            return False
        if expression.get("operator") == "DoesNotExist" and key in labels:
            return False
    return bool(match or selector.get("matchExpressions"))


def find_controller(facts: ClusterFacts, controller: Controller) -> list[tuple[KubeObject, int, int]] | None:
    """(workload, ready, wanted) of every Deployment, StatefulSet or DaemonSet the catalog says is the
    controller (by name, labels, label keys or ServiceAccount, in its usual namespaces); None when none of
    them can be read."""
    found, readable = [], False
    for namespace in controller.namespaces or (None,):
        for group, resource in WORKLOADS:
            workloads = facts.objects(group, resource, namespace, full=True)
            readable = readable or workloads is not None
            for w in workloads or []:
                labels = w.meta.get("labels") or {}
                if not (
                    w.name in controller.workloads
                    or (controller.labels and all(labels.get(k) == v for k, v in controller.labels))
                    or any(k in labels for k in controller.label_keys)
                    or custom.workload_account(w) in controller.service_accounts
                ):
                    continue
                found.append((w, *custom.readiness(w)))
    return found if readable else None


def outside_the_cluster(what: str) -> str:
    """The risk that leads: what outside the cluster a forced removal leaves behind."""
    return f"it guards infrastructure outside the cluster ({what}): forced, that is left behind, no longer managed"


@explains("ecosystem", reads=RBAC_READS)
def ecosystem(ctx: Context) -> Finding:
    entry = ctx.family.entry
    assert entry is not None  # the registry sends only catalog families here
    held = holdings(ctx, entry)
    holding = [h for h in held or [] if h.effect == "holds"]
    missing = [h for h in held or [] if h.effect == "requires" and h.missing]
    if holding:
        found = _held_by(ctx, entry, holding)
    elif missing:
        found = _requires_gone(ctx, entry, missing[0])
    else:
        found = _controller_verdict(ctx, entry)
    return _in_catalog_words(found, entry, held)


def _in_catalog_words(found: Finding, entry: CatalogEntry, held: list[Holding] | None) -> Finding:
    """The finding as the catalog entry tells it: its family (or the gate's that blocks it, as the registry's), what
    it protects and what a forced removal leaves outside the cluster (first), what it cleans up, what kfin could
    not read, and where the catalog's word comes from."""
    cleanups = [h for h in held or [] if h.effect == "cleans-up"]
    evidence = list(found.evidence)
    risk, summary = found.risk, found.summary
    if held is None:
        evidence.append(
            "what holds it could not be read (a snapshot keeps only what explanations need, or "
            "your rights do not reach it)"
        )
    if cleanups:
        evidence.append(
            f"{len(cleanups)} {cleanups[0].meaning}: "
            + ", ".join(h.text for h in cleanups[:12])
            + (", ..." if len(cleanups) > 12 else "")
        )
        risk = (
            f"{entry.risk} ({len(cleanups)} of them: {', '.join(h.text for h in cleanups[:5])}"
            + (", ..." if len(cleanups) > 5 else "")
            + ")"
        )
        if found.verdict != Verdict.HOLDING:
            line = found.summary or found.condition
            line = line if line.startswith(f"{entry.project}: ") else f"{entry.project}: {line}"
            summary = f"{line}; {len(cleanups)} {cleanups[0].meaning}"
    if entry.infrastructure:  # the cost of forcing it comes first: something outside the cluster is left behind
        risk = f"{outside_the_cluster(entry.infrastructure)}; {risk}"
    evidence.append(
        f"catalog: {entry.project}, checked against {entry.checked_against or 'an unstated version'}"
        f"; on deletion, {entry.controller.name} {entry.on_deletion}"
    )
    if entry.docs:
        evidence.append(f"the project's procedure: {entry.docs}")
    gate = found.links[0].family if found.verdict == Verdict.BLOCKED and found.links else None
    return replace(
        found,
        family=gate or entry.name,
        protects=entry.protects,
        infrastructure=entry.infrastructure,
        risk=risk,
        summary=summary,
        evidence=tuple(evidence),
        detail={**found.detail, "holders": [h.to_dict() for h in held or []]},
    )


def _held_by(ctx: Context, entry: CatalogEntry, holding: list[Holding]) -> Finding:
    """HOLDING: what the entry's holders find still there, each with its own way out when it says one."""
    return ctx.finding(
        f"{len(holding)} {holding[0].meaning}: "
        + "; ".join(h.text for h in holding[:5])
        + ("; ..." if len(holding) > 5 else ""),
        Verdict.HOLDING,
        fix="; ".join(dict.fromkeys([h.fix for h in holding if h.fix] + [entry.fix])),
        risk=entry.risk,
        evidence=[f"{h.text}: {h.meaning}" for h in holding[:20]],
        controller=entry.controller.name,
        summary=f"{entry.project}: {holding[0].text} ({holding[0].meaning})"
        + (f" (+{len(holding) - 1} more)" if len(holding) > 1 else ""),
        links=[
            Link(
                "holder",
                f"{h.text}: {h.meaning}",
                target=h.target,
                actor=None if h.target else h.text,
                step=(Action(None, note=h.fix),) if h.fix else (),  # the holder's own way out, when it says one
            )
            for h in holding
        ],
    )


def _requires_gone(ctx: Context, entry: CatalogEntry, gone: Holding) -> Finding:
    """STALLED: what its controller needs to clean up is gone; nothing progresses until someone recreates it or
    cleans up by hand."""
    controller = entry.controller
    remove = kfin_remove_command(ctx.obj, ctx.finalizer)
    return ctx.finding(
        f"{gone.text} is gone, and {controller.name} {gone.meaning}: it cannot finish",
        Verdict.STALLED,
        fix=f"recreate {gone.text}, or clean up by hand; {entry.fix}",
        risk=entry.risk,
        evidence=[f"{gone.text} does not exist"],
        controller=controller.name,
        summary=f"{entry.project}: {gone.text} is gone ({gone.meaning})",
        remove_command=remove,
        links=[
            Link(
                "requires",
                f"{gone.text} is gone",
                actor=gone.text,
                step=(
                    Action(None, note=f"recreate {gone.text} so that {controller.name} can clean up"),
                    Action(remove, when="instead, once you cleaned up by hand"),
                ),
            )
        ],
    )


def signs_elsewhere(facts: ClusterFacts, entry: CatalogEntry) -> tuple[list[str], list[str]]:
    """The signs that the entry's controller runs outside the cluster (a managed control plane's: an API group
    it serves, a label its nodes carry), and the signs kfin could not read."""
    found, unread = [], []
    for place in entry.elsewhere:
        if place.get("apiGroup"):
            group = place["apiGroup"]
            if any(r.group == group for r in facts.inventory.resources):
                found.append(f"{place['where']}: the cluster serves the API group {group} ({place['source']})")
            continue
        key = place["nodeLabel"]
        nodes = facts.objects("", "nodes", None)
        if nodes is None:
            unread.append(f"{place['where']}: kfin could not read the nodes, to look for the label {key}")
            continue
        labelled = next((n for n in nodes if key in (n.meta.get("labels") or {})), None)
        if labelled is not None:
            found.append(f"{place['where']}: Node {labelled.name} is labelled {key} ({place['source']})")
    return found, unread


def _may_run_elsewhere(
    ctx: Context, entry: CatalogEntry, signs: list[str], unread: list[str], evidence: list[str]
) -> Finding:
    """No controller in the cluster is not "not installed" where the controller may run outside it (Karpenter
    under EKS Auto Mode or AKS node auto-provisioning): a sign of that (`signs`), or one kfin cannot read
    (`unread`), makes it UNKNOWN (`evidence`: what the custom cause found)."""
    controller = entry.controller.name
    first = (signs or unread)[0]
    return ctx.finding(
        f"no {controller} runs in the cluster, but it may run outside it, which kfin cannot see: {first}"
        if signs
        else f"no {controller} runs in the cluster, and kfin cannot tell whether it runs outside it: {first}",
        Verdict.UNKNOWN,  # a controller kfin cannot see may still remove it: never ORPHANED
        fix=f"check whether {controller} runs outside the cluster ({first.split(':')[0]}): there, it removes the "
        f"finalizer itself; {entry.fix}",
        risk=entry.risk,
        evidence=[*signs, *unread, *evidence],
        alive=None,
        controller=controller,
        summary=f"{entry.project}: {controller} may run outside the cluster ({first.split(':')[0]})",
    )


def _controller_verdict(ctx: Context, entry: CatalogEntry) -> Finding:
    """The controller as the catalog finds it; when it finds none, the custom cause's proof (RBAC, managers)."""
    controller = entry.controller
    workloads = find_controller(ctx.facts, controller) if controller.searchable else None
    running = [(w, r, n) for w, r, n in workloads or [] if r > 0]
    where = ", ".join(controller.namespaces) or "any namespace"
    forbidden = f"{entry.project}: {controller.name} runs but is forbidden to update it"
    if running:
        w, ready, wanted = running[0]
        if custom.may_update(ctx, w.namespace, custom.workload_account(w)) is False:
            return custom.forbidden_finding(
                ctx,
                w,
                ready=ready,
                wanted=wanted,
                risk=entry.risk,
                evidence=[f"found through the catalog in {where}"],
                controller=controller.name,
                who="",
                summary=forbidden,
            )
        found = ctx.finding(
            f"{controller.name} runs ({w.type.kind} {w.namespace}/{w.name}, {ready}/{wanted} ready) "
            "and should remove it",
            Verdict.WAITING,
            fix=f"check {w.type.kind} {w.namespace}/{w.name}'s logs for why it does not finish; {entry.fix}",
            risk=entry.risk,
            evidence=[
                f"found through the catalog in {where}",
                f"{controller.name} owns {ctx.finalizer}: the catalog's entry for {entry.project} names it its remover",
            ],
            alive=True,
            controller=controller.name,
            summary=f"{entry.project}: {controller.name} runs and should remove it",
            links=[Link("controller", f"{controller.name} runs and should remove it", actor=controller.name)],
        )
        runs = f"{w.type.kind} {w.namespace}/{w.name}, {ready}/{wanted} ready"
        account = f"{w.namespace}/{custom.workload_account(w)}"
        # refused by RBAC, as the server answered its dry run: STALLED, said as above
        return controller_removal(ctx, found, account, runs, w, forbidden=forbidden)
    if workloads:
        return _not_running(ctx, entry, *workloads[0], where)
    return _by_custom_proof(ctx, entry, workloads, where)


def _not_running(ctx: Context, entry: CatalogEntry, w: KubeObject, ready: int, wanted: int, where: str) -> Finding:
    """STALLED: the catalog's controller is installed but not running; it acts only once someone fixes or scales it
    up."""
    controller = entry.controller
    why = custom.not_running(ctx.facts, w, ready, wanted)
    remove = kfin_remove_command(ctx.obj, ctx.finalizer)
    return ctx.finding(
        f"{controller.name} is installed but not running ({w.type.kind} {w.namespace}/{w.name}, "
        f"{ready}/{wanted} ready){': ' + why if why else ''}",
        Verdict.STALLED,
        fix=f"fix or scale up {w.type.kind} {w.namespace}/{w.name}: running, it removes the finalizer; {entry.fix}",
        risk=entry.risk,
        evidence=[f"found through the catalog in {where}", *custom.pod_warnings(ctx.facts, w)],
        alive=False,
        controller=controller.name,
        summary=f"{entry.project}: {controller.name} is not running ({w.type.kind} {w.namespace}/{w.name})",
        remove_command=remove,
        links=[
            Link(
                "controller",
                f"{w.type.kind} {w.namespace}/{w.name} is not running",
                target=w,
                step=(
                    Action(None, note=f"fix or scale up {w.type.kind} {w.namespace}/{w.name}"),
                    Action(remove, when="instead, once what it guards is cleaned up by hand"),
                ),
            )
        ],
    )


def _by_custom_proof(
    ctx: Context, entry: CatalogEntry, workloads: list[tuple[KubeObject, int, int]] | None, where: str
) -> Finding:
    """No workload of the catalog's controller: the custom cause's proof (RBAC and managedFields) of whether
    anything will remove it, in the catalog's words; ORPHANED only where it cannot run outside the cluster."""
    controller = entry.controller
    proof = custom.custom(ctx)
    looked = (
        "kfin could not read the workloads there"
        if workloads is None
        else "no Deployment, StatefulSet or DaemonSet of it"
    )
    evidence = [f"the catalog's {controller.name} was looked for in {where}: {looked}"] if controller.searchable else []
    evidence += proof.evidence
    condition, summary = proof.condition, proof.summary
    if proof.verdict == Verdict.ORPHANED and entry.elsewhere:
        signs, unread = signs_elsewhere(ctx.facts, entry)
        if signs or unread:
            return _may_run_elsewhere(ctx, entry, signs, unread, evidence)
        absent = [
            f"{p['where']} (no API group {p['apiGroup']})"
            if p.get("apiGroup")
            else f"{p['where']} (no node labelled {p['nodeLabel']})"
            for p in entry.elsewhere
        ]
        evidence.append("no sign that it runs outside the cluster: " + "; ".join(absent))
    if proof.verdict == Verdict.ORPHANED:
        manager = (ctx.obj.raw.get(MANAGERS) or {}).get(ctx.finalizer)
        condition = f"{controller.name} is not installed: {proof.condition}"
        summary = f"{entry.project}: {controller.name} is not installed" + (
            f' (it was added by "{manager}")' if manager else ""
        )
    return replace(
        proof,
        controller=controller.name,
        evidence=tuple(evidence),
        condition=condition,
        summary=summary,
        fix=entry.fix,
        risk=entry.risk,
    )
