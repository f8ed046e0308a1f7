"""The garbage collector's finalizers: foregroundDeletion and orphan. Each waits on writes the garbage collector
still has to make, which admission may reject: its DELETE of each blocking dependent, its patch releasing each
dependent of an owner deleted with orphaning (an UPDATE); kfin asks the server with the same write as a dry run as
the garbage collector (kfin.core.explain.causes.dryrun) and, where it cannot, matches its rules."""

from __future__ import annotations

from msgspec.structs import replace

from kfin.core.explain.causes.dryrun import blocked_dependents, blocked_orphaning, evidence, not_sent, orphaning
from kfin.core.explain.causes.namespace import deletion_gates
from kfin.core.explain.causes.registry import (
    CONTROLLER_MANAGER_LEASE,
    Action,
    Context,
    Entry,
    Finding,
    Link,
    Verdict,
    explains,
    prose,
    state_line,
    waiting_on_controller_manager,
)
from kfin.core.explain.causes.webhooks import RISK as WEBHOOK_RISK
from kfin.core.explain.causes.webhooks import rejecting_webhooks
from kfin.core.read.facts import ClusterFacts
from kfin.model import GARBAGE_COLLECTOR, JSON, KubeObject, ResourceType
from kfin.util.text import counted, first_few

MAX_DEPTH = 4


def _unreadable(ctx: Context, risk: str) -> Finding | None:
    """UNKNOWN when the objects that may depend on it cannot be read: dependents of a namespaced owner
    live in its namespace, those of a cluster-scoped one anywhere."""
    if ctx.facts.listed(ctx.obj.namespace or None) or ctx.facts.everything(ctx.obj.namespace or None) is not None:
        return None
    return ctx.finding(
        "kfin could not read the objects that may depend on it",
        Verdict.UNKNOWN,
        fix="check the dependents by hand (kfin graph)",
        risk=risk,
    )


def _chain(ctx: Context, owner: KubeObject, depth: int, lines: list[str], seen: set[str]) -> int:
    count = 0
    for dependent in ctx.facts.blocking_dependents(owner.uid):
        if dependent.uid in seen:
            continue
        seen.add(dependent.uid)
        count += 1
        state = state_line(dependent, ctx.facts)
        lines.append(f"{'  ' * depth}{dependent.ref}: {state}")
        if depth < MAX_DEPTH:
            count += _chain(ctx, dependent, depth + 1, lines, seen)
    return count


def _rejected(ctx: Context, direct: list[KubeObject], risk: str, lines: list[str]) -> Finding | None:
    """BLOCKED when the garbage collector's DELETE of a blocking dependent is rejected: by the server's answer to
    its dry run as the garbage collector, else by kfin's rules (a webhook failing closed, a policy that denies it as
    that ServiceAccount). kube-controller-manager retries it with backoff and reports it nowhere on the owner."""
    if not ctx.obj.terminating:
        return None
    pending = [d for d in direct if not d.terminating]  # one being deleted is not deleted again
    rejections = list(deletion_gates(ctx.facts, pending, GARBAGE_COLLECTOR, "the garbage collector").values())
    probed = blocked_dependents(ctx, pending, risk, [r.certain for r in rejections])
    if probed is not None:  # the server's own answer to the garbage collector, over what rules could only suspect
        return replace(probed, evidence=(*probed.evidence, *lines))
    if not rejections:
        return None
    return ctx.finding(
        "; ".join(r.why for r in rejections) + ": the garbage collector cannot delete them",
        Verdict.BLOCKED,
        fix=prose(a for r in rejections for a in r.step) + "; the garbage collector then carries on",
        risk="; ".join(dict.fromkeys([r.risk for r in rejections] + [risk])),
        evidence=[r.why for r in rejections] + lines,
        summary=f"{rejections[0].why}, so the garbage collector cannot delete its blocking dependents",
        links=[r.link() for r in rejections],
    )


