"""Asking the server, as the actor who must act: where a deletion needs writes that have not happened (the
namespace controller's DELETE of what remains in a namespace, the garbage collector's of an owner's dependents,
and its patches that release them from an owner deleted with orphaning,
a finalizer's controller's removal of it, the user's own DELETE), kfin sends the same write as a dry run
(dryRun=All, stored nowhere: kfin.api.dryrun) and reads the answer. Admission webhooks, ValidatingAdmissionPolicies
(whose CEL may look at who asks), RBAC and storage answer it as they would the real write; kfin's rules alone cannot
see all of that. A rejection becomes a Refusal that names the object behind it and its fix.

Sent as the actor (impersonated) when kfin's user may impersonate it, else as kfin's user: then only what answers
everyone alike (a webhook that cannot be called, a storage error) is taken as the actor's answer; the rest is
evidence only. A few dry runs per explanation (MOST_TYPES, MOST_DEPENDENTS), each answered once per scan
(Facts.dry_run); none from a snapshot or with --no-dry-run.
"""

from __future__ import annotations

import re

from msgspec import Struct
from msgspec.structs import replace

from kfin.core.explain.causes.mutating import putting_back, said
from kfin.core.explain.causes.registry import (
    GATES,
    Action,
    Context,
    Finding,
    Link,
    LinkKind,
    Verdict,
    checks_with_server,
    prose,
)
from kfin.core.explain.causes.webhooks import RISK as WEBHOOK_RISK
from kfin.core.explain.causes.webhooks import hook_named, service_problem
from kfin.core.read.facts import ClusterFacts
from kfin.model import (
    GARBAGE_COLLECTOR,
    JSON,
    NAMESPACE_CONTROLLER,
    Answer,
    KubeObject,
    ResourceType,
    Write,
    metadata_patch,
)

MOST_TYPES = 4  # dry-run DELETEs of a namespace's content: of this many remaining types,
MOST_PER_TYPE = 3  # this many objects each (a namespace is made with two ConfigMaps of the control plane's)
MOST_DEPENDENTS = 3  # the garbage collector's DELETEs of an owner's blocking dependents
POLICY_GROUP = "admissionregistration.k8s.io"
DENIED_BY_HOOK = re.compile(r'admission webhook "([^"]+)" denied the request:?\s*(.*)', re.S)
FAILED_HOOK = re.compile(r'failed calling webhook "([^"]+)"')
DENIED_BY_POLICY = re.compile(
    r"ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request:?\s*(.*)", re.S
)
# a MutatingAdmissionPolicy that fails closed (its CEL does not evaluate, its patch does not apply), as v1.36.2
# answers: 403 Invalid, naming no kind
FAILED_MUTATING_POLICY = re.compile(r"^policy '([^']+)' with binding '([^']+)' denied request:?\s*(.*)", re.S)
STORAGE = re.compile(r"unable to transform|storage|decrypt|etcd", re.I)


class Refusal(Struct):
    """A dry run the server rejected: what rejects it (in a sentence), the object behind it, and the fix."""

    write: Write
    answer: Answer
    why: str
    kind: LinkKind  # webhook, admission-policy, forbidden, storage, namespace-terminating, rejected
    target: KubeObject | None
    step: tuple[Action, ...]
    risk: str | None = None
    as_actor: bool = True  # the answer is the actor's (sent as it, or one that answers everyone alike)

    @property
    def evidence(self) -> str:
        return evidence(self.write, self.answer)

    def link(self) -> Link:
        return Link(self.kind, self.why, target=self.target, step=self.step, risk=self.risk, possible=not self.as_actor)


def evidence(write: Write, answer: Answer) -> str:
    """The dry run in a line: what was sent, as whom, and what the server answered."""
    if answer.sent_as:
        who = f"as {answer.sent_as} (impersonated)"
    elif write.actor:
        who = f"as kfin's user (it may not impersonate {write.actor})"
    else:
        who = "as kfin's user"
    said = "accepted" if answer.accepted else f"{answer.code} {answer.reason}: {answer.message}".strip()
    return f"dry run (dryRun=All) of {write.shown} {who}: {said}"


