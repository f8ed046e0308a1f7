"""ValidatingAdmissionPolicies that deny the removal of a finalizer: kube-apiserver evaluates them on every
UPDATE they match, a finalizer's removal included (kfin's, and its controller's own). kfin evaluates the
policy's CEL on the object without that finalizer, with the `cel` package (common-expression-language),
where the expressions read only what kfin holds (metadata); otherwise it names the policy as a possible gate,
with its expression."""

from __future__ import annotations

import copy
import re

from msgspec import Struct

from kfin.core.explain.causes.registry import EVERYWHERE, Action, Link, gates
from kfin.core.explain.causes.webhooks import rule_matches, selector_matches
from kfin.core.read.facts import ClusterFacts
from kfin.model import JSON, KubeObject
from kfin.util.celobjects import as_maps

GROUP = "admissionregistration.k8s.io"
POLICIES, BINDINGS = "validatingadmissionpolicies", "validatingadmissionpolicybindings"
# object.metadata..., oldObject.metadata...: what kfin holds of every object; anything else it may not
FIELD_READ = re.compile(r"\b(?:object|oldObject)\.(\w+)")


class UnevaluableError(Exception):
    """kfin cannot tell what the expression answers for the real object."""


def evaluate(expression: str, variables: JSON) -> object:
    """The CEL expression's value (an object it constructs, a MutatingAdmissionPolicy's JSONPatch or
    ApplyConfiguration, as a map); UnevaluableError when it reads beyond metadata or does not evaluate here (an
    extension function of kube-apiserver's, params, the authorizer)."""
    if any(field != "metadata" for field in FIELD_READ.findall(expression)):
        raise UnevaluableError("it reads more of the object than its metadata")
    import cel  # 0.2 s to import: only when a policy matches an object being explained

    try:
        return cel.evaluate(as_maps(expression), variables)
    except KeyError as error:  # request.userInfo on an UPDATE kfin evaluates: only the request knows who sends it
        raise UnevaluableError(f"it reads {error}, which kfin does not hold") from None
    except (ValueError, TypeError, RuntimeError) as error:
        raise UnevaluableError(str(error).splitlines()[0] if str(error) else type(error).__name__) from None


def matches_resources(resources: JSON | None, obj: KubeObject, namespace_labels: JSON, operation: str) -> bool:
    """matchConstraints or a binding's matchResources: rules, exclusions and selectors (None matches all)."""
    if not resources:
        return True
    rules = resources.get("resourceRules")
    if rules is not None and not any(rule_matches(rule, obj.type, operation) for rule in rules):
        return False
    if any(rule_matches(rule, obj.type, operation) for rule in resources.get("excludeResourceRules") or []):
        return False
    if obj.namespace and not selector_matches(resources.get("namespaceSelector"), namespace_labels):
        return False
    return selector_matches(resources.get("objectSelector"), obj.meta.get("labels") or {})


def _without(obj: KubeObject, finalizer: str) -> JSON:
    after = copy.deepcopy(obj.raw)
    after["metadata"]["finalizers"] = [f for f in obj.finalizers if f != finalizer]
    return after


def bound(
    facts: ClusterFacts, obj: KubeObject, operation: str, kinds: tuple[str, str] = (POLICIES, BINDINGS)
) -> list[tuple[KubeObject, KubeObject, JSON]]:
    """(policy, binding, policy spec) of each binding whose policy and binding match `operation` on the object:
    of ValidatingAdmissionPolicies that deny (validationActions Deny), or of the (policies, bindings) `kinds`
    given (MutatingAdmissionPolicies: kfin.core.explain.causes.mutating)."""
    policies = {p.name: p for p in facts.objects(GROUP, kinds[0], full=True) or []}
    if not policies:
        return []
    labels: JSON = {}
    if obj.namespace:
        ns = (facts.namespaces_by_name() or {}).get(obj.namespace)
        labels = (ns.meta.get("labels") or {}) if ns else {}
    out = []
    for binding in facts.objects(GROUP, kinds[1], full=True) or []:
        spec = binding.raw.get("spec") or {}
        policy = policies.get(str(spec.get("policyName") or ""))
        if policy is None or (kinds[1] == BINDINGS and "Deny" not in (spec.get("validationActions") or [])):
            continue
        policy_spec = policy.raw.get("spec") or {}
        if matches_resources(policy_spec.get("matchConstraints"), obj, labels, operation) and matches_resources(
            spec.get("matchResources"), obj, labels, operation
        ):
            out.append((policy, binding, policy_spec))
    return out