@explains(
    "foregroundDeletion",
    Entry(
        "foregroundDeletion",
        "an owner until its blocking dependents are deleted",
        "kube-controller-manager (garbage collector)",
    ),
    reads=(CONTROLLER_MANAGER_LEASE,),
)
def foreground(ctx: Context) -> Finding:
    risk = (
        "low: without it the owner goes at once and the garbage collector deletes the dependents in the "
        "background instead of first"
    )
    unknown = _unreadable(ctx, risk)
    if unknown:
        return unknown
    lines: list[str] = []
    count = _chain(ctx, ctx.obj, 0, lines, set())
    if count:
        direct = ctx.facts.blocking_dependents(ctx.obj.uid)
        gated = _rejected(ctx, direct, risk, lines)
        if gated is not None:
            return gated
        return ctx.finding(
            f"{count} dependent{'s' if count != 1 else ''} with blockOwnerDeletion must go first",
            Verdict.HOLDING,
            fix="unstick the blocking dependents below (their own blockers are named); the owner then goes by itself",
            risk=risk,
            evidence=lines,
            summary=(
                f"waiting for {len(direct)} blocking dependent{'s' if len(direct) != 1 else ''} "
                f"({first_few([d.ref for d in direct])})"
            ),
            links=[
                Link(
                    "blocking-dependent",
                    "a dependent with blockOwnerDeletion, " + ("being deleted" if d.terminating else "not deleted yet"),
                    target=d,
                    step=()
                    if d.terminating
                    else (
                        Action(
                            f"kubectl delete {d.type.qualified} {d.name}"
                            + (f" -n {d.namespace}" if d.namespace else "")
                        ),
                    ),
                )
                for d in direct
            ],
        )
    return waiting_on_controller_manager(
        ctx,
        "no blocking dependent is left",
        risk=risk,
        evidence=(),
        summary="no blocking dependent left; the garbage collector should finish",
    )


@explains(
    "orphan",
    Entry("orphan", "an owner until its dependents are released", "kube-controller-manager (garbage collector)"),
    reads=(CONTROLLER_MANAGER_LEASE,),
)
def orphan(ctx: Context) -> Finding:
    risk = (
        "removing it turns orphaning into cascading deletion: the garbage collector then deletes the "
        "dependents you meant to keep"
    )
    unknown = _unreadable(ctx, risk)
    if unknown:
        return unknown
    dependents = ctx.facts.dependents(ctx.obj.uid)
    said = [f"{d.ref} still names it as owner" for d in dependents[:10]]
    name = "names" if len(dependents) == 1 else "name"
    condition = (
        f"{counted(len(dependents), 'dependent')} still {name} it as owner: the garbage collector must release them"
        if dependents
        else "no dependent names it as owner any more"
    )
    if ctx.obj.terminating and dependents:
        sent = orphaning(ctx.facts, ctx.obj, dependents)  # its UPDATEs, as it, answered by the server
        blocked = blocked_orphaning(ctx, sent, risk, said)
        if blocked is not None:
            return blocked
        said += [evidence(write, answer) for write, answer, _ in sent]
        possible = None if sent else _possible_gates(ctx, dependents, condition, risk, said)
        if possible is not None:
            return possible
    return waiting_on_controller_manager(
        ctx,
        condition,
        risk=risk,
        evidence=said,
        summary="the garbage collector must first remove this owner from its dependents",
    )


def release_gates(facts: ClusterFacts, dependents: list[KubeObject]) -> list[Link]:
    """By their configuration alone: the webhooks failing closed whose rules match the UPDATE of the dependents, which
    the garbage collector's release of them is (possible gates: only a dry run says whether they reject it)."""
    by_place: dict[tuple[ResourceType, str], list[JSON]] = {}
    for each in dependents:
        # an object selector reads labels, which a scan does not keep of objects it only knows as dependents
        whole = facts.find(each.type.group, each.type.resource, each.namespace, each.name, full=True) or each
        by_place.setdefault((each.type, each.namespace), []).append(whole.meta.get("labels") or {})
    links: dict[tuple[str, str], Link] = {}
    for (rtype, place), labels in by_place.items():
        where = f" in namespace {place}" if place else ""
        for r in rejecting_webhooks(facts, rtype, "UPDATE", place, labels):
            why = (
                f"webhook {r.hook} of {r.config.type.kind} {r.config.name} rejects every UPDATE of {rtype.qualified}"
                f"{where} (failurePolicy Fail): {r.problem}{r.conditions}"
            )
            links.setdefault(
                (r.config.uid, r.hook),
                Link("webhook", why, target=r.config, step=r.step, risk=WEBHOOK_RISK, possible=True),
            )
    return list(links.values())


def _possible_gates(
    ctx: Context, dependents: list[KubeObject], condition: str, risk: str, said: list[str]
) -> Finding | None:
    """Where no dry run was sent (a snapshot, --no-dry-run): UNKNOWN, naming each of the release_gates as a possible
    gate that was not checked; None without one."""
    gates = release_gates(ctx.facts, dependents)
    if not gates:
        return None
    unchecked = not_sent(ctx.facts)
    return ctx.finding(
        f"{condition}; {'; '.join(g.why for g in gates)}: it may reject the garbage collector's UPDATE of them, "
        f"not checked: {unchecked}",
        Verdict.UNKNOWN,
        fix=prose(a for g in gates for a in g.step) + "; the garbage collector then carries on",
        risk=f"{WEBHOOK_RISK}; {risk}",
        evidence=[f"possible gate, not checked: {g.why}" for g in gates] + said,
        controller="kube-controller-manager (garbage collector)",
        summary=f"{gates[0].why}: it may stop the garbage collector releasing its dependents (not checked)",
        links=gates,
    )