def not_sent(facts: ClusterFacts) -> str:
    """Why no dry run was sent, in a phrase."""
    if facts.kube is None:
        return "a snapshot has no server to ask: no dry run was sent"
    if not facts.dry_runs_allowed:
        return "no dry run was sent (--no-dry-run)"
    return "no dry run was sent (the server could not be asked, or kfin's limit of dry runs per scan was reached)"


# The RBAC authorizer's refusal (k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go, forbiddenMessage):
# `configmaps "held" is forbidden: User "u" cannot patch resource "configmaps" in API group "" in the namespace "ns"`
RBAC_REFUSED = re.compile(r'cannot (\w+) resource "([^"]+)" in API group "([^"]*)"')


def refusal(facts: ClusterFacts, write: Write) -> tuple[Answer | None, Refusal | None]:
    """(the answer, its Refusal when the server rejected the write); (None, None) when no dry run was sent."""
    answer = facts.dry_run(write)
    if answer is None or answer.accepted:
        return answer, None
    return answer, _refusal(facts, write, answer)


def _refusal(facts: ClusterFacts, write: Write, answer: Answer) -> Refusal | None:
    """What the rejection means, from the server's Status; None for an answer that says nothing of the write
    (the object is gone, it changed since, the server was busy)."""
    actor = write.actor or "you"
    as_actor = answer.sent_as is not None or write.actor is None
    message = answer.message
    verb = (
        "DELETE" if write.verb == "delete" else "UPDATE" if write.patch_type != "json" else "removal of the finalizer"
    )
    failed = FAILED_HOOK.search(message)
    denied = DENIED_BY_HOOK.search(message)
    if failed or denied:
        name = (failed or denied).group(1)  # type: ignore[union-attr]
        config = hook_named(facts, name)
        holder = f" of {config.type.kind} {config.name}" if config is not None else ""
        if failed:  # the backend cannot be reached: it answers everyone alike
            why = f"webhook {name}{holder} rejects the {verb} of {write.rtype.qualified} (failing closed): {message}"
            problem = service_problem(facts, name)  # why, as its configuration shows
            why += f" ({problem})" if problem else ""
            step: tuple[Action, ...] = (Action(None, note=f"restore the backend of webhook {name}"),)
            if config is not None:
                delete = f"kubectl delete {config.type.kind.lower()} {config.name}"
                step += (Action(delete, when="instead, if its operator was uninstalled"),)
            return Refusal(
                write, answer, why, kind="webhook", target=config, step=step, risk=WEBHOOK_RISK, as_actor=True
            )
        why = f"webhook {name}{holder} denies the {verb} of {write.rtype.qualified} by {actor}: {denied.group(2)}"  # type: ignore[union-attr]
        step = (
            Action(
                None,
                note=f"change what webhook {name} enforces (its operator's configuration) so that it allows the {verb}",
            ),
        )
        if config is not None:
            step += (Action(f"kubectl delete {config.type.kind.lower()} {config.name}", when="instead"),)
        return Refusal(
            write, answer, why, kind="webhook", target=config, step=step, risk=WEBHOOK_RISK, as_actor=as_actor
        )
    policy_denial = DENIED_BY_POLICY.search(message)
    if policy_denial:
        policy_name, binding, said = policy_denial.groups()
        return _policy_refusal(
            facts,
            write,
            answer,
            as_actor,
            "ValidatingAdmissionPolicy",
            policy_name,
            binding,
            why=f"denies the {verb} of {write.rtype.qualified} by {actor}: {said}",
            change=f"change ValidatingAdmissionPolicy {policy_name} (or its binding {binding}) so that it allows "
            f"the {verb} by {actor}",
            what="what it enforces",
        )
    failed_policy = FAILED_MUTATING_POLICY.search(message)
    if failed_policy:
        policy_name, binding, said = failed_policy.groups()
        return _policy_refusal(
            facts,
            write,
            answer,
            as_actor,
            "MutatingAdmissionPolicy",
            policy_name,
            binding,
            why=f"fails closed on the {verb} of {write.rtype.qualified}: {said}",
            change=f"repair MutatingAdmissionPolicy {policy_name} so that its mutation applies",
            what="what it does",
        )
    if answer.reason == "NamespaceTerminating" or "because it is being terminated" in message:
        why = f"the {verb} would create content in a namespace being deleted: {message}"
        first = (Action(None, note="let the namespace go first"),)
        return Refusal(
            write, answer, why, kind="namespace-terminating", target=None, step=first, risk=None, as_actor=True
        )
    if answer.code == 403:
        if not as_actor:  # kfin's user may not do it: nothing said of the actor
            return None
        resource = write.rtype.qualified
        where = f" in namespace {write.namespace}" if write.namespace else ""
        why = f"{actor} may not {write.verb} {resource}{where} (RBAC): {message}"
        step = (
            Action(None, note=f"grant {actor} {write.verb} on {resource}{where} (a Role or ClusterRole bound to it)"),
        )
        return Refusal(write, answer, why, kind="forbidden", target=None, step=step, risk=None, as_actor=True)
    if answer.code >= 500 and STORAGE.search(message):
        why = f"the server cannot read {write.rtype.qualified}/{write.name} from its storage: {message}"
        step = (
            Action(
                None,
                note=f"repair what the server cannot read ({write.rtype.qualified}/{write.name}: its encryption key, "
                "or etcd); until then nothing deletes it",
            ),
        )
        return Refusal(write, answer, why, kind="storage", target=None, step=step, risk=None, as_actor=True)
    if answer.code in (404, 409, 422, 429) or answer.code >= 500:
        return None  # gone, changed since, or the server was busy: nothing about the write itself
    why = f"the server rejects the {verb} of {write.rtype.qualified}/{write.name}: {message}"
    said = (Action(None, note=f"deal with what the server says ({message})"),)
    return Refusal(write, answer, why, kind="rejected", target=None, step=said, risk=None, as_actor=as_actor)


