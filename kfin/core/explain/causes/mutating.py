"""Admission that puts a finalizer back: a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in 1.36)
or a mutating webhook that adds a finalizer on every UPDATE undoes every removal of it, kfin's and its controller's
alike. kube-apiserver accepts such an UPDATE (the finalizer was there before it: not a new one, which an object
being deleted may not take), so the write succeeds and changes nothing; only the object it returns shows it (seen
on a real v1.36.2 control plane: a dry run of the removal answered 200 with the finalizer still there).

Once a dry run's answer shows the finalizer back (kfin.core.explain.causes.dryrun), this names what put it there: each
bound MutatingAdmissionPolicy whose CEL (matchConditions, then its JSONPatch or ApplyConfiguration mutations,
evaluated with the `cel` package as kfin.core.explain.causes.policies does) adds it back to the object without it; where
kfin cannot evaluate a policy, it is a candidate, and so is each mutating webhook the UPDATE calls (what a webhook
answers only its backend knows)."""

from __future__ import annotations

import copy

from msgspec import Struct

from kfin.core.explain.causes.policies import UnevaluableError, bound, evaluate
from kfin.core.explain.causes.registry import EVERYWHERE, Action, Link, LinkKind, gates
from kfin.core.explain.causes.webhooks import backend_problem, rule_matches, selector_matches
from kfin.core.read.facts import ClusterFacts
from kfin.model import JSON, KubeObject

GROUP = "admissionregistration.k8s.io"
WEBHOOKS = "mutatingwebhookconfigurations"
POLICIES, BINDINGS = "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"
RISK = "changing or deleting it lifts what it does for every request it matches"


class PutBack(Struct):
    """What puts a finalizer back at admission, or may: a bound MutatingAdmissionPolicy, or a mutating webhook."""

    target: KubeObject  # the policy, or the webhook configuration
    named: str  # "MutatingAdmissionPolicy p (binding b)", "webhook w of MutatingWebhookConfiguration c"
    kind: LinkKind
    how: str  # how kfin knows, in a phrase
    certain: bool  # kfin evaluated it and it adds the finalizer back
    binding: KubeObject | None = None
    hook: str = ""

    def step(self, finalizer: str) -> tuple[Action, ...]:
        if self.binding is not None:
            return (
                Action(
                    None,
                    note=f"change MutatingAdmissionPolicy {self.target.name} (or its binding {self.binding.name}) so "
                    f"that it no longer puts {finalizer} back",
                ),
                Action(
                    f"kubectl delete mutatingadmissionpolicybinding {self.binding.name}",
                    when="instead, if what it does is obsolete",
                ),
            )
        return (
            Action(
                None,
                note=f"change what webhook {self.hook} of MutatingWebhookConfiguration {self.target.name} does (its "
                f"operator's configuration) so that it no longer puts {finalizer} back",
            ),
            Action(
                f"kubectl delete mutatingwebhookconfiguration {self.target.name}",
                when="instead, if its operator was uninstalled",
            ),
        )

    def link(self, finalizer: str, then: tuple[Action, ...] = ()) -> Link:
        """The link of the blocking graph to it; `then`: what to do once it lets go (kfin's removal, where
        nothing else will remove the finalizer)."""
        return Link(
            self.kind,
            f"{self.named} {'puts' if self.certain else 'may put'} {finalizer} back on every UPDATE that removes it "
            f"({self.how})",
            target=self.target,
            step=self.step(finalizer) + then,
            family="admission-policy" if self.binding is not None else None,
            risk=f"{self.named}: {RISK}",
            finalizers=(finalizer,),
        )


def without(obj: JSON, finalizer: str) -> JSON:
    """The object as an UPDATE that removes `finalizer` sends it to admission (no finalizers field once none is
    left, as the server writes it)."""
    after = copy.deepcopy(obj)
    meta = after.setdefault("metadata", {})
    left = [f for f in meta.get("finalizers") or [] if f != finalizer]
    if left:
        meta["finalizers"] = left
    else:
        meta.pop("finalizers", None)
    return after


