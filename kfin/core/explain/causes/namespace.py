"""A namespace's `kubernetes` finalizer: its conditions, its remaining content, unavailable APIServices."""

from __future__ import annotations

import re
from collections import Counter

from msgspec import Struct
from msgspec.structs import replace

from kfin.core.explain.causes.conversion import conversion_step, failing_conversions
from kfin.core.explain.causes.dryrun import blocked_content
from kfin.core.explain.causes.policies import GROUP as POLICY_GROUP
from kfin.core.explain.causes.policies import RISK as POLICY_RISK
from kfin.core.explain.causes.policies import denied_deletes
from kfin.core.explain.causes.registry import (
    CONTROLLER_MANAGER_LEASE,
    EVERYWHERE,
    Action,
    Context,
    Entry,
    Finding,
    Link,
    Verdict,
    condition,
    explains,
    explains_deletion,
    prose,
    state_line,
    waiting_on_controller_manager,
)
from kfin.core.explain.causes.unreadable import list_failure_causes, storage_finding, unreadable_content
from kfin.core.explain.causes.webhooks import RISK as WEBHOOK_RISK
from kfin.core.explain.causes.webhooks import Rejection, hook_named, rejecting_webhooks
from kfin.core.read.facts import ClusterFacts
from kfin.model import JSON, NAMESPACE_CONTROLLER, KubeObject, ResourceType, parse_time
from kfin.util.durations import format_age
from kfin.util.text import counted

FINALIZE_RISK = (
    "forcing it (/finalize) makes the namespace disappear while its objects stay in etcd: invisible "
    "to kubectl, still holding their finalizers, the cloud resources behind them never cleaned up, "
    "and back again if a namespace of the same name is created"
)


def _names_kind(message: str, crd: KubeObject) -> bool:
    """Whether the namespace controller's failure names the CRD's kind ("... conversion webhook for GROUP/VERSION,
    Kind=KIND failed", "failed to list GROUP/VERSION, Kind=KIND"): a conversion that cannot be called stops the
    deletion of every namespace, also one that holds none of its objects, while the watch cache of its
    resources cannot initialize (seen on a real v1.36 control plane)."""
    spec = crd.raw.get("spec") or {}
    kind, group = (spec.get("names") or {}).get("kind"), spec.get("group")
    return bool(
        message and kind and group and re.search(rf"\b{re.escape(group)}/\S+, Kind={re.escape(kind)}\b", message)
    )


def _unread_content(facts: ClusterFacts, namespace: str) -> list[str]:
    """kfin's own failed lists that hide part of a namespace's content: of that namespace, or cluster-wide of a
    namespaced type, each with the server's answer."""
    namespaced = {r.qualified for r in facts.inventory.resources if r.namespaced}
    return [
        f"{f.target}: {f.message}"
        for f in facts.inventory.failures
        if f.what == "list" and (f.target.endswith(f" in namespace {namespace}") or f.target in namespaced)
    ]


def _unexplained(ctx: Context, remaining: list[KubeObject], unread: list[str], failed_content: str) -> Finding:
    """A namespace being deleted whose content kfin could not read whole, or whose controller reports a failure
    none of kfin's causes explains: never "empty", never "wait". UNKNOWN, with what was and was not found."""
    ns = ctx.obj
    kinds = Counter(o.type.qualified for o in remaining)
    evidence = [f"kfin could not list {line}" for line in unread]
    evidence += [f"condition NamespaceDeletionContentFailure: {failed_content}"] if failed_content else []
    evidence += [f"{kind}: {count} (none of it being deleted)" for kind, count in sorted(kinds.items())]
    if failed_content:
        condition = f"the namespace controller fails to delete its content: {failed_content}"
        fix = (
            "deal with what that failure names (kfin knows no cause for it); the namespace controller retries and "
            "carries on once its deletions succeed"
        )
    else:
        condition = f"kfin could not read all of its content ({'; '.join(unread)}): it may not be empty"
        fix = (
            f"read what kfin could not: kubectl get {' '.join(line.split(' ')[0] for line in unread)} -n {ns.name} "
            "(an error there is what holds the namespace)"
        )
    return ctx.finding(condition, Verdict.UNKNOWN, fix=fix, risk=FINALIZE_RISK, evidence=evidence, summary=condition)