def _policy_refusal(
    facts: ClusterFacts,
    write: Write,
    answer: Answer,
    as_actor: bool,
    kind: str,
    name: str,
    binding: str,
    *,
    why: str,
    change: str,
    what: str,
) -> Refusal:
    """An admission policy's refusal, naming it and its binding: change the policy, or unbind it instead."""
    plural = {
        "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
        "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
    }
    policy = facts.find(POLICY_GROUP, plural[kind], "", name, full=True)
    step = (
        Action(None, note=change),
        Action(f"kubectl delete {kind.lower()}binding {binding}", when=f"instead, if {what} is obsolete"),
    )
    risk = f"changing or unbinding the policy lifts {what} for every request it matches"
    return Refusal(
        write,
        answer,
        f"{kind} {name} (binding {binding}) {why}",
        kind="admission-policy",
        target=policy,
        step=step,
        risk=risk,
        as_actor=as_actor,
    )


def content_deletions(facts: ClusterFacts, namespace: KubeObject, content: list[KubeObject]) -> list[Refusal]:
    """The namespace controller's DELETE (propagationPolicy Background, as it sends it) of what remains, as the
    controller: up to MOST_PER_TYPE objects not yet being deleted of each of MOST_TYPES types, newest first (what a
    namespace is made with, its kube-root-ca.crt and default ServiceAccount, is the oldest), a type's first rejection
    enough. What it cannot delete."""
    by_type: dict[ResourceType, list[KubeObject]] = {}
    for obj in content:
        if obj.namespace == namespace.name and obj.type.namespaced and not obj.terminating:
            by_type.setdefault(obj.type, []).append(obj)
    out = []
    for rtype, objects in list(by_type.items())[:MOST_TYPES]:
        newest = sorted(objects, key=_age_order, reverse=True)
        for obj in newest[:MOST_PER_TYPE]:
            options = {"propagationPolicy": "Background"}
            _, refused = refusal(facts, Write.delete(rtype, obj.namespace, obj.name, options, NAMESPACE_CONTROLLER))
            if refused is not None:
                out.append(refused)
                break
    return out


def _age_order(obj: KubeObject) -> tuple[str, int]:
    """Newer last: by creation, then by resourceVersion (an etcd revision as kube-apiserver's storage gives it)
    within the second a timestamp resolves."""
    version = str(obj.meta.get("resourceVersion") or "")
    return (str(obj.meta.get("creationTimestamp") or ""), int(version) if version.isdigit() else 0)


