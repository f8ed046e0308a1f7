"""The dry run of a finalizer's removal decides (kfin/core/explain/causes/dryrun.py), and what puts a finalizer back at
admission is named (kfin/core/explain/causes/mutating.py), on plain values: the server's answers are given to the facts as
a scan would have kept them."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from kfin.core.explain.causes.dryrun import own_removal
from kfin.core.explain.causes.mutating import putting_back
from kfin.model import Answer
from kfin.util.celobjects import as_maps
from tests.values import custom_type, facts, obj

WIDGETS = custom_type()
KEEP = "example.com/keep"
REMOVE = f"kfin remove widgets.example.com w1 -n shop --finalizer {KEEP} --confirm"


def widget():
    return obj(WIDGETS, "w1", "shop", finalizers=(KEEP,), deleting_for=timedelta(hours=1))


def policy(mutation: dict, conditions: tuple[str, ...] = ()) -> tuple:
    """A MutatingAdmissionPolicy on UPDATE of Widgets, and its binding."""
    spec = {"matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                                                    "operations": ["UPDATE"], "resources": ["widgets"]}]},
            "matchConditions": [{"name": f"c{i}", "expression": e} for i, e in enumerate(conditions)],
            "mutations": [mutation], "reinvocationPolicy": "Never", "failurePolicy": "Fail"}
    return (obj("mutatingadmissionpolicies.admissionregistration.k8s.io", "keep", spec=spec),
            obj("mutatingadmissionpolicybindings.admissionregistration.k8s.io", "keep-binding",
                spec={"policyName": "keep"}))


def url_webhook(kind: str = "mutatingwebhookconfigurations") -> object:
    return obj(f"{kind}.admissionregistration.k8s.io", "hooks", webhooks=[{
        "name": "hook.example.com", "failurePolicy": "Fail", "clientConfig": {"url": "https://hooks.example.com/"},
        "rules": [{"operations": ["UPDATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"],
                   "resources": ["widgets"]}]}])


def answered(w, *objects, finalizers: tuple[str, ...] | None = ()):
    """Facts over `objects` whose server answered kfin's removal of KEEP with the object holding `finalizers` (None:
    no dry run sent)."""
    known = facts(w, *objects, extra_types=(WIDGETS,))
    if finalizers is not None:
        known.reader.answers.dry_runs[own_removal(w, KEEP)] = Answer(200, "", "", None, {}, finalizers)
    return known


def test_cel_object_construction_is_read_as_the_map_it_stands_for():
    assert as_maps('[JSONPatch{op: "add", path: "/a", value: Object.x{y: 1}}]') == \
        '[{"op": "add", "path": "/a", "value": {"y": 1}}]'
    assert as_maps('"x" in {"x": 1} && r"JSONPatch{op: 1}" != \'{\'') == '"x" in {"x": 1} && r"JSONPatch{op: 1}" != \'{\''


def test_a_policy_that_puts_the_finalizer_back_is_blocked_and_named_with_the_removal_after_it():
    w = widget()
    rules = policy({"patchType": "ApplyConfiguration",
                    "applyConfiguration": {"expression": f"Object{{metadata: Object.metadata{{finalizers: ['{KEEP}']}}}}"}})
    [finding] = explain_object(w, answered(w, *rules, finalizers=(KEEP,))).findings
    assert finding.verdict == Verdict.BLOCKED and finding.answered == "kept"
    assert finding.condition == (f"the server accepts the removal of {KEEP} but puts it back at admission: "
                                 "MutatingAdmissionPolicy keep (binding keep-binding) puts it back (its "
                                 "ApplyConfiguration mutation adds it)")
    [link] = finding.links
    assert link.target is rules[0] and [a.command for a in link.step] == [
        None, "kubectl delete mutatingadmissionpolicybinding keep-binding", REMOVE]
    assert finding.remove_command is None


def test_a_policy_kfin_cannot_evaluate_and_a_webhook_are_named_as_candidates_only_when_none_is_certain():
    w = widget()
    unreadable = policy({"patchType": "JSONPatch", "jsonPatch": {"expression": "object.spec.x"}})
    hook = url_webhook()
    [finding] = explain_object(w, answered(w, *unreadable, hook, finalizers=(KEEP,))).findings
    assert finding.verdict == Verdict.BLOCKED
    assert "one of these puts it back: MutatingAdmissionPolicy keep (binding keep-binding) (kfin could not " \
           "evaluate it: it reads more of the object than its metadata); webhook hook.example.com of " \
           "MutatingWebhookConfiguration hooks" in finding.condition
    assert [link.target for link in finding.links] == [unreadable[0], hook]
    readds = policy({"patchType": "JSONPatch", "jsonPatch": {
        "expression": f"[JSONPatch{{op: 'add', path: '/metadata/finalizers', value: ['{KEEP}']}}]"}},
        conditions=("!has(object.metadata.finalizers)",))
    found = putting_back(answered(w, *readds, hook), w, KEEP, None)
    assert [(p.named, p.certain) for p in found] == [
        ("MutatingAdmissionPolicy keep (binding keep-binding)", True),
        ("webhook hook.example.com of MutatingWebhookConfiguration hooks", False)]
    # its matchConditions false: it does not put it back
    skipped = policy(readds[0].raw["spec"]["mutations"][0], conditions=("has(object.metadata.finalizers)",))
    assert [p.named for p in putting_back(answered(w, *skipped), w, KEEP, None)] == []


def test_a_working_url_webhook_is_no_gate_once_the_server_accepted_the_removal():
    w = widget()
    [finding] = explain_object(w, answered(w, url_webhook("validatingwebhookconfigurations"))).findings
    assert finding.verdict == Verdict.ORPHANED and finding.answered == "removed" and finding.remove_command == REMOVE
    assert "ValidatingWebhookConfiguration hooks matches the removal, and the server accepted it: no gate" \
        in finding.evidence


def test_without_a_dry_run_the_configuration_judges_and_says_it_was_not_checked():
    w = widget()
    [finding] = explain_object(w, answered(w, url_webhook(), finalizers=None)).findings
    assert finding.verdict == Verdict.BLOCKED and finding.answered is None
    assert "which kfin cannot check" in finding.condition
    assert "judged from configuration alone: a snapshot has no server to ask: no dry run was sent" in finding.evidence


def test_without_a_dry_run_a_policy_that_puts_the_finalizer_back_is_judged_from_its_configuration():
    w = widget()
    rules = policy({"patchType": "JSONPatch", "jsonPatch": {
        "expression": f"has(object.metadata.finalizers) ? [JSONPatch{{op: 'add', path: '/metadata/finalizers/-', "
                      f"value: '{KEEP}'}}] : [JSONPatch{{op: 'add', path: '/metadata/finalizers', value: ['{KEEP}']}}]"}},
        conditions=(f"!has(object.metadata.finalizers) || !('{KEEP}' in object.metadata.finalizers)",))
    [finding] = explain_object(w, answered(w, *rules, finalizers=None)).findings
    assert finding.verdict == Verdict.BLOCKED and finding.answered is None
    assert finding.condition == (f"MutatingAdmissionPolicy keep (binding keep-binding) puts {KEEP} back on every "
                                 "UPDATE that removes it (its JSONPatch mutation adds it)")
    assert "judged from configuration alone: a snapshot has no server to ask: no dry run was sent" in finding.evidence
    unreadable = policy({"patchType": "JSONPatch", "jsonPatch": {"expression": "object.spec.x"}})
    [finding] = explain_object(w, answered(w, *unreadable, finalizers=None)).findings
    assert finding.verdict == Verdict.ORPHANED
    assert any(e.startswith(f"possible gate: MutatingAdmissionPolicy keep (binding keep-binding) may put {KEEP} back")
               for e in finding.evidence), finding.evidence