# RBAC's refusal of one of the namespace controller's requests, as its NamespaceDeletionContentFailure quotes it:
# apimachinery's NewForbidden of a collection ("RESOURCE is forbidden: ...") around the authorizer's message
# (apiserver's endpoints/handlers/responsewriters/errors.go forbiddenMessage)
RBAC_REFUSAL = re.compile(
    r'(\S+) is forbidden: User "([^"]+)" cannot (\S+) resource "([^"]+)" in API group "([^"]*)"'
    r'(?: in the namespace "([^"]*)"| at the cluster scope)'
)
# the bootstrap policy's role and binding of the namespace controller's ServiceAccount, and the rule it needs on all
# content (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go)
CONTROLLER_ROLE = "system:controller:namespace-controller"
CONTROLLER_RULE = 'apiGroups: ["*"], resources: ["*"], verbs: ["get", "list", "delete", "deletecollection"]'


def forbidden_controller(ctx: Context, failed_content: str) -> Finding | None:
    """A namespace controller that RBAC refuses the deletion (or listing) of the namespace's content, as its
    NamespaceDeletionContentFailure says: STALLED (it runs, and retries, but cannot act until it is granted the right),
    naming the right it lacks and, for its ServiceAccount, the bootstrap ClusterRole and ClusterRoleBinding that give
    it; None when the failure quotes no such refusal."""
    refusals = list(dict.fromkeys(RBAC_REFUSAL.findall(failed_content)))
    if not refusals:
        return None
    rbac = "rbac.authorization.k8s.io"
    missing = [f"{verb} on {qualified}" for qualified, _, verb, _, _, _ in refusals]
    user = refusals[0][1]
    evidence = [f"condition NamespaceDeletionContentFailure: {failed_content}"]
    target = None
    if user == NAMESPACE_CONTROLLER:
        role = ctx.facts.find(rbac, "clusterroles", "", CONTROLLER_ROLE, full=True)
        binding = ctx.facts.find(rbac, "clusterrolebindings", "", CONTROLLER_ROLE, full=True)
        target = role or binding
        evidence += [
            f"{kind} {CONTROLLER_ROLE} was not found"
            for kind, held in (("ClusterRole", role), ("ClusterRoleBinding", binding))
            if held is None
        ]
        rules = (role.raw.get("rules") or []) if role is not None else []
        for _, _, verb, resource, group, _ in refusals if role is not None else []:
            if not any(_allows(rule, verb, group, resource) for rule in rules):
                evidence.append(f'ClusterRole {CONTROLLER_ROLE} grants no {verb} on {resource} (API group "{group}")')
        subjects = (binding.raw.get("subjects") or []) if binding is not None else []
        if binding is not None and not any(
            s.get("kind") == "ServiceAccount"
            and (s.get("namespace"), s.get("name")) == ("kube-system", "namespace-controller")
            for s in subjects
        ):
            evidence.append(
                f"ClusterRoleBinding {CONTROLLER_ROLE} does not bind ServiceAccount kube-system/namespace-controller"
            )
        step = Action(
            None,
            note=f"restore ClusterRole {CONTROLLER_ROLE} (its rule {{{CONTROLLER_RULE}}}) and its ClusterRoleBinding "
            f"{CONTROLLER_ROLE} to ServiceAccount kube-system/namespace-controller, as the bootstrap policy has them "
            "(kube-apiserver puts them back only when it restarts, and not where their annotation "
            'rbac.authorization.kubernetes.io/autoupdate is "false")',
        )
    else:  # kube-controller-manager without --use-service-account-credentials acts as itself
        step = Action(
            None, note=f"grant {user} {', '.join(missing)} in namespace {ctx.obj.name} (a ClusterRole bound to it)"
        )
    condition = (
        f"RBAC forbids the namespace controller ({user}) {', '.join(missing)}: it cannot delete the namespace's "
        "content until it is granted that right"
    )
    return ctx.finding(
        condition,
        Verdict.STALLED,  # it runs and retries, but acts only once someone gives it back its right
        fix=step.text + "; the namespace controller then carries on",
        risk=FINALIZE_RISK,
        evidence=evidence,
        alive=True,
        controller="kube-controller-manager (namespace controller)",
        summary=f"the namespace controller is forbidden {missing[0]} (RBAC), so it cannot delete its content",
        links=[
            Link(
                "forbidden",
                f"the namespace controller may not {', '.join(missing)}",
                target=target,
                actor=None if target is not None else "kube-controller-manager (namespace controller)",
                step=(step,),
            )
        ],
    )