def dependents_deletions(facts: ClusterFacts, dependents: list[KubeObject]) -> list[Refusal]:
    """The garbage collector's DELETE of an owner's blocking dependents not yet being deleted (Foreground, as it
    deletes the dependents of an owner deleted in the foreground), as the garbage collector."""
    out = []
    for obj in [d for d in dependents if not d.terminating][:MOST_DEPENDENTS]:
        options = {"propagationPolicy": "Foreground"}
        write = Write.delete(obj.type, obj.namespace or None, obj.name, options, GARBAGE_COLLECTOR)
        _, refused = refusal(facts, write)
        if refused is not None:
            out.append(refused)
    return out


def orphaning(
    facts: ClusterFacts, owner: KubeObject, dependents: list[KubeObject]
) -> list[tuple[Write, Answer, Refusal | None]]:
    """The garbage collector's release of the dependents of an owner deleted with propagationPolicy Orphan, as it
    (kube-controller-manager's garbagecollector.go orphanDependents and patch.go): a strategic merge patch of each that
    deletes its ownerReference to the owner by uid (`$patch: delete`), the dependent's uid in it as a precondition;
    where the type takes none (a custom resource: 415), a JSON merge patch of its ownerReferences without that one,
    guarded by its resourceVersion. Admission sees an UPDATE. Of MOST_DEPENDENTS of them: each write sent, its answer
    and its Refusal when rejected; none when no dry run was sent."""
    out = []
    for obj in dependents[:MOST_DEPENDENTS]:
        namespace = obj.namespace or None
        released = {"metadata": {"uid": obj.uid, "ownerReferences": [{"$patch": "delete", "uid": owner.uid}]}}
        write = Write.merge_patch(obj.type, namespace, obj.name, released, GARBAGE_COLLECTOR, strategic=True)
        answer, refused = refusal(facts, write)
        if answer is not None and answer.code == 415:  # not a built-in type: no strategic merge patch
            whole = facts.whole(obj)
            if whole is None:
                continue
            meta = whole.get("metadata") or {}
            kept = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != owner.uid]
            merged = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "ownerReferences": kept or None}}
            write = Write.merge_patch(obj.type, namespace, obj.name, merged, GARBAGE_COLLECTOR, strategic=False)
            answer, refused = refusal(facts, write)
        if answer is not None:
            out.append((write, answer, refused))
    return out


def finalizer_removal(
    facts: ClusterFacts, obj: KubeObject, finalizer: str, account: str
) -> tuple[list[tuple[Write, Answer]], Refusal | None]:
    """Its controller's removal of the finalizer, as the ServiceAccount `account` ("namespace/name") it runs as: a
    JSON Patch guarded by a `test` of the finalizers as read; when RBAC forbids that patch, the UPDATE of the whole
    object without it (guarded by its resourceVersion), since a controller may remove it either way and RBAC grants
    the two verbs apart (admission answers both alike: an UPDATE). (each write sent and its answer, the Refusal of
    the last), no writes when none was sent."""
    if finalizer not in obj.finalizers:
        return [], None
    namespace, _, name = account.partition("/")
    actor = f"system:serviceaccount:{namespace}:{name}"
    ops: list[JSON] = [
        {"op": "test", "path": "/metadata/finalizers", "value": obj.finalizers},
        {"op": "remove", "path": f"/metadata/finalizers/{obj.finalizers.index(finalizer)}"},
    ]
    write = Write.patch(obj.type, obj.namespace or None, obj.name, ops, actor)
    answer, refused = refusal(facts, write)
    if answer is None:
        return [], None
    sent = [(write, answer)]
    if refused is None or refused.kind != "forbidden":
        return sent, refused
    whole = facts.whole(obj)
    if whole is None or finalizer not in ((whole.get("metadata") or {}).get("finalizers") or []):
        return sent, None  # a forbidden patch alone says nothing: the controller may update instead
    after = {**whole, "metadata": dict(whole["metadata"])}
    after["metadata"]["finalizers"] = [f for f in after["metadata"]["finalizers"] if f != finalizer]
    after["metadata"].pop("managedFields", None)
    update = Write.update(obj.type, obj.namespace or None, obj.name, after, actor)
    answer, refused = refusal(facts, update)
    return (sent + [(update, answer)], refused) if answer is not None else (sent, None)


