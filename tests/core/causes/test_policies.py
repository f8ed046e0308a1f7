"""ValidatingAdmissionPolicies in front of a finalizer's removal (kfin/core/explain/causes/policies.py), on plain values."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from tests.values import facts, obj

KEEP = "example.com/keep"


def policy_and_binding(expression: str, resources: tuple[str, ...] = ("configmaps",), actions=("Deny",)):
    policy = obj("validatingadmissionpolicies.admissionregistration.k8s.io", "keep", spec={
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                                                "resources": list(resources)}]},
        "validations": [{"expression": expression, "message": "it stays"}]})
    binding = obj("validatingadmissionpolicybindings.admissionregistration.k8s.io", "keep",
                  spec={"policyName": "keep", "validationActions": list(actions)})
    return policy, binding


def held(*finalizers: str):
    return obj("cm", "kept", "shop", finalizers=finalizers or (KEEP,), deleting_for=timedelta(hours=1))


def test_a_policy_whose_cel_denies_the_removal_blocks_that_finalizer_only():
    cm = held(KEEP, "example.com/other")
    rules = policy_and_binding(f"has(object.metadata.finalizers) && '{KEEP}' in object.metadata.finalizers")
    kept, other = explain_object(cm, facts(cm, *rules)).findings
    assert kept.verdict == Verdict.BLOCKED and "denies removing it: it stays" in kept.condition
    assert other.verdict != Verdict.BLOCKED  # removing the other one keeps KEEP: allowed


def test_a_policy_that_allows_the_removal_or_is_only_audited_gates_nothing():
    cm = held()
    for rules in (policy_and_binding("true"), policy_and_binding("false", actions=("Audit",)),
                  policy_and_binding("false", resources=("secrets",))):
        [finding] = explain_object(cm, facts(cm, *rules)).findings
        assert finding.verdict != Verdict.BLOCKED


def test_a_policy_reading_more_than_metadata_is_a_possible_gate_named_as_evidence():
    cm = held()
    [finding] = explain_object(cm, facts(cm, *policy_and_binding("object.data.size() > 0"))).findings
    assert finding.verdict != Verdict.BLOCKED
    assert any(e.startswith("possible gate: ValidatingAdmissionPolicy keep") and "object.data.size() > 0" in e
               for e in finding.evidence)


def test_a_policy_that_asks_who_removes_the_finalizer_is_a_possible_gate_not_a_crash():
    """matchConditions reading request.userInfo.username (a policy for one controller's ServiceAccount): kfin's rules
    evaluate an UPDATE without a user, so the policy is a possible gate, named with why (it raised KeyError out of
    the explanation before); a dry run as the controller settles it (tests/scenarios/test_dry_runs.py)."""
    cm = held()
    policy, binding = policy_and_binding("false")
    policy.raw["spec"]["matchConditions"] = [
        {"name": "operator", "expression": "request.userInfo.username == 'system:serviceaccount:shop:operator'"}]
    [finding] = explain_object(cm, facts(cm, policy, binding)).findings
    assert finding.verdict != Verdict.BLOCKED
    assert any(e.startswith(f"possible gate: ValidatingAdmissionPolicy keep (binding keep) matches the removal of "
                            f"{KEEP} (it reads 'userInfo', which kfin does not hold)") for e in finding.evidence)