def _allows(rule: JSON, verb: str, group: str, resource: str) -> bool:
    """Whether an RBAC rule grants the verb on the resource of the group."""
    return all(
        wanted in (rule.get(key) or []) or "*" in (rule.get(key) or [])
        for key, wanted in (("verbs", verb), ("apiGroups", group), ("resources", resource))
    )


FAILED_CALL = re.compile(r'failed calling webhook "([^"]+)"')
POLICY_DENIED = re.compile(r"ValidatingAdmissionPolicy '([^']+)'(?: with binding '([^']+)')? denied request")
# kube-controller-manager's namespace controller, with --use-service-account-credentials (kube-system's
# ServiceAccount of that name); what admission sees as request.userInfo.username for its deletions


class Rejecter(Struct):
    """What rejects the namespace controller's deletions: a webhook configuration or an admission policy."""

    target: KubeObject
    why: str
    step: tuple[Action, ...]
    risk: str
    certain: bool = True  # False: a policy kfin could not evaluate, which only may deny (a dry run then decides)

    def link(self) -> Link:
        return Link(
            "webhook" if self.risk == WEBHOOK_RISK else "admission-policy",
            self.why,
            target=self.target,
            step=self.step,
            risk=self.risk,
        )


def deletion_gates(
    facts: ClusterFacts, objects: list[KubeObject], user: str, actor: str, namespace: str | None = None
) -> dict[str, Rejecter]:
    """What rejects the DELETE of the objects by `user` (`actor` in words: the namespace controller, the garbage
    collector), by kfin's rules: each webhook failing closed whose rules match it (by its backend) and each bound
    ValidatingAdmissionPolicy that denies it, evaluated as that user. `namespace`: all of them are in it (the
    namespace controller's), else each is placed by its own."""
    by_place: dict[tuple[ResourceType, str], list[JSON]] = {}
    for obj in objects:
        by_place.setdefault((obj.type, obj.namespace), []).append(obj.meta.get("labels") or {})
    found: dict[str, Rejecter] = {}
    for (rtype, place), labels in by_place.items():
        where = " in the namespace" if namespace else (f" in namespace {place}" if place else "")
        for r in rejecting_webhooks(facts, rtype, "DELETE", namespace or place, labels):
            found.setdefault(
                f"webhook {r.config.uid} {r.hook}",
                Rejecter(
                    r.config,
                    f"webhook {r.hook} of {r.config.type.kind} {r.config.name} rejects every DELETE of "
                    f"{rtype.qualified}{where} (failurePolicy Fail): {r.problem}{r.conditions}",
                    r.step,
                    WEBHOOK_RISK,
                ),
            )
    for denial in denied_deletes(facts, objects, user):
        verb = "denies" if denial.certain else "may deny"
        found[f"policy {denial.policy.uid}"] = Rejecter(
            denial.policy,
            f"ValidatingAdmissionPolicy {denial.policy.name} (binding {denial.binding.name}) {verb} {actor}'s "
            f"DELETE: {denial.message}",
            denial.step,
            POLICY_RISK,
            denial.certain,
        )
    return found