def controller_removal(
    ctx: Context,
    found: Finding,
    account: str,
    runs: str,
    target: KubeObject | None,
    *,
    forbidden: str | None = None,
) -> Finding:
    """A running controller's removal of its finalizer, asked of the server as its ServiceAccount `account`
    ("namespace/name"), where kfin's rules see nothing in its way (`found`: their answer, WAITING; `runs`: what runs,
    in words; `target`: its workload or Pod). The answer decides (answered): a rejection as the controller by a
    webhook or an admission policy (one whose CEL asks who sends the request, which kfin's rules cannot know) is
    BLOCKED with what rejects it, as a gate; by RBAC (of both a patch and an update), STALLED with the grant it
    lacks (`forbidden`: its summary, when not the custom cause's); accepted with the finalizer still in the object
    returned, BLOCKED by what puts it back at admission. Sent as kfin's user (who may not impersonate the
    controller), a rejection that depends on who asks is evidence only."""
    obj = ctx.obj
    if found.verdict != Verdict.WAITING or not obj.terminating or ctx.location != "metadata.finalizers":
        return found
    sent, refused = finalizer_removal(ctx.facts, obj, ctx.finalizer, account)
    if not sent:
        return found  # no dry run: what gates it is judged from configuration (kfin.core.explain.causes.registry)
    if refused is not None and refused.as_actor and refused.kind == "forbidden":
        said = [evidence(w, a) for w, a in sent]
        return _forbidden(ctx, found, refused, said, account, runs, target, forbidden)
    gates = [link for gate in GATES for link in gate(obj, ctx.facts) if link.gates(ctx.finalizer)]
    return answered(obj, found, sent, refused, gates, ctx.facts)


def own_removal(obj: KubeObject, finalizer: str) -> Write:
    """kfin's own removal of the finalizer, the JSON Patch kfin remove sends (the uid and the finalizers as read
    tested, then the removal), as kfin's user."""
    ops = metadata_patch(obj.uid, obj.finalizers, [finalizer])
    return Write.patch(obj.type, obj.namespace or None, obj.name, ops)


@checks_with_server
def removal_checked(obj: KubeObject, finding: Finding, gates: list[Link], facts: ClusterFacts) -> Finding:
    """A finding not yet answered whose removal a gate judged from configuration rejects, or whose plan has kfin's
    removal in it (ORPHANED; UNKNOWN or STALLED, after a check or instead of a fix): the dry run of kfin's own
    removal, as kfin's user, decides (answered). Where none can be sent, or its answer says nothing of the write,
    the evidence says so and the gates stand as judged."""
    if finding.answered is not None or finding.finalizer not in obj.finalizers:
        return finding
    gating = [link for link in gates if link.gates(finding.finalizer)]
    if not gating and not finding.remove_command:
        return finding
    write = own_removal(obj, finding.finalizer)
    answer, refused = refusal(facts, write)
    if answer is None:
        return _judged(finding, not_sent(facts)) if gating else finding
    if refused is not None and refused.kind == "forbidden":  # kfin's user may not: nothing said of the removal
        finding = needs_someone_who_may(finding, write, answer)
        refused = None
    finding = answered(obj, finding, [(write, answer)], refused, gating, facts)
    if finding.answered is None and gating:
        return _judged(finding, "the dry run's answer says nothing of the removal")
    return finding


def _judged(finding: Finding, why: str) -> Finding:
    """The finding, saying that its gates stand as judged from configuration alone, and why."""
    return replace(finding, evidence=(*finding.evidence, f"judged from configuration alone: {why}"))


def answered(
    obj: KubeObject,
    found: Finding,
    sent: list[tuple[Write, Answer]],
    refused: Refusal | None,
    gates: list[Link],
    facts: ClusterFacts,
) -> Finding:
    """The finding as the server answered the dry run of its removal (`sent`: each write and its answer, the last
    one deciding; `gates`: those judged from configuration): rejected (as the actor), BLOCKED by what rejects it;
    accepted with the finalizer still in the object returned, BLOCKED by what puts it back; accepted and gone, the
    removal works, whatever the configuration suggested. Any other answer is evidence only."""
    said_lines = [evidence(write, answer) for write, answer in sent]
    write, answer = sent[-1]
    finalizer = found.finalizer
    if refused is not None and refused.as_actor:
        link = refused.link()
        link.family = "admission-policy" if refused.kind == "admission-policy" else None
        link.finalizers = (finalizer,)
        return _blocked_finding(replace(found, answered="rejected"), [link], link.why, said_lines)
    if answer.keeps(finalizer):
        return _kept(obj, replace(found, answered="kept"), write, said_lines, facts)
    if not (answer.accepted and answer.finalizers is not None):
        return replace(found, evidence=(*found.evidence, *said_lines))
    no_gate = [
        f"{link.target.type.kind} {link.target.name} matches the removal, and the server accepted it: no gate"
        for link in gates
        if link.target is not None
    ]
    return replace(found, answered="removed", evidence=(*found.evidence, *said_lines, *no_gate))


