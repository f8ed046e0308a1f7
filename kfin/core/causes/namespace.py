"""A namespace's `kubernetes` finalizer: its conditions, its remaining content, unavailable APIServices."""

from __future__ import annotations

import re
from collections import Counter

from msgspec import Struct

from kfin.core.causes.conversion import conversion_step, failing_conversions
from kfin.core.causes.dryrun import blocked_content
from kfin.core.causes.policies import GROUP as POLICY_GROUP
from kfin.core.causes.policies import RISK as POLICY_RISK
from kfin.core.causes.policies import denied_deletes
from kfin.core.causes.registry import (
    CONTROLLER_MANAGER_LEASE,
    EVERYWHERE,
    Action,
    Context,
    Entry,
    Finding,
    Link,
    Verdict,
    explains,
    explains_deletion,
    prose,
    state_line,
    waiting_on_controller_manager,
)
from kfin.core.causes.unreadable import list_failure_causes, storage_finding, unreadable_content
from kfin.core.causes.webhooks import RISK as WEBHOOK_RISK
from kfin.core.causes.webhooks import Rejection, hook_named, rejecting_webhooks
from kfin.core.facts import ClusterFacts
from kfin.model import JSON, NAMESPACE_CONTROLLER, KubeObject, ResourceType

STALE_GROUP = re.compile(r"(\S+): stale GroupVersion discovery")

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
    found = ctx.finding(condition, Verdict.UNKNOWN, fix=fix, risk=FINALIZE_RISK, evidence=evidence)
    found.summary = condition
    return found


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
    found = ctx.finding(
        condition,
        Verdict.STALLED,  # it runs and retries, but acts only once someone gives it back its right
        fix=step.text + "; the namespace controller then carries on",
        risk=FINALIZE_RISK,
        evidence=evidence,
        alive=True,
        controller="kube-controller-manager (namespace controller)",
    )
    found.summary = f"the namespace controller is forbidden {missing[0]} (RBAC), so it cannot delete its content"
    found.links = [
        Link(
            "forbidden",
            f"the namespace controller may not {', '.join(missing)}",
            target=target,
            actor=None if target is not None else "kube-controller-manager (namespace controller)",
            step=(step,),
        )
    ]
    return found


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
    ns, facts = ctx.obj, ctx.facts
    conditions = {c.get("type"): c for c in (ns.raw.get("status") or {}).get("conditions") or [] if c.get("type")}
    discovery = conditions.get("NamespaceDeletionDiscoveryFailure", {})
    broken = unavailable_apiservices(ctx)
    failed_groups = [f.target for f in facts.inventory.failures if f.what == "discovery"]
    if discovery.get("status") == "True" or (broken and ns.terminating):
        groups = STALE_GROUP.findall(discovery.get("message", "")) or failed_groups
        names = [svc.name for svc, _ in broken]
        fix = (
            "repair the APIService's backend, or delete the APIService if its server was uninstalled (kubectl "
            f"delete apiservice {' '.join(names) if names else '<name>'}); the namespace controller then carries on"
        )
        evidence = [why for _, why in broken] + (
            [f"condition NamespaceDeletionDiscoveryFailure: {discovery.get('message')}"] if discovery else []
        )
        found = ctx.finding(
            f"API discovery of {', '.join(groups) or 'an aggregated API'} fails, so the namespace "
            "controller stops before deleting anything in the namespace",
            Verdict.HOLDING,
            fix=fix,
            risk=FINALIZE_RISK,
            evidence=evidence,
            controller="kube-controller-manager (namespace controller)",
        )
        found.summary = (
            f"discovery of {', '.join(groups) or 'an aggregated API'} fails (an unavailable APIService), "
            "so the namespace controller stops before deleting anything"
        )
        found.links = [
            Link(
                "discovery-failure",
                why,
                target=svc,
                step=(
                    Action(None, note=f"repair the backend of APIService {svc.name}"),
                    Action(f"kubectl delete apiservice {svc.name}", when="instead, if its server was uninstalled"),
                ),
            )
            for svc, why in broken
        ]
        return found
    content = facts.everything(ns.name)
    if content is None:
        return ctx.finding(
            "kfin could not list the namespace's content",
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl api-resources --verbs=list --namespaced -o name | xargs -n1 "
            f"kubectl get -n {ns.name}",
            risk=FINALIZE_RISK,
        )
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
        found = ctx.finding(
            f"the namespace controller cannot list {', '.join(crd.name for crd, _ in converting)} to delete them: "
            + "; ".join(why for _, why in converting),
            Verdict.HOLDING,
            fix=prose(a for crd, _ in converting for a in conversion_step(crd))
            + "; the namespace controller then carries on",
            risk=FINALIZE_RISK,
            evidence=[why for _, why in converting]
            + ([f"condition NamespaceDeletionContentFailure: {failure.get('message')}"] if failure else []),
        )
        found.summary = f"{converting[0][1]}, so the namespace controller cannot delete what it converts"
        found.links = [
            Link("conversion-failure", why, target=crd, step=conversion_step(crd)) for crd, why in converting
        ]
        return found
    unreadable = unreadable_content(facts, ns.name, failed_content) if ns.terminating else []
    if unreadable:  # objects kube-apiserver cannot read from storage: the controller can never delete them
        return storage_finding(ctx, unreadable, failed_content, FINALIZE_RISK)
    forbidden = forbidden_controller(ctx, failed_content) if ns.terminating else None
    if forbidden is not None:  # the controller's own report of RBAC's refusal: proof, before any rule or dry run
        return forbidden
    remaining = [o for o in content if o.namespace == ns.name and o.type.namespaced]
    rejections = rejected_deletes(facts, ns, remaining, failed_content) if ns.terminating else []
    probed = blocked_content(ctx, remaining, failed_content, FINALIZE_RISK, [r.certain for r in rejections])
    if probed is not None:  # the server's own answer to the controller, over what rules could only suspect
        return probed
    if rejections:
        found = ctx.finding(
            "; ".join(r.why for r in rejections) + ": the namespace controller cannot delete them",
            Verdict.BLOCKED,
            fix=prose(a for r in rejections for a in r.step) + "; the namespace controller then carries on",
            risk="; ".join(dict.fromkeys([r.risk for r in rejections] + [FINALIZE_RISK])),
            evidence=[r.why for r in rejections]
            + ([f"condition NamespaceDeletionContentFailure: {failed_content}"] if failed_content else []),
        )
        found.summary = f"{rejections[0].why}, so the namespace controller cannot delete its content"
        found.links = [r.link() for r in rejections]
        return found
    unread = _unread_content(facts, ns.name)
    stuck = [o for o in remaining if o.terminating]
    if ns.terminating and (unread or failed_content) and not stuck:
        return _unexplained(ctx, remaining, unread, failed_content)
    if remaining:
        kinds = Counter(o.type.qualified for o in remaining)
        evidence = [f"{kind}: {count}" for kind, count in sorted(kinds.items())]
        evidence += [f"{o.ref} is stuck: {state_line(o, facts)}" for o in stuck[:10]]
        if len(stuck) > 10:
            evidence.append(f"... and {len(stuck) - 10} more stuck objects (kfin stuck -n {ns.name})")
        fix = (
            f"unstick what remains first (kfin stuck -n {ns.name}; kfin explain each); the namespace goes "
            "by itself once it is empty"
        )
        for ctype in ("NamespaceFinalizersRemaining", "NamespaceContentRemaining", "NamespaceDeletionContentFailure"):
            if conditions.get(ctype, {}).get("status") == "True":
                evidence.append(f"condition {ctype}: {conditions[ctype].get('message')}")
        found = ctx.finding(
            f"{len(remaining)} object{'s' if len(remaining) != 1 else ''} remain ({len(stuck)} terminating)",
            Verdict.HOLDING,
            fix=fix,
            risk=FINALIZE_RISK,
            evidence=evidence,
        )
        true = {
            c: conditions[c]
            for c in ("NamespaceDeletionContentFailure", "NamespaceFinalizersRemaining", "NamespaceContentRemaining")
            if conditions.get(c, {}).get("status") == "True"
        }
        first = next(iter(true.values()), None)
        found.summary = first.get("message") if first else found.condition
        found.links = [Link("content", "remains in the namespace, being deleted", target=o) for o in stuck]
        return found
    if not ns.terminating:
        return ctx.finding(
            "the namespace is not being deleted",
            Verdict.HOLDING,
            fix="nothing to do: the finalizer acts only once the namespace is deleted",
            risk=FINALIZE_RISK,
        )
    return waiting_on_controller_manager(
        ctx,
        "the namespace is empty",
        risk=FINALIZE_RISK,
        evidence=(),
        summary="waiting for the namespace controller to finalize it",
    )


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
    found = ctx.finding(
        "its finalizers were removed before it was deleted, so the namespace controller never acts on it and "
        "kube-apiserver purges it only at another DELETE: nothing will delete it or its content",
        Verdict.HOLDING,
        fix=fix,
        risk=FINALIZE_RISK if remaining or content is None else "none: an empty namespace",
        evidence=[f"{len(remaining)} object{'s' if len(remaining) != 1 else ''} still in it, never deleted"]
        if remaining
        else [],
    )
    found.summary = "no finalizer left, but nothing deletes it until another DELETE"
    return found