def rejected_deletes(
    facts: ClusterFacts, ns: KubeObject, remaining: list[KubeObject], failed_content: str
) -> list[Rejecter]:
    """What rejects the namespace controller's DELETE of what remains in the namespace: each webhook failing
    closed (by its rules and backend) and each bound ValidatingAdmissionPolicy that denies it (evaluated as that
    controller); and each the controller's failure names ("failed calling webhook NAME", "ValidatingAdmissionPolicy
    'NAME' ... denied request") that kfin cannot place by itself (a backend that answers, but not in time; an
    expression kfin cannot evaluate)."""
    found = deletion_gates(facts, remaining, NAMESPACE_CONTROLLER, "the namespace controller", ns.name)
    for name in FAILED_CALL.findall(failed_content):
        config = hook_named(facts, name)
        if config is None or any(r.target.uid == config.uid and name in r.why for r in found.values()):
            continue
        problem = "the namespace controller's DELETE failed calling it (condition NamespaceDeletionContentFailure)"
        rejection = Rejection(config, name, problem, "")
        found[f"webhook {config.uid} {name}"] = Rejecter(
            config, f"webhook {name} of {config.type.kind} {config.name}: {problem}", rejection.step, WEBHOOK_RISK
        )
    policies = {p.name: p for p in facts.objects(POLICY_GROUP, "validatingadmissionpolicies", full=True) or []}
    for name, binding in POLICY_DENIED.findall(failed_content):
        policy = policies.get(name)
        if policy is None or f"policy {policy.uid}" in found:
            continue
        found[f"policy {policy.uid}"] = Rejecter(
            policy,
            f"ValidatingAdmissionPolicy {name}{f' (binding {binding})' if binding else ''} denies the namespace "
            "controller's DELETE (condition NamespaceDeletionContentFailure)",
            (Action(None, note=f"change ValidatingAdmissionPolicy {name} so that it allows the deletion"),)
            + (
                (
                    Action(
                        f"kubectl delete validatingadmissionpolicybinding {binding}",
                        when="instead, if what it enforces is obsolete",
                    ),
                )
                if binding
                else ()
            ),
            POLICY_RISK,
        )
    return list(found.values())