def putting_back(facts: ClusterFacts, obj: KubeObject, finalizer: str, user: str | None) -> list[PutBack]:
    """What puts `finalizer` back when `user` (None: not known) sends an UPDATE of `obj` that removes it: the
    policies kfin evaluated to add it back first, then the candidates it could not tell (policies it could not
    evaluate, mutating webhooks the UPDATE calls)."""
    request = _request(obj, user)
    found = _policies(facts, obj, finalizer, request)
    after = without(obj.raw, finalizer)
    for config, hook in _hooks(facts, obj, after, request):
        named = f"webhook {hook} of MutatingWebhookConfiguration {config.name}"
        how = f"it is called on every UPDATE of {obj.type.qualified} here; what it answers only its backend knows"
        found.append(PutBack(config, named, "webhook", how, False, hook=hook))
    return found


def _request(obj: KubeObject, user: str | None) -> JSON:
    request: JSON = {"operation": "UPDATE", "namespace": obj.namespace, "name": obj.name}
    if user:
        request["userInfo"] = {"username": user}
    return request


def _policies(facts: ClusterFacts, obj: KubeObject, finalizer: str, request: JSON) -> list[PutBack]:
    """The bound policies that put `finalizer` back on the UPDATE `request` that removes it (certain), then those
    kfin could not evaluate."""
    after = without(obj.raw, finalizer)
    certain, possible = [], []
    for policy, binding, spec in bound(facts, obj, "UPDATE", (POLICIES, BINDINGS)):
        named = f"MutatingAdmissionPolicy {policy.name} (binding {binding.name})"
        try:
            adds, how = _policy_adds(spec, after, obj.raw, request, finalizer)
        except UnevaluableError as error:
            possible.append(
                PutBack(policy, named, "admission-policy", f"kfin could not evaluate it: {error}", False, binding)
            )
            continue
        if adds:
            certain.append(PutBack(policy, named, "admission-policy", how, True, binding))
    return certain + possible


@gates(reads=((GROUP, POLICIES, EVERYWHERE), (GROUP, BINDINGS, EVERYWHERE)))
def readding_policies(obj: KubeObject, facts: ClusterFacts) -> list[Link]:
    """From their configuration alone: each bound policy whose CEL puts a finalizer back on the UPDATE that removes
    it gates that finalizer (one kfin cannot evaluate is a possible gate). Where the server answers the dry run
    of the removal (kfin.core.explain.causes.dryrun), its answer decides instead."""
    links = []
    for finalizer in obj.finalizers:
        for found in _policies(facts, obj, finalizer, _request(obj, None)):
            link = found.link(finalizer)
            link.possible = not found.certain
            links.append(link)
    return links


def _policy_adds(spec: JSON, after: JSON, before: JSON, request: JSON, finalizer: str) -> tuple[bool, str]:
    """Whether the policy's mutations add `finalizer` to `after`, and how; UnevaluableError where kfin cannot
    tell."""
    variables: JSON = {"object": after, "oldObject": before, "request": request}
    named: JSON = {}
    for variable in spec.get("variables") or []:
        expression = str(variable.get("expression") or "")
        named[str(variable.get("name"))] = evaluate(expression, {**variables, "variables": named})
    variables["variables"] = named
    for condition in spec.get("matchConditions") or []:
        if evaluate(str(condition.get("expression") or ""), variables) is not True:
            return False, ""
    mutated: JSON = after
    ways: list[str] = []
    for mutation in spec.get("mutations") or []:
        kind = mutation.get("patchType")
        if kind == "JSONPatch":
            expression = str((mutation.get("jsonPatch") or {}).get("expression") or "")
            ops = evaluate(expression, {**variables, "object": mutated})
            if not isinstance(ops, list):
                raise UnevaluableError("its JSONPatch expression gives no list")
            import jsonpatch  # 10 ms to import: only for a policy that patches
            import jsonpointer

            try:
                mutated = jsonpatch.apply_patch(mutated, ops)
            except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError) as error:
                raise UnevaluableError(f"its JSON Patch does not apply to what kfin holds: {error}") from None
        elif kind == "ApplyConfiguration":
            expression = str((mutation.get("applyConfiguration") or {}).get("expression") or "")
            applied = evaluate(expression, {**variables, "object": mutated})
            if not isinstance(applied, dict):
                raise UnevaluableError("its ApplyConfiguration expression gives no object")
            mutated = _merged(mutated, applied)
        else:
            raise UnevaluableError(f"patchType {kind!r}")
        if finalizer in ((mutated.get("metadata") or {}).get("finalizers") or []) and kind not in ways:
            ways.append(str(kind))
    adds = finalizer in ((mutated.get("metadata") or {}).get("finalizers") or [])
    return adds, f"its {' and '.join(ways)} mutation adds it" if adds else ""