def _kept(obj: KubeObject, found: Finding, write: Write, said_lines: list[str], facts: ClusterFacts) -> Finding:
    """The server accepts the removal, but the object it returns still holds the finalizer: admission puts it
    back. BLOCKED, naming what does (kfin.core.explain.causes.mutating); the removal planned (kfin's, where its
    controller is gone) comes once that lets go."""
    finalizer = found.finalizer
    found_back = putting_back(facts, obj, finalizer, write.actor)
    named = [p for p in found_back if p.certain] or found_back
    then = (Action(found.remove_command, when="then, once the server no longer puts it back"),)
    links = [p.link(finalizer, then if found.remove_command else ()) for p in named]
    why = f"the server accepts the removal of {finalizer} but puts it back at admission: {said(found_back, finalizer)}"
    if not links:
        links = [
            Link(
                "rejected",
                why,
                step=(Action(None, note=f"find what puts {finalizer} back at admission (the API server's audit log)"),),
                finalizers=(finalizer,),
            )
        ]
    also = [f"also called on the UPDATE: {p.named} ({p.how})" for p in found_back if p not in named]
    returned = f"the object it returned still holds {finalizer}"
    return _blocked_finding(found, links, why, [*said_lines, returned, *also])


def _blocked_finding(found: Finding, links: list[Link], why: str, said_lines: list[str]) -> Finding:
    """BLOCKED by what the server's answer names (`links`), with the dry runs as evidence."""
    return replace(
        found,
        evidence=(f"before: {found.verdict.value}: {found.condition}", *found.evidence, *said_lines),
        verdict=Verdict.BLOCKED,
        condition=why,
        summary=f"{found.finalizer} cannot be removed: {links[0].why}",
        family=links[0].family or found.family,
        fix=prose(action for link in links for action in link.step) or found.fix,
        risk="; ".join(dict.fromkeys(filter(None, [*(link.risk for link in links), found.risk]))),
        links=tuple(links),
        remove_command=None,
    )


def _forbidden(
    ctx: Context,
    found: Finding,
    refused: Refusal,
    said: list[str],
    account: str,
    runs: str,
    target: KubeObject | None,
    summary: str | None,
) -> Finding:
    """The controller runs, but the server (RBAC) refuses its ServiceAccount the removal, patched or updated: the grant
    it lacks, in the custom cause's words (kfin.core.explain.causes.custom.forbidden_finding), the answers the proof."""
    resource = ctx.obj.type
    rule = f'apiGroups: ["{resource.group}"], resources: ["{resource.resource}"], verbs: ["get", "patch", "update"]'
    grant = f"grant ServiceAccount {account} update and patch on {resource.qualified}"
    who = f"{target.type.kind} {target.namespace}/{target.name}" if target is not None else f"ServiceAccount {account}"
    return ctx.finding(
        f"its controller runs ({runs}) but is forbidden to update {resource.qualified}: the server refuses "
        f"ServiceAccount {account} the removal of {ctx.finalizer}, patched or updated ({refused.answer.message})",
        Verdict.STALLED,  # it runs, but nothing changes until someone grants it the right
        fix=f"{grant} (a rule {{{rule}}}, bound to it); it then removes the finalizer",
        risk=found.risk,
        evidence=[f"before: {found.verdict.value}: {found.condition}", *found.evidence, *said],
        alive=True,
        controller=found.controller,
        summary=summary or f"{ctx.finalizer} ({found.controller} runs but is forbidden to update it)",
        detail={"forbidden": True, "serviceAccount": account, "rule": rule},
        links=[
            Link(
                "forbidden",
                f"{who} may not update {resource.qualified}",
                target=target,
                step=(Action(None, note=f"{grant} ({rule})"),),
            )
        ],
    )