def unavailable_apiservices(ctx: Context) -> list[tuple[KubeObject, str]]:
    """(APIService, why) of every APIService that is not Available."""
    services = ctx.facts.objects("apiregistration.k8s.io", "apiservices", full=True) or []
    out = []
    for svc in services:
        for cond in (svc.raw.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Available" and cond.get("status") == "False":
                out.append((svc, f"APIService {svc.name} is unavailable ({cond.get('reason')}: {cond.get('message')})"))
    return out


def _served_version(svc: KubeObject) -> str:
    spec = svc.raw.get("spec") or {}
    return f"{spec.get('group')}/{spec.get('version')}"


class DiscoveryFailure(Struct):
    """What keeps the namespace controller's discovery from succeeding now, set against what its condition
    NamespaceDeletionDiscoveryFailure said when it last tried. Discovery errors are not fatal to it: it deletes all
    it can discover and reports what remains, but never removes its finalizer while one fails, and retries with
    backoff (pkg/controller/namespace/deletion/namespaced_resources_deleter.go deleteAllContent; its workqueue's
    rate limiter, 5 ms doubling to 60 s: namespace_controller.go nsControllerRateLimiter)."""

    said: JSON  # the condition when True, else {}
    failing: list[tuple[KubeObject, str]]  # APIServices unavailable now, and why
    unserved: list[str]  # group versions the condition names whose discovery fails for kfin too, no APIService seen
    recovered: list[str]  # for each group version the condition names that answers now: what kfin sees instead

    @property
    def live(self) -> bool:
        return bool(self.failing or self.unserved)

    @property
    def groups(self) -> list[str]:
        return list(dict.fromkeys([_served_version(svc) for svc, _ in self.failing] + self.unserved))

    def said_line(self, facts: ClusterFacts) -> str:
        """The condition as evidence, as of its lastTransitionTime (it changes only when its status does)."""
        since = self.said.get("lastTransitionTime")
        moment = parse_time(since)
        age = f", {format_age((facts.inventory.observed_at - moment).total_seconds())} ago" if moment else ""
        return (
            f"condition NamespaceDeletionDiscoveryFailure: {self.said.get('message')} (True since "
            f"{since or 'an unknown time'}{age})"
        )


# the group versions a discovery failure names ("... server APIs: metrics.k8s.io/v1beta1: stale GroupVersion
# discovery: ...", client-go's ErrGroupDiscoveryFailed)
GROUP_VERSION = re.compile(r"([a-z0-9][-a-z0-9.]*/v[0-9]+(?:(?:alpha|beta)[0-9]+)?): ")


def discovery_failure(ctx: Context, conditions: dict[str, JSON]) -> DiscoveryFailure | None:
    """A Terminating namespace's discovery failure, now and as its condition says; None when neither shows one."""
    facts = ctx.facts
    said = conditions.get("NamespaceDeletionDiscoveryFailure", {})
    said = said if said.get("status") == "True" else {}
    failing = unavailable_apiservices(ctx)
    if not said and not failing:
        return None
    failed_here = [f.target for f in facts.inventory.failures if f.what == "discovery"]
    broken = {_served_version(svc) for svc, _ in failing}
    services = facts.objects("apiregistration.k8s.io", "apiservices", full=True)
    named = list(dict.fromkeys(GROUP_VERSION.findall(str(said.get("message") or ""))))
    unserved, recovered = [], []
    for gv in named:
        if gv in broken:
            continue
        if gv in failed_here:
            unserved.append(gv)
            continue
        group, _, version = gv.rpartition("/")
        svc = next((s for s in services or [] if _served_version(s) == gv), None)
        if services is None:
            recovered.append(f"kfin's own discovery of {gv} succeeds now")
        elif svc is None:
            recovered.append(f"APIService {version}.{group} is gone")
        else:
            available = condition(svc, "Available")
            since = f" since {available['lastTransitionTime']}" if available.get("lastTransitionTime") else ""
            recovered.append(f"APIService {svc.name} is Available again{since}")
    if said and not named and not failing:  # a failure it words otherwise: kfin's own discovery tells
        unserved = failed_here
        recovered = [] if failed_here else ["kfin's own discovery succeeds for every group, and no APIService is down"]
    return DiscoveryFailure(said, failing, unserved, recovered)


def _discovery_fails(ctx: Context, discovery: DiscoveryFailure, content: Finding | None) -> Finding:
    """HOLDING while discovery fails: the namespace controller deletes all it can discover but never finishes. What
    also holds it (`content`: its stuck content, a gate in front of its deletions) is part of the answer, first:
    what bites while it deletes, then what keeps it from finishing."""
    groups = ", ".join(discovery.groups) or "an aggregated API"
    names = [svc.name for svc, _ in discovery.failing]
    if names:
        fix = (
            "repair the APIService's backend, or delete the APIService if its server was uninstalled (kubectl "
            f"delete apiservice {' '.join(names)})"
        )
    else:
        fix = f"find out why discovery of {groups} fails (kubectl get --raw /apis/{discovery.groups[0]})"
    fix += "; the namespace controller retries with backoff (up to a minute apart) and finishes once it succeeds"
    evidence = [why for _, why in discovery.failing] + [
        f"kfin's own discovery of {gv} fails" for gv in discovery.unserved
    ]
    evidence += [discovery.said_line(ctx.facts)] if discovery.said else []
    evidence += [f"yet {line}" for line in discovery.recovered]
    found = ctx.finding(
        f"API discovery of {groups} fails, so the namespace controller cannot finish: it deletes all it can "
        "discover, but keeps the namespace's finalizer until discovery succeeds",
        Verdict.HOLDING,
        fix=fix,
        risk=FINALIZE_RISK,
        evidence=evidence,
        controller="kube-controller-manager (namespace controller)",
        summary=f"discovery of {groups} fails (an unavailable APIService), so the namespace controller cannot finish",
        links=[
            Link(
                "discovery-failure",
                why,
                target=svc,
                step=(
                    Action(None, note=f"repair the backend of APIService {svc.name}"),
                    Action(f"kubectl delete apiservice {svc.name}", when="instead, if its server was uninstalled"),
                ),
            )
            for svc, why in discovery.failing
        ],
    )
    return found if content is None else _and_then(content, found)


def _and_then(content: Finding, discovery: Finding) -> Finding:
    """One answer of what holds the namespace while it deletes (`content`), then of what keeps it from finishing
    (`discovery`): what must be done first speaks for both."""
    return replace(
        content,
        summary=f"{content.summary or content.condition}; and {discovery.summary}",
        condition=f"{content.condition}; and {discovery.condition}",
        fix=f"{content.fix}; and {discovery.fix}",
        evidence=(*content.evidence, *(line for line in discovery.evidence if line not in content.evidence)),
        links=(*content.links, *discovery.links),
        risk="; ".join(dict.fromkeys([content.risk, FINALIZE_RISK])),
        verdict=content.verdict if content.verdict in (Verdict.BLOCKED, Verdict.STALLED) else Verdict.HOLDING,
    )


def _out_of_date(ctx: Context, found: Finding, discovery: DiscoveryFailure, finds: str) -> Finding:
    """A finding of what holds the namespace now, with its NamespaceDeletionDiscoveryFailure that the live cluster
    contradicts: said so, what the controller `finds` when it retries, and nothing planned for what is gone."""
    said = discovery.said_line(ctx.facts)
    return replace(
        found,
        condition=(
            f"{found.condition}: {finds} when it retries; its condition NamespaceDeletionDiscoveryFailure (True "
            f"since {discovery.said.get('lastTransitionTime')}) is out of date ({'; '.join(discovery.recovered)}), "
            "and it has not retried since (it retries with backoff, up to a minute apart)"
        ),
        evidence=(*found.evidence, f"{said}: out of date", *(f"but {line}" for line in discovery.recovered)),
        # the condition is accounted for: it holds nothing now (kfin.core.explain.causes.registry.account_for_evidence)
        detail={
            **found.detail,
            "outOfDate": [f"condition NamespaceDeletionDiscoveryFailure: {discovery.said.get('message')}"],
        },
    )


@explains(
    "namespace",
    Entry("kubernetes", "a namespace until its content is deleted", "kube-controller-manager (namespace controller)"),
    reads=(
        ("apiregistration.k8s.io", "apiservices", EVERYWHERE),
        ("apiextensions.k8s.io", "customresourcedefinitions", EVERYWHERE),
        CONTROLLER_MANAGER_LEASE,
    ),
)
def namespace(ctx: Context) -> Finding:
    """Everything that holds a namespace, not only the first: what keeps the namespace controller from deleting
    its content, what remains stuck in it, and whether its discovery fails now. A condition is what the controller
    saw when it last tried: where the live cluster contradicts it, that is said, and nothing is planned for it."""
    ns = ctx.obj
    conditions = {c.get("type"): c for c in (ns.raw.get("status") or {}).get("conditions") or [] if c.get("type")}
    discovery = discovery_failure(ctx, conditions) if ns.terminating else None
    live = discovery is not None and discovery.live
    content = _content(ctx, conditions, finishes=not live)
    if discovery is not None and live:
        return _discovery_fails(ctx, discovery, content)
    if content is not None:
        if discovery is None:
            return content
        return _out_of_date(ctx, content, discovery, "that is what the namespace controller finds")
    if discovery is None:
        return waiting_on_controller_manager(
            ctx,
            "the namespace is empty",
            risk=FINALIZE_RISK,
            evidence=(),
            summary="waiting for the namespace controller to finalize it",
        )
    found = waiting_on_controller_manager(
        ctx,
        "the namespace is empty",
        risk=FINALIZE_RISK,
        evidence=(),
        summary="empty, and its discovery succeeds again: waiting for the namespace controller to retry (its "
        "condition NamespaceDeletionDiscoveryFailure is out of date)",
        fix="nothing to fix: the namespace controller retries within a minute (its backoff) and removes the "
        "finalizer; if it does not, check kube-controller-manager's logs",
    )
    return _out_of_date(ctx, found, discovery, "the namespace controller finds it so and removes its finalizer")


def _stuck_lines(stuck: list[KubeObject], facts: ClusterFacts, namespace: str) -> list[str]:
    lines = [f"{o.ref} is stuck: {state_line(o, facts)}" for o in stuck[:10]]
    if len(stuck) > 10:
        lines.append(f"... and {counted(len(stuck) - 10, 'more stuck object')} (kfin stuck -n {namespace})")
    return lines


def _with_stuck(found: Finding, stuck: list[KubeObject], facts: ClusterFacts, namespace: str) -> Finding:
    """A finding of what stops the namespace controller, with what else holds the namespace: its content stuck in
    deletion, each linked, so that the plan deals with all of it."""
    linked = {link.target.uid for link in found.links if link.target is not None}
    more = [o for o in stuck if o.uid not in linked]
    return replace(
        found,
        links=(*found.links, *(Link("content", "remains in the namespace, being deleted", target=o) for o in more)),
        evidence=(*found.evidence, *_stuck_lines(more, facts, namespace)),
    )


def _content(ctx: Context, conditions: dict[str, JSON], finishes: bool) -> Finding | None:
    """What holds the namespace besides its discovery: what keeps the namespace controller from deleting its
    content, and what remains of it; None for a Terminating namespace that is empty. `finishes`: nothing else
    keeps the controller from finishing once it is empty."""
    ns, facts = ctx.obj, ctx.facts
    content = facts.everything(ns.name)
    if content is None:
        return ctx.finding(
            "kfin could not list the namespace's content",
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl api-resources --verbs=list --namespaced -o name | xargs -n1 "
            f"kubectl get -n {ns.name}",
            risk=FINALIZE_RISK,
        )
    remaining = [o for o in content if o.namespace == ns.name and o.type.namespaced]
    stuck = [o for o in remaining if o.terminating]
    unlistable = list_failure_causes(facts)
    failure = conditions.get("NamespaceDeletionContentFailure", {})
    failed_content = failure.get("message", "") if failure.get("status") == "True" else ""
    converting = [
        (crd, why)
        for crd, why in failing_conversions(facts)
        if any(target == crd.name or target.startswith(crd.name + " ") for target in unlistable)
        or _names_kind(failed_content, crd)
    ]
    if converting and ns.terminating:
        converts = ctx.finding(
            f"the namespace controller cannot list {', '.join(crd.name for crd, _ in converting)} to delete them: "
            + "; ".join(why for _, why in converting),
            Verdict.HOLDING,
            fix=prose(a for crd, _ in converting for a in conversion_step(crd))
            + "; the namespace controller then carries on",
            risk=FINALIZE_RISK,
            evidence=[why for _, why in converting]
            + ([f"condition NamespaceDeletionContentFailure: {failure.get('message')}"] if failure else []),
            summary=f"{converting[0][1]}, so the namespace controller cannot delete what it converts",
            links=[Link("conversion-failure", why, target=crd, step=conversion_step(crd)) for crd, why in converting],
        )
        return _with_stuck(converts, stuck, facts, ns.name)
    unreadable = unreadable_content(facts, ns.name, failed_content) if ns.terminating else []
    if unreadable:  # objects kube-apiserver cannot read from storage: the controller can never delete them
        return _with_stuck(storage_finding(ctx, unreadable, failed_content, FINALIZE_RISK), stuck, facts, ns.name)
    forbidden = forbidden_controller(ctx, failed_content) if ns.terminating else None
    if forbidden is not None:  # the controller's own report of RBAC's refusal: proof, before any rule or dry run
        return _with_stuck(forbidden, stuck, facts, ns.name)
    rejections = rejected_deletes(facts, ns, remaining, failed_content) if ns.terminating else []
    probed = blocked_content(ctx, remaining, failed_content, FINALIZE_RISK, [r.certain for r in rejections])
    if probed is not None:  # the server's own answer to the controller, over what rules could only suspect
        return _with_stuck(probed, stuck, facts, ns.name)
    if rejections:
        rejected = ctx.finding(
            "; ".join(r.why for r in rejections) + ": the namespace controller cannot delete them",
            Verdict.BLOCKED,
            fix=prose(a for r in rejections for a in r.step) + "; the namespace controller then carries on",
            risk="; ".join(dict.fromkeys([r.risk for r in rejections] + [FINALIZE_RISK])),
            evidence=[r.why for r in rejections]
            + ([f"condition NamespaceDeletionContentFailure: {failed_content}"] if failed_content else []),
            summary=f"{rejections[0].why}, so the namespace controller cannot delete its content",
            links=[r.link() for r in rejections],
        )
        return _with_stuck(rejected, stuck, facts, ns.name)
    unread = _unread_content(facts, ns.name)
    if ns.terminating and (unread or failed_content) and not stuck:
        return _unexplained(ctx, remaining, unread, failed_content)
    if remaining:
        kinds = Counter(o.type.qualified for o in remaining)
        evidence = [f"{kind}: {count}" for kind, count in sorted(kinds.items())]
        evidence += _stuck_lines(stuck, facts, ns.name)
        fix = f"unstick what remains first (kfin stuck -n {ns.name}; kfin explain each)" + (
            "; the namespace goes by itself once it is empty" if finishes else ""
        )
        for ctype in ("NamespaceFinalizersRemaining", "NamespaceContentRemaining", "NamespaceDeletionContentFailure"):
            if conditions.get(ctype, {}).get("status") == "True":
                evidence.append(f"condition {ctype}: {conditions[ctype].get('message')}")
        true = {
            c: conditions[c]
            for c in ("NamespaceDeletionContentFailure", "NamespaceFinalizersRemaining", "NamespaceContentRemaining")
            if conditions.get(c, {}).get("status") == "True"
        }
        first = next(iter(true.values()), None)
        remains = (
            f"{len(remaining)} object{'s remain' if len(remaining) != 1 else ' remains'} ({len(stuck)} terminating)"
        )
        return ctx.finding(
            remains,
            Verdict.HOLDING,
            fix=fix,
            risk=FINALIZE_RISK,
            evidence=evidence,
            summary=first.get("message") if first else remains,
            links=[Link("content", "remains in the namespace, being deleted", target=o) for o in stuck],
        )
    if not ns.terminating:
        return ctx.finding(
            "the namespace is not being deleted",
            Verdict.HOLDING,
            fix="nothing to do: the finalizer acts only once the namespace is deleted",
            risk=FINALIZE_RISK,
        )
    return None


def _unpurged(obj: KubeObject) -> bool:
    """A Terminating namespace with no finalizer left in spec or metadata."""
    return (obj.type.group, obj.type.resource) == ("", "namespaces") and not obj.spec_finalizers


@explains_deletion(
    "namespace purge",
    _unpurged,
    "a namespace until kube-apiserver purges it",
    "kube-apiserver, at a DELETE",
)
def unpurged_namespace(ctx: Context) -> Finding:
    """kube-apiserver's namespace storage purges a namespace at a DELETE once its finalizers are gone, or at the
    /finalize that empties them; the first DELETE only marks it. A namespace whose spec.finalizers were emptied
    (the forum recipe) before it was deleted stays Terminating with nothing left to act: the namespace controller
    never deletes its content either (seen on a real v1.36 control plane)."""
    ns, facts = ctx.obj, ctx.facts
    content = facts.everything(ns.name)
    remaining = [o for o in content or [] if o.namespace == ns.name and o.type.namespaced]
    again = f"kubectl delete namespace {ns.name}"
    if content is None:
        fix = (
            f"delete what is left in it first (kubectl api-resources --verbs=list --namespaced -o name | xargs -n1 "
            f"kubectl get -n {ns.name}: kfin could not list it), then {again} again"
        )
    elif remaining:
        fix = (
            f"delete what is left in it first ({len(remaining)} object{'s' if len(remaining) != 1 else ''}: kfin "
            f"stuck -n {ns.name}), then {again} again; purged now, they would stay stored out of sight"
        )
    else:
        fix = f"{again} again: it is purged at once"
    return ctx.finding(
        "its finalizers were removed before it was deleted, so the namespace controller never acts on it and "
        "kube-apiserver purges it only at another DELETE: nothing will delete it or its content",
        Verdict.HOLDING,
        fix=fix,
        risk=FINALIZE_RISK if remaining or content is None else "none: an empty namespace",
        evidence=[f"{len(remaining)} object{'s' if len(remaining) != 1 else ''} still in it, never deleted"]
        if remaining
        else [],
        summary="no finalizer left, but nothing deletes it until another DELETE",
    )
