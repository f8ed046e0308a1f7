"""kfin preflight -f / helm: a teardown of many objects, predicted as what it is, deletions in sequence, each
step's effect on what the next steps can do.

kubectl sends one DELETE after the other in the manifests' order and waits for the objects to be gone only after
the last (kfin.core.predict.manifests); Helm sorts them by kind and deletes a kind's objects concurrently, the next kind
once those DELETEs returned, never waiting in between (kfin.core.predict.helm). Neither waits for a deletion to finish
before the next, so a step's cascade (garbage collection, a namespace's content, a CRD's custom resources) runs
alongside the steps after it.

Each step is one object's deletion as `kfin preflight KIND NAME` predicts it (kfin.core.predict.preflight.foresee: what
it deletes with it, what its gates and finalizers leave stuck), and then what the steps before it changed:

- a controller deleted at step j strands the objects deleted at step k > j whose finalizers only it removes:
  certain when it is not running now (foresee says so already), a race when it runs (its Pods are deleted
  through the cascade and given their grace period: the DELETE of step k comes a moment later, and a
  controller that stops reconciling on SIGTERM, as controller-runtime's do, loses it);
- a Service deleted at step j makes every admission webhook it backs fail closed (failurePolicy Fail) for
  the steps after, until the webhook's configuration goes: a DELETE it matches is rejected (kubectl goes on with
  the next object, the object stays); a finalizer removal (UPDATE) it matches is rejected for as long as the
  configuration stays: for good when the teardown does not delete it;
- an object already deleted by an earlier step's cascade is said so (its DELETE finds it Terminating or gone).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from msgspec import Struct, field

from kfin.api.builtin_kinds import builtin_resources
from kfin.core.explain.causes.custom import Grant, find_grants
from kfin.core.explain.causes.registry import Action, Context, control_plane_owned, family
from kfin.core.explain.causes.webhooks import GROUP as WEBHOOK_GROUP
from kfin.core.explain.causes.webhooks import KINDS as WEBHOOK_KINDS
from kfin.core.explain.causes.webhooks import rule_matches, selector_matches
from kfin.core.explain.survival import Stuck, delete_step, finalizer_controllers, reference
from kfin.core.predict.helm import Release, batches, kept, uninstall_order
from kfin.core.predict.manifests import Manifest
from kfin.core.predict.preflight import Preflight, PreflightStep, foresee, safe_order
from kfin.core.read.facts import Facts
from kfin.model import CRDS, JSON, NAMESPACES, KubeObject, ResourceType

SERVICES = ("", "services")
Gone = dict[str, int]  # uid -> the step whose DELETE (or its cascade) deletes it
ServicesGone = dict[tuple[str, str], int]  # (namespace, name) of a Service -> the step that deletes it


class Deletion(Struct):
    """One step of the teardown: one object's DELETE, in the tool's order."""

    number: int
    manifest: Manifest
    obj: KubeObject | None  # the live object; None: not found (kubectl says NotFound, Helm ignores it)
    batch: int = 0  # Helm: the DELETEs of one batch are sent concurrently
    cascade: list[KubeObject] = field(default_factory=list)  # what its deletion deletes with it
    stuck: list[Stuck] = field(default_factory=list)  # what this step leaves Terminating
    rejected: list[Stuck] = field(default_factory=list)  # why its DELETE is refused (the object stays)
    note: str = ""  # "already deleted at step 2 (...)", "kept: helm.sh/resource-policy: keep"

    @property
    def ref(self) -> str:
        m = self.manifest
        return f"{m.kind}/{m.namespace + '/' if m.namespace else ''}{m.name}"

    def to_dict(self) -> JSON:
        return {
            "step": self.number,
            "batch": self.batch or None,
            "object": self.manifest.to_dict(),
            "found": self.obj is not None,
            "note": self.note or None,
            "cascade": [reference(o) for o in self.cascade],
            "wouldBeStuck": [s.to_dict() for s in self.stuck],
            "rejected": [s.to_dict() for s in self.rejected],
        }


class Caused(Stuck):
    """What the teardown's order leaves stuck, with where it comes from (kfin preflight -o dot draws it): `by`,
    the step whose deletion causes it (a controller, its ServiceAccount or rights, a webhook's Service deleted);
    `waits_for`, the stuck objects a CRD or namespace waits for."""

    by: int = 0
    waits_for: tuple[KubeObject, ...] = ()


class Teardown(Struct):
    tool: str  # "kubectl delete -f", "helm 3 uninstall", "helm 4 uninstall"
    command: str  # the command predicted, to paste after the plan's first steps
    steps: list[Deletion]
    kept: list[Manifest] = field(default_factory=list)  # helm.sh/resource-policy: keep
    hooks: list[JSON] = field(default_factory=list)  # Helm's delete hooks: named, not run
    chart_crds: list[str] = field(default_factory=list)
    orphaned: list[Stuck] = field(default_factory=list)  # left in place without the controller of their finalizer
    plan: list[PreflightStep] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def stuck(self) -> list[Stuck]:
        return [s for d in self.steps for s in d.stuck]

    def at(self, number: int) -> str:
        """When step `number` deletes something, as a reason says it: "at step 2"; in the teardown of one DELETE
        (kfin guard's, kfin preflight namespace X's) there are no steps to count: "with namespace app"."""
        if len(self.steps) == 1:
            only = self.steps[0].manifest
            return f"with {only.kind.lower()} {only.namespace + '/' if only.namespace else ''}{only.name}"
        return f"at step {number}"

    @property
    def clean(self) -> bool:
        return not self.stuck and not self.orphaned and not any(d.rejected for d in self.steps)

    def to_dict(self) -> JSON:
        return {
            "apiVersion": "kfin.dev/v1",
            "kind": "TeardownPreflight",
            "tool": self.tool,
            "command": self.command,
            "clean": self.clean,
            "steps": [d.to_dict() for d in self.steps],
            "notFound": [d.manifest.to_dict() for d in self.steps if d.obj is None and not d.note],
            "kept": [m.to_dict() for m in self.kept],
            "hooks": self.hooks,
            "chartCRDs": self.chart_crds,
            "leftWithoutController": [s.to_dict() for s in self.orphaned],
            "plan": [s.to_dict() for s in self.plan],
            "couldNotRead": self.unknown,
        }


def _types(facts: Facts) -> list[ResourceType]:
    return facts.inventory.resources + builtin_resources()


def resolve(facts: Facts, manifest: Manifest, default_namespace: str) -> KubeObject | None:
    """The live object a manifest names, or None."""
    group, version = manifest.group, manifest.api_version.rpartition("/")[2]
    found = [t for t in _types(facts) if t.group == group and t.kind == manifest.kind]
    rtype = next((t for t in found if t.version == version), found[0] if found else None)
    if rtype is None:
        return None
    namespace = (manifest.namespace or default_namespace) if rtype.namespaced else ""
    return facts.find(rtype.group, rtype.resource, namespace, manifest.name, full=True) or facts.find(
        rtype.group, rtype.resource, namespace, manifest.name
    )


def from_manifests(
    facts: Facts, manifests: list[Manifest], namespace: str, command: str, cascade: str = "background"
) -> Teardown:
    """`kubectl delete -f`: the objects in the manifests' order, one DELETE each."""
    steps = [Deletion(i, m, resolve(facts, m, namespace)) for i, m in enumerate(manifests, 1)]
    result = Teardown("kubectl delete -f", command, steps)
    _predict(facts, result, cascade)
    return result


def kubectl_delete(
    facts: Facts,
    manifests: list[Manifest],
    files: list[str],
    recursive: bool,
    namespace: str | None,
    cascade: str = "background",
) -> Teardown:
    """The teardown of `kubectl delete -f FILES [-R] [-n NAMESPACE] [--cascade=...]` (`namespace`: -n, None for the
    context's), named by that command."""
    shown = " ".join(f"-f {f}" for f in files) + (" -R" if recursive else "")
    where = f" -n {namespace}" if namespace else ""
    policy = "" if cascade == "background" else f" --cascade={cascade}"
    command = f"kubectl delete {shown}{where}{policy}"
    return from_manifests(facts, manifests, namespace or facts.inventory.namespace or "default", command, cascade)


def from_release(facts: Facts, release: Release, major: int, command: str, cascade: str = "background") -> Teardown:
    """`helm uninstall`: Helm's order of the release's manifest, kept objects left out, its hooks named."""
    ordered = uninstall_order(release.manifests, major)
    deleted = [m for m in ordered if not kept(m)]
    steps = [
        Deletion(i, m, resolve(facts, m, release.namespace), batch)
        for i, (m, batch) in enumerate(zip(deleted, batches(deleted), strict=True), 1)
    ]
    hooks = [h for h in release.hooks if {"pre-delete", "post-delete"} & set(h["events"])]
    result = Teardown(
        f"helm {major} uninstall", command, steps, [m for m in ordered if kept(m)], hooks, release.chart_crds
    )
    _predict(facts, result, cascade)
    result.hooks = [{**h, "wouldHaveTo": hook_duty(result, h["events"])} for h in hooks]
    return result


def hook_duty(result: Teardown, events: list[str]) -> str:
    """What a delete hook would have to do for the uninstall to leave nothing stuck, drawn from the model (kfin
    does not run the hook, so the prediction is what happens without it): the safe order's steps before the
    uninstall. A pre-delete hook runs before the first DELETE, the operator still running (helm.py); a post-delete
    hook after the last, its controllers and webhook Services deleted by then: too late for those steps."""
    if result.clean:
        return "nothing would be left stuck without it"
    stuck = [s.obj for d in result.steps for s in d.stuck + d.rejected] + [s.obj for s in result.orphaned]
    names = ", ".join(dict.fromkeys(f"{o.type.kind} {o.name}" for o in stuck))
    todo = "; then ".join(f"{step.actions[0].text} ({step.why})" for step in result.plan[:-1])
    if "pre-delete" in events:
        return f"without it {names} would be left stuck or not deleted: it would have to {todo}"
    return (
        "it runs after the last DELETE, the teardown's controllers and webhook Services deleted by then: the safe "
        f"order's steps come before the uninstall: {todo}; without a pre-delete hook (or you) doing them, {names} "
        "would be left stuck or not deleted"
    )


def of_deletion(facts: Facts, target: KubeObject) -> Teardown:
    """One DELETE that deletes many objects, as the teardown it starts: a Namespace (its content, in the namespace
    controller's order: its Pods first, the rest once they are gone, since 1.34), a CRD (its custom resources,
    deleted by customresourcecleanup, then the CRD once they are gone). The same model, and so the same words, as
    `kfin preflight -f` of a manifest that holds this one object: kfin guard says what that would."""
    rtype = target.type
    manifest = Manifest(rtype.api_version, rtype.kind, target.name, target.namespace, "-", target.raw)
    ns = f" -n {target.namespace}" if target.namespace else ""
    result = Teardown(
        "kubectl delete", f"kubectl delete {rtype.qualified} {target.name}{ns}", [Deletion(1, manifest, target)]
    )
    _predict(facts, result)
    return result


def preflight_of(facts: Facts, target: KubeObject, cascade: str = "background") -> Preflight:
    """The answer to one DELETE, as `kfin preflight KIND NAME` and kfin guard give it: foresee's; for a Namespace or
    a CRD, the teardown it starts (of_deletion), which says what foresee says and what the cascade adds (what the
    namespace or CRD waits for, named; a webhook whose Service goes with the namespace), in the same words as
    `kfin preflight -f`. Its plan is preflight's: deleted first what would be stranded, then the object, followed."""
    if (target.type.group, target.type.resource) not in (NAMESPACES, CRDS):
        return foresee(facts, target, cascade)
    model = of_deletion(facts, target)
    [step] = model.steps
    result = Preflight(
        target,
        step.cascade,
        stuck=step.stuck + step.rejected,
        unknown=model.unknown,
        orphaned=model.orphaned,
        observed_at=facts.inventory.observed_at,
    )
    result.plan = safe_order(result)
    return result


def _predict(facts: Facts, result: Teardown, cascade: str = "background") -> None:
    """`cascade`: the propagation policy of the DELETEs (kubectl's and Helm's --cascade): with orphan, the
    garbage collector deletes no dependents (a Deployment's Pods keep running: its controller too), though a
    namespace still deletes its content and a CRD its custom resources."""
    gone: dict[str, int] = {}  # uid -> the step whose DELETE (or its cascade) deletes it
    services_gone: dict[tuple[str, str], int] = {}
    teardown_uids = {d.obj.uid for d in result.steps if d.obj is not None}
    orphaned: dict[tuple[str, str], Stuck] = {}
    for step in result.steps:
        obj = step.obj
        if obj is None:
            continue
        if obj.uid in gone:
            earlier = result.steps[gone[obj.uid] - 1]
            step.note = f"already deleted with {earlier.ref} at step {earlier.number}"
            continue
        rejections = _webhook_rejections(facts, obj, "DELETE", services_gone, gone, step.number, when=result.at)
        if rejections:
            step.rejected = [
                Caused(obj, "", reason=f"its DELETE is rejected: {why}", verdict="BLOCKED", actions=actions, by=at)
                for why, actions, at in rejections
            ]
            continue
        single = foresee(facts, obj, cascade)
        single.stuck = _without_deleted_webhooks(single.stuck, result, gone)
        if cascade == "orphan" and (obj.type.group, obj.type.resource) not in (NAMESPACES, CRDS):
            single.deleted, single.orphaned = [], []
            single.stuck = [s for s in single.stuck if s.obj.uid == obj.uid]
        result.unknown += [u for u in single.unknown if u not in result.unknown]
        step.cascade = [o for o in single.deleted if o.uid not in gone]  # what an earlier step deleted: said there
        for each in [obj, *step.cascade]:
            gone[each.uid] = step.number
            if (each.type.group, each.type.resource) == SERVICES:
                services_gone.setdefault((each.namespace, each.name), step.number)
        step.stuck = [s for s in single.stuck if gone.get(s.obj.uid, step.number) == step.number]
        known = {(s.obj.uid, s.finalizer) for s in single.stuck}
        for each in [obj, *step.cascade]:
            step.stuck += _finalizer_updates_rejected(
                facts, each, services_gone, gone, step.number, known, when=result.at
            )
        if (obj.type.group, obj.type.resource) == NAMESPACES:
            step.stuck += _content_deletes_rejected(facts, step, services_gone, gone)
        for s in single.orphaned:
            orphaned.setdefault((s.obj.uid, s.finalizer), s)
    # once every step's deletions are known: controllers deleted before, or moments after, what they finalize
    for step in result.steps:
        if step.obj is None or step.note or step.rejected:
            continue
        known = {(s.obj.uid, s.finalizer) for s in step.stuck}
        for each in [step.obj, *step.cascade]:
            if gone.get(each.uid) == step.number:
                step.stuck += _stranded(facts, each, step, gone, result, known)
    # a CRD waits for its custom resources, a namespace for its content: stuck at any step, they hold it
    stuck = [s for d in result.steps for s in d.stuck]
    for step in result.steps:
        obj = step.obj
        if obj is None or step.note or step.rejected:
            continue
        key = (obj.type.group, obj.type.resource)
        if key == CRDS:
            spec = obj.raw.get("spec") or {}
            group, plural = spec.get("group"), (spec.get("names") or {}).get("plural")
            held = [s.obj for s in stuck if (s.obj.type.group, s.obj.type.resource) == (group, plural)]
            finalizer, what = "customresourcecleanup.apiextensions.k8s.io", "its custom resources"
        elif key == NAMESPACES:
            held = [s.obj for s in stuck if s.obj.namespace == obj.name and s.obj.uid != obj.uid]
            finalizer, what = "kubernetes", "its content"
        else:
            continue
        if held:
            names = ", ".join(dict.fromkeys(o.name for o in held))
            why = f"it waits for {what} to go: {names} left stuck"
            step.stuck.append(
                Caused(obj, finalizer, reason=why, verdict="HOLDING", by=step.number, waits_for=tuple(held))
            )
    # left without their controller: only what the teardown does not delete itself
    result.orphaned = [s for (uid, _), s in orphaned.items() if uid not in gone and uid not in teardown_uids]
    result.plan = _plan(result)


def _stranded(
    facts: Facts, obj: KubeObject, step: Deletion, gone: dict[str, int], result: Teardown, known: set[tuple[str, str]]
) -> list[Stuck]:
    """Finalizers of `obj` (deleted at this step) whose every controller the teardown takes away: deletes it, its
    ServiceAccount or its right to update the object; at an earlier step, or at a later one that does not wait
    for this deletion to finish (neither kubectl nor Helm waits)."""
    out: list[Stuck] = []
    for finalizer in obj.finalizers:
        if control_plane_owned(finalizer) or (obj.uid, finalizer) in known:
            continue
        ctx = Context(obj, finalizer, "metadata.finalizers", facts, family(finalizer, facts.catalog))
        found = finalizer_controllers(ctx)
        losses = [_losses(ctx, w, running, gone, result) for w, running in found or []]
        if not losses or not all(losses):
            continue

        def first(candidates: list[tuple[int, str, bool, bool]]) -> tuple[int, str, bool, bool]:
            sure = [c for c in candidates if c[0] < step.number and c[2]]  # a certain loss before beats a race
            return min(sure or candidates)

        at, why, certain, grace = max(first(c) for c in losses)  # the last controller to go
        if at < step.number:
            reason, sure = why, certain
        elif at == step.number or (step.batch and result.steps[at - 1].batch == step.batch):
            reason, sure = f"{why}, {'with it' if at == step.number else 'in the same batch (concurrently)'}", False
        else:
            reason, sure = f"{why}, moments later (nothing waits for this deletion to finish)", False
        if not sure:
            pods = "its Pods stop within their grace period; " if grace else ""
            reason += f": a race it usually loses ({pods}{finalizer} goes only if it reconciles this deletion first)"
        out.append(
            Caused(
                obj,
                finalizer,
                reason=reason,
                verdict="ORPHANED",
                actions=delete_step(obj),  # first, while its controller runs: the plan waits for it to go
                first=True,
                certain=sure,
                race=not sure,
                by=at,
            )
        )
        known.add((obj.uid, finalizer))
    return out


def _losses(
    ctx: Context, w: KubeObject, running: bool, gone: dict[str, int], result: Teardown
) -> list[tuple[int, str, bool, bool]]:
    """The steps that take controller `w` away from the finalizer (step, why, certain, ...): the step
    that deletes it (certain when it is not running now: else its Pods have their grace period); the one that
    deletes its ServiceAccount (its token is refused from then on) or the last Role or ClusterRole that lets it
    update the object. Last: whether its Pods, still running, have their grace period."""
    found: list[tuple[int, str, bool, bool]] = []
    if w.uid in gone:
        at = result.steps[gone[w.uid] - 1]
        why = f"its controller {_named(w, at)} is deleted {result.at(at.number)}" + (
            "" if running else " (not running now)"
        )
        found.append((at.number, why, not running, running))
    spec = w.raw.get("spec") or {}
    if w.type.resource != "pods":
        spec = (spec.get("template") or {}).get("spec") or {}
    account = str(spec.get("serviceAccountName") or "default")
    sa = ctx.facts.find("", "serviceaccounts", w.namespace, account)
    if sa is not None and sa.uid in gone:
        n = gone[sa.uid]
        why = (
            f"its controller's ServiceAccount {w.namespace}/{account} is deleted {result.at(n)} (its token is refused)"
        )
        found.append((n, why, True, False))
    gone_objects = [
        o for d in result.steps for o in ([d.obj] if d.obj is not None else []) + d.cascade if o.uid in gone
    ]
    grants = [
        g
        for g in find_grants(ctx) or []
        if g.subject_kind == "ServiceAccount" and g.namespace == w.namespace and g.service_account == account
    ]
    lost = [_grant_lost(ctx, g, account, gone_objects, gone) for g in grants]
    if grants and all(n is not None for n in lost):
        n = max(x for x in lost if x is not None)
        names = ", ".join(dict.fromkeys(g.role for g in grants))
        why = f"its controller's right to update {ctx.obj.type.resource} ({names}) is deleted {result.at(n)}"
        found.append((n, why, True, False))
    return found


def _grant_lost(ctx: Context, grant: Grant, account: str, gone_objects: list[KubeObject], gone: Gone) -> int | None:
    """The step that takes a grant away: its Role or ClusterRole deleted, or every binding of it to the
    ServiceAccount; None when the teardown leaves it."""
    kind, _, where = grant.role.partition(" ")
    role_namespace, _, role_name = where.rpartition("/")
    steps = [
        gone[o.uid]
        for o in gone_objects
        if o.type.kind == kind and o.name == role_name and o.namespace == role_namespace
    ]
    rbac = "rbac.authorization.k8s.io"
    bindings = (
        (ctx.facts.objects(rbac, "rolebindings", ctx.obj.namespace, full=True) or []) if ctx.obj.namespace else []
    )
    bindings += ctx.facts.objects(rbac, "clusterrolebindings", full=True) or []
    mine = [
        b
        for b in bindings
        if (b.raw.get("roleRef") or {}).get("kind") == kind
        and (b.raw.get("roleRef") or {}).get("name") == role_name
        and any(
            x.get("kind") == "ServiceAccount"
            and x.get("name") == account
            and (x.get("namespace") or b.namespace) == grant.namespace
            for x in b.raw.get("subjects") or []
        )
    ]
    if mine and all(b.uid in gone for b in mine):
        steps.append(max(gone[b.uid] for b in mine))
    return min(steps) if steps else None


def _named(w: KubeObject, at: Deletion) -> str:
    """A controller by the object its step deletes (the Deployment, not the Pod its cascade deletes)."""
    top = at.obj if at.obj is not None and w.uid != at.obj.uid else w
    return f"{top.type.kind} {top.namespace + '/' if top.namespace else ''}{top.name}"


def _without_deleted_webhooks(stuck: list[Stuck], result: Teardown, gone: dict[str, int]) -> list[Stuck]:
    """foresee reads the cluster as it is: a webhook that rejects a DELETE now (its rules, or the server's answer to a
    dry run) rejects nothing once an earlier step deleted its configuration (Helm 4 deletes them first)."""
    deleted = [
        f"{o.type.kind} {o.name}"
        for d in result.steps
        for o in ([d.obj] if d.obj is not None else [])
        if o.uid in gone and (o.type.group, o.type.resource) in [(WEBHOOK_GROUP, k) for k in WEBHOOK_KINDS]
    ]
    if not deleted:
        return stuck
    named = re.compile("|".join(re.escape(name) for name in deleted) + r"(?![\w.-])")
    return [s for s in stuck if s.verdict != "BLOCKED" or not named.search(s.reason)]


def _webhooks_failing(
    facts: Facts, obj: KubeObject, operation: str, services_gone: ServicesGone, gone: Gone, number: int
) -> list[tuple[KubeObject, JSON, int]]:
    """Webhooks still configured at step `number` whose Service an earlier step deleted, failing closed, that
    match `operation` on `obj`: (configuration, webhook, the step that deleted the Service)."""
    if not services_gone:
        return []
    namespace_labels: dict[str, str] = {}
    if obj.namespace:
        ns = (facts.namespaces_by_name() or {}).get(obj.namespace)
        namespace_labels = (ns.meta.get("labels") or {}) if ns else {}
    out = []
    for kind in WEBHOOK_KINDS:
        for config in facts.objects(WEBHOOK_GROUP, kind, full=True) or []:
            if config.uid in gone and gone[config.uid] < number:
                continue
            for hook in config.raw.get("webhooks") or []:
                service = (hook.get("clientConfig") or {}).get("service") or {}
                at = services_gone.get((service.get("namespace", ""), service.get("name", "")))
                if at is None or at >= number or (hook.get("failurePolicy") or "Fail") != "Fail":
                    continue
                if not any(rule_matches(r, obj.type, operation) for r in hook.get("rules") or []):
                    continue
                if obj.namespace and not selector_matches(hook.get("namespaceSelector"), namespace_labels):
                    continue
                if not selector_matches(hook.get("objectSelector"), obj.meta.get("labels") or {}):
                    continue
                out.append((config, hook, at))
    return out


def _webhook_rejections(
    facts: Facts,
    obj: KubeObject,
    operation: str,
    services_gone: ServicesGone,
    gone: Gone,
    number: int,
    *,
    when: Callable[[int], str],
) -> list[tuple[str, tuple[Action, ...], int]]:
    """Why `operation` on `obj` is rejected at step `number`, what to do first, and the step that deleted the
    webhook's Service."""
    out: list[tuple[str, tuple[Action, ...], int]] = []
    for config, hook, at in _webhooks_failing(facts, obj, operation, services_gone, gone, number):
        service = hook["clientConfig"]["service"]
        why = (
            f"webhook {hook.get('name')} of {config.type.kind} {config.name} fails closed: its Service "
            f"{service.get('namespace')}/{service.get('name')} is deleted {when(at)}"
        )
        out.append((why, (Action(f"kubectl delete {config.type.kind.lower()} {config.name}"),), at))
    return out


def _content_deletes_rejected(facts: Facts, step: Deletion, services_gone: ServicesGone, gone: Gone) -> list[Stuck]:
    """A namespace whose content holds a webhook's Service, the webhook failing closed on DELETE of other content:
    the namespace controller deletes the Pods first (since 1.34), the Service's endpoints with them when they are
    Pods of the namespace (a selector selects in its own namespace only), then the Service itself with the rest;
    from then on its DELETEs the webhook matches are rejected, and the namespace waits for good (its
    configuration, not in a namespace, stays). Endpoints elsewhere stay until the Service goes: a race then."""
    namespace = step.obj
    assert namespace is not None
    mine = {key: at for key, at in services_gone.items() if key[0] == namespace.name and at == step.number}
    said = " ".join(s.reason for s in step.stuck if s.obj.uid == namespace.uid)
    found: dict[str, tuple[KubeObject, JSON, list[KubeObject]]] = {}
    for each in step.cascade:
        if (each.type.group, each.type.resource) in (SERVICES, ("", "pods")):
            continue  # the Pods go while the webhook still answers; a Service's DELETE is what breaks it
        for config, hook, _ in _webhooks_failing(facts, each, "DELETE", mine, gone, step.number + 1):
            key = f"{config.uid}/{hook.get('name')}"
            found.setdefault(key, (config, hook, []))[2].append(each)
    out: list[Stuck] = []
    for config, hook, held in found.values():
        if f"{config.type.kind} {config.name}" in said:  # the rules already say it fails closed now
            continue
        service = hook["clientConfig"]["service"]
        selects = _served_by_pods_of(facts, namespace.name, str(service.get("name", "")))
        names = ", ".join(f"{o.type.kind} {o.name}" for o in held[:3]) + (" ..." if len(held) > 3 else "")
        why = (
            f"webhook {hook.get('name')} of {config.type.kind} {config.name} fails closed once its Service "
            f"{service.get('namespace')}/{service.get('name')} "
            + ("loses its Pods (the namespace's Pods go first)" if selects else "is deleted with the namespace")
            + f": the namespace controller cannot delete {names}"
            + ("" if selects else " (a race: those deleted before the Service go)")
        )
        action = (Action(f"kubectl delete {config.type.kind.lower()} {config.name}"),)
        out.append(
            Caused(
                namespace,
                "kubernetes",
                reason=why,
                verdict="BLOCKED",
                actions=action,
                certain=selects,
                race=not selects,
                by=step.number,
            )
        )
    return out


def _served_by_pods_of(facts: Facts, namespace: str, service: str) -> bool:
    """Whether every endpoint of the Service is a Pod of its namespace (its EndpointSlices' targetRefs: the
    endpointslice controller names the Pods a selector selects)."""
    slices = [
        s
        for s in facts.objects("discovery.k8s.io", "endpointslices", namespace, full=True) or []
        if (s.meta.get("labels") or {}).get("kubernetes.io/service-name") == service
    ]
    # the lists keep whether each endpoint is ready, not what it is: the slice itself is read for its targetRefs
    endpoints = [e for s in slices for e in (facts.whole(s) or s.raw).get("endpoints") or []]
    return bool(endpoints) and all(
        (e.get("targetRef") or {}).get("kind") == "Pod" and (e.get("targetRef") or {}).get("namespace") == namespace
        for e in endpoints
    )


def _finalizer_updates_rejected(
    facts: Facts,
    obj: KubeObject,
    services_gone: ServicesGone,
    gone: Gone,
    number: int,
    known: set[tuple[str, str]],
    *,
    when: Callable[[int], str],
) -> list[Stuck]:
    """A finalizer removal (an UPDATE) rejected for good: the webhook's Service is gone and the teardown never
    deletes its configuration. (One the teardown deletes later only delays the removal: controllers retry.)"""
    if not obj.finalizers:
        return []
    out: list[Stuck] = []
    for config, hook, at in _webhooks_failing(facts, obj, "UPDATE", services_gone, gone, number + 1):
        if config.uid in gone:
            continue
        for finalizer in obj.finalizers:
            if (obj.uid, finalizer) in known:
                continue
            known.add((obj.uid, finalizer))
            why = (
                f"webhook {hook.get('name')} of {config.type.kind} {config.name} rejects the removal of {finalizer}: "
                f"its Service is deleted {when(at)}, its configuration stays"
            )
            out.append(
                Caused(
                    obj,
                    finalizer,
                    reason=why,
                    verdict="BLOCKED",
                    actions=(Action(f"kubectl delete {config.type.kind.lower()} {config.name}"),),
                    first=False,
                    by=at,
                )
            )
    return out


def _plan(result: Teardown) -> list[PreflightStep]:
    """The safe order: the webhook configurations that would fail closed once the teardown deleted their Service,
    first; then the objects whose controller the teardown deletes, while it still runs, followed to their end; then
    the teardown."""
    steps: list[PreflightStep] = []
    webhooks = {
        d.obj.uid: d.obj
        for d in result.steps
        if d.obj is not None
        and (d.obj.type.group, d.obj.type.resource) in [(WEBHOOK_GROUP, k) for k in WEBHOOK_KINDS]
        and _fails_closed_after_its_service(d.obj, result)
    }
    for config in webhooks.values():
        steps.append(
            PreflightStep(
                (Action(f"kubectl delete {config.type.kind.lower()} {config.name}"),),
                "its webhook's Service goes with the teardown: without it the webhook fails closed for what follows",
            )
        )
    stranded = [s for d in result.steps for s in d.stuck + d.rejected if s.first] + result.orphaned
    by_type: dict[tuple[str, str], list[KubeObject]] = {}
    for s in stranded:
        if s.obj.uid not in {o.uid for objs in by_type.values() for o in objs}:
            by_type.setdefault((s.obj.type.qualified, s.obj.namespace), []).append(s.obj)
    for (qualified, namespace), objs in by_type.items():
        names = " ".join(o.name for o in objs)
        ns = f" -n {namespace}" if namespace else ""
        steps.append(
            PreflightStep(
                (Action(f"kubectl delete {qualified} {names}{ns} --wait --timeout=10m"),),
                "first, while their controller still runs: it removes their finalizers before it goes",
            )
        )
    blocked = [s for d in result.steps for s in d.stuck + d.rejected if not s.first and s.actions]
    done: set[tuple[Action, ...]] = {s.actions for s in steps}
    for s in blocked:
        if s.actions not in done:
            done.add(s.actions)
            steps.append(PreflightStep(s.actions, f"{s.obj.ref}: {s.reason}"))
    why = "nothing would be left stuck" if result.clean else "then the teardown itself"
    steps.append(PreflightStep((Action(_after(result, steps)),), why))
    return steps


def _after(result: Teardown, earlier: list[PreflightStep]) -> str:
    """The teardown's command, pasted after `earlier` steps: kubectl answers NotFound (and exits 1) for each object of
    its manifests a step before already deleted, unless told to pass over them. (Helm's uninstall already does.)"""
    mine = [d.obj for d in result.steps if d.obj is not None]
    commands = {a.command or "" for step in earlier for a in step.actions}
    deleted = any(  # by name (a webhook configuration), or among the names of a `kubectl delete TYPE A B -n NS`
        f"kubectl delete {o.type.kind.lower()} {o.name}" in commands
        or any(
            c.startswith(f"kubectl delete {o.type.qualified} ")
            and o.name in c.split()
            and (not o.namespace or f" -n {o.namespace} " in f"{c} ")
            for c in commands
        )
        for o in mine
    )
    command = result.command
    return f"{command} --ignore-not-found" if deleted and command.startswith("kubectl delete ") else command


def _fails_closed_after_its_service(config: KubeObject, result: Teardown) -> bool:
    """Whether a webhook of `config` fails closed (failurePolicy Fail, the API server's default) and the teardown
    deletes its Service at a step before the configuration's, or never deletes the configuration: in between, it
    rejects what it matches. A webhook failing open (Ignore) is then skipped, and one whose configuration goes
    first (Helm 4 deletes webhook configurations before anything else) is never called without its Service."""
    services: dict[tuple[str, str], int] = {}
    config_at: int | None = None
    for d in result.steps:
        for o in ([d.obj] if d.obj is not None else []) + d.cascade:
            if (o.type.group, o.type.resource) == SERVICES:
                services.setdefault((o.namespace, o.name), d.number)
            if o.uid == config.uid and config_at is None:
                config_at = d.number
    for hook in config.raw.get("webhooks") or []:
        if (hook.get("failurePolicy") or "Fail") != "Fail":
            continue
        service = (hook.get("clientConfig") or {}).get("service") or {}
        at = services.get((service.get("namespace", ""), service.get("name", "")))
        if at is not None and (config_at is None or at < config_at):
            return True
    return False