# Lists merged by their items when applied (listType set): an ApplyConfiguration's finalizers join the object's
SET_LISTS = {("metadata", "finalizers")}


def _merged(current: JSON, applied: JSON) -> JSON:
    """`applied` (an ApplyConfiguration) merged into `current` as server-side apply merges it."""
    merged = _merged_value(current, applied, ())
    return merged if isinstance(merged, dict) else current


def _merged_value(current: object, applied: object, path: tuple[str, ...]) -> object:
    """An ApplyConfiguration applied as server-side apply merges it: maps field by field, a set's items joined,
    any other list or value replaced (kfin's simplification of the schema's list types)."""
    if isinstance(current, dict) and isinstance(applied, dict):
        out = dict(current)
        for key, value in applied.items():
            out[key] = _merged_value(current.get(key), value, (*path, str(key)))
        return out
    if path in SET_LISTS and isinstance(current, list) and isinstance(applied, list):
        return current + [item for item in applied if item not in current]
    return copy.deepcopy(applied)


def _hooks(facts: ClusterFacts, obj: KubeObject, after: JSON, request: JSON) -> list[tuple[KubeObject, str]]:
    """(configuration, webhook name) of each mutating webhook an UPDATE of the object calls: its rules, selectors
    and matchConditions (one kfin cannot evaluate counts as matching); one failing open whose backend is down does
    nothing."""
    labels: JSON = {}
    if obj.namespace:
        ns = (facts.namespaces_by_name() or {}).get(obj.namespace)
        labels = (ns.meta.get("labels") or {}) if ns else {}
    found = []
    for config in facts.objects(GROUP, WEBHOOKS, full=True) or []:
        for hook in config.raw.get("webhooks") or []:
            if not any(rule_matches(r, obj.type, "UPDATE") for r in hook.get("rules") or []):
                continue
            if obj.namespace and not selector_matches(hook.get("namespaceSelector"), labels):
                continue
            if not selector_matches(hook.get("objectSelector"), obj.meta.get("labels") or {}):
                continue
            service = (hook.get("clientConfig") or {}).get("service")
            if hook.get("failurePolicy") == "Ignore" and service and backend_problem(hook, facts) is not None:
                continue
            variables = {"object": after, "oldObject": obj.raw, "request": request}
            expressions = [str(c.get("expression") or "") for c in hook.get("matchConditions") or []]
            try:
                conditions = [evaluate(expression, variables) for expression in expressions]
            except UnevaluableError:
                conditions = []
            if not all(value is True for value in conditions):
                continue
            found.append((config, str(hook.get("name"))))
    return found


def said(put_back: list[PutBack], finalizer: str) -> str:
    """Who puts it back, in a sentence."""
    certain = [p for p in put_back if p.certain]
    if certain:
        return "; ".join(f"{p.named} puts it back ({p.how})" for p in certain)
    if len(put_back) == 1:
        [only] = put_back
        return f"{only.named} puts it back, the only mutating admission the UPDATE meets ({only.how})"
    if put_back:
        return "one of these puts it back: " + "; ".join(f"{p.named} ({p.how})" for p in put_back)
    return (
        f"nothing kfin can read puts {finalizer} back: an admission plugin compiled into the API server, or a "
        "configuration kfin may not read"
    )