@gates(reads=((GROUP, POLICIES, EVERYWHERE), (GROUP, BINDINGS, EVERYWHERE)))
def denying_policies(obj: KubeObject, facts: ClusterFacts) -> list[Link]:
    return [
        link for policy, binding, spec in bound(facts, obj, "UPDATE") for link in _denials(obj, policy, binding, spec)
    ]


class Denial(Struct):
    """A bound ValidatingAdmissionPolicy that denies (or, where kfin cannot evaluate it, may deny) a DELETE."""

    policy: KubeObject
    binding: KubeObject
    message: str
    certain: bool

    @property
    def step(self) -> tuple[Action, ...]:
        return _step(self.policy, self.binding, "the deletion")


def denied_deletes(facts: ClusterFacts, objects: list[KubeObject], user: str) -> list[Denial]:
    """Each bound policy that denies the DELETE of one of the objects by `user` (request.userInfo.username): the
    namespace controller's of a namespace's content, the garbage collector's of dependents. kube-apiserver
    evaluates a DELETE with `object` null and the deleted object as `oldObject`. Once per policy and binding."""
    found: dict[tuple[str, str], Denial] = {}
    for obj in objects:
        for policy, binding, spec in bound(facts, obj, "DELETE"):
            key = (policy.uid, binding.uid)
            if key in found and found[key].certain:
                continue
            variables = {
                "object": None,
                "oldObject": obj.raw,
                "request": {
                    "operation": "DELETE",
                    "namespace": obj.namespace,
                    "name": obj.name,
                    "userInfo": {"username": user},
                },
            }
            try:
                if not all(
                    evaluate(c.get("expression") or "", variables) is True for c in spec.get("matchConditions") or []
                ):
                    continue
                failed = next(
                    (
                        v
                        for v in spec.get("validations") or []
                        if evaluate(v.get("expression") or "", variables) is not True
                    ),
                    None,
                )
            except UnevaluableError as error:
                if (spec.get("failurePolicy") or "Fail") == "Fail" and key not in found:
                    found[key] = Denial(policy, binding, f"kfin could not evaluate it ({error})", False)
                continue
            if failed is not None:
                message = failed.get("message") or f"failed expression: {failed.get('expression')}"
                found[key] = Denial(policy, binding, f"{message} ({obj.type.qualified} {obj.name})", True)
    return list(found.values())


def _step(policy: KubeObject, binding: KubeObject, what: str) -> tuple[Action, ...]:
    return (
        Action(
            None,
            note=f"change ValidatingAdmissionPolicy {policy.name} (or its binding {binding.name}) so that it allows "
            f"{what}",
        ),
        Action(
            f"kubectl delete validatingadmissionpolicybinding {binding.name}",
            when="instead, if what it enforces is obsolete",
        ),
    )


RISK = "changing or unbinding the policy lifts what it enforces for every object it matches"


def _denials(obj: KubeObject, policy: KubeObject, binding: KubeObject, spec: JSON) -> list[Link]:
    """A Link for each finalizer whose removal the policy denies (or may deny)."""
    fail_closed = (spec.get("failurePolicy") or "Fail") == "Fail"
    named = f"ValidatingAdmissionPolicy {policy.name} (binding {binding.name})"
    step = _step(policy, binding, "the removal")
    risk = RISK
    denied: dict[str, str] = {}
    possible: list[str] = []
    for finalizer in obj.finalizers:
        variables = {
            "object": _without(obj, finalizer),
            "oldObject": obj.raw,
            "request": {"operation": "UPDATE", "namespace": obj.namespace, "name": obj.name},
        }
        try:
            if not all(
                evaluate(c.get("expression") or "", variables) is True for c in spec.get("matchConditions") or []
            ):
                continue
            for validation in spec.get("validations") or []:
                if evaluate(validation.get("expression") or "", variables) is not True:
                    denied[finalizer] = (
                        validation.get("message") or f"failed expression: {validation.get('expression')}"
                    )
                    break
        except UnevaluableError as error:
            if fail_closed:
                possible.append(f"{finalizer} ({error})")
    links = [
        Link(
            "admission-policy",
            f"{named} denies removing it: {message}",
            target=policy,
            step=step,
            family="admission-policy",
            risk=risk,
            finalizers=(finalizer,),
        )
        for finalizer, message in denied.items()
    ]
    if possible:
        expressions = "; ".join(str(v.get("expression")) for v in spec.get("validations") or [])
        links.append(
            Link(
                "admission-policy",
                f"{named} matches the removal of {', '.join(possible)} and kfin could not evaluate it: {expressions}",
                target=policy,
                possible=True,
            )
        )
    return links