def needs_someone_who_may(finding: Finding, write: Write, answer: Answer) -> Finding:
    """The server's RBAC refused kfin's user the dry run of its own removal: each step that runs that removal says
    who must run it. Only from the authorizer's own words (`cannot VERB resource "R" in API group "G"`): a refusal
    that does not say what the user may not do names no one."""
    denied = RBAC_REFUSED.search(answer.message)
    if denied is None or not finding.remove_command:
        return finding
    verb, resource, group = denied.groups()
    where = f" in namespace {write.namespace}" if write.namespace else ""
    qualified = f"{resource}.{group}" if group else resource
    who = f"needs someone who may {verb} {qualified}{where} (the server refused you its dry run)"
    links = tuple(
        replace(
            link,
            step=tuple(
                replace(a, note=f"{a.note}; {who}" if a.note else who) if a.command == finding.remove_command else a
                for a in link.step
            ),
        )
        for link in finding.links
    )
    return replace(finding, links=links)


def own_deletion(facts: ClusterFacts, obj: KubeObject) -> tuple[Answer | None, Refusal | None]:
    """The user's own DELETE of the object (Background propagation, kubectl's default), as kfin's user."""
    return refusal(facts, Write.delete(obj.type, obj.namespace or None, obj.name, {"propagationPolicy": "Background"}))


def blocked_content(
    ctx: Context, content: list[KubeObject], failed_content: str, risk: str, predicted: list[bool]
) -> Finding | None:
    """A Terminating namespace whose content the namespace controller cannot delete, by the dry runs of its DELETEs
    as the controller: BLOCKED, naming what rejects them; None when none is rejected as the controller, or when
    kfin's rules already proved what does (`predicted`: whether each of their answers is certain; one that only may
    deny, a policy kfin could not evaluate, is settled by the dry run)."""
    if not ctx.obj.terminating or any(predicted):
        return None
    failed = [f"condition NamespaceDeletionContentFailure: {failed_content}"] if failed_content else []
    return _blocked(
        ctx,
        content_deletions(ctx.facts, ctx.obj, content),
        "the namespace controller",
        "its content",
        risk,
        failed,
    )


def blocked_dependents(ctx: Context, dependents: list[KubeObject], risk: str, predicted: list[bool]) -> Finding | None:
    """An owner deleted in the foreground whose blocking dependents the garbage collector cannot delete, by the dry
    runs of its DELETEs as the garbage collector: BLOCKED, naming what rejects them; None as blocked_content."""
    if not ctx.obj.terminating or any(predicted):
        return None
    return _blocked(
        ctx, dependents_deletions(ctx.facts, dependents), "the garbage collector", "its blocking dependents", risk, []
    )


def blocked_orphaning(
    ctx: Context, sent: list[tuple[Write, Answer, Refusal | None]], risk: str, also: list[str]
) -> Finding | None:
    """An owner deleted with propagationPolicy Orphan whose dependents the garbage collector cannot release, by the
    answers to the dry runs of its patches (orphaning): BLOCKED, naming what rejects them; None when none is
    rejected as the garbage collector. It retries with backoff; the owner keeps `orphan` meanwhile and says nothing."""
    if not ctx.obj.terminating:
        return None
    refused = [r for _, _, r in sent if r is not None]
    does = "remove this owner from"
    return _blocked(ctx, refused, "the garbage collector", "its dependents", risk, also, does=does)


def _blocked(
    ctx: Context, refused: list[Refusal], actor: str, what: str, risk: str, also: list[str], does: str = "delete"
) -> Finding | None:
    """BLOCKED by the rejections the actor itself would get (`also`: more evidence; `does`: what the actor cannot do
    to them); None without one."""
    blocking = list({r.why: r for r in refused if r.as_actor}.values())  # a gate once, however many it rejects
    if not blocking:
        return None
    return ctx.finding(
        "; ".join(r.why for r in blocking) + f": {actor} cannot {does} them",
        Verdict.BLOCKED,
        fix=prose(a for r in blocking for a in r.step) + f"; {actor} then carries on",
        risk="; ".join(dict.fromkeys([r.risk for r in blocking if r.risk] + [risk])),
        evidence=[r.evidence for r in refused] + also,
        controller=f"kube-controller-manager ({actor.removeprefix('the ')})",
        summary=f"{blocking[0].why}, so {actor} cannot {does} {what}",
        links=[r.link() for r in blocking],
    )
