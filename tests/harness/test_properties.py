"""The checks tests/properties.py makes of every scenario, each shown failing on an answer that breaks it."""

from tests import properties


def _explained(findings, finalizers=(), kind="ConfigMap", chain=None, plan=None):
    return {"object": {"kind": kind, "finalizers": list(finalizers), "specFinalizers": [], "uid": "u1"},
            "terminating": True, "findings": findings, "chain": chain or {"rootCauses": []}, "plan": plan or {}}


def _finding(finalizer, verdict, field="metadata.finalizers"):
    return {"finalizer": finalizer, "field": field, "verdict": verdict}


def test_stuck_and_explain_must_give_the_same_verdict_finalizer_by_finalizer_and_the_same_root_causes():
    item = {"verdict": "WAITING", "findings": [_finding("a.io/x", "WAITING"), _finding("b.io/y", "ORPHANED")],
            "rootCauses": [{"object": "Pod/ns/p", "actor": None, "verdict": "HOLDING"}]}
    same = _explained([_finding("a.io/x", "WAITING"), _finding("b.io/y", "ORPHANED")], ["a.io/x", "b.io/y"],
                      chain={"rootCauses": [{"object": "Pod/ns/p", "actor": None, "verdict": "HOLDING"}]})
    assert list(properties._disagreements(item, same)) == []
    other = _explained([_finding("a.io/x", "UNKNOWN"), _finding("b.io/y", "ORPHANED")], ["a.io/x", "b.io/y"],
                       chain={"rootCauses": [{"object": "Node/n", "actor": None, "verdict": "WAITING"}]})
    said = list(properties._disagreements(item, other))
    assert said[0] == "stuck says WAITING, explain says UNKNOWN"
    assert said[1] == "finalizer a.io/x: stuck says WAITING, explain says UNKNOWN"
    assert said[2].startswith("root causes differ")


def test_a_namespace_speaks_through_its_kubernetes_finding_when_it_has_no_other_finalizer():
    explained = _explained([_finding("kubernetes", "BLOCKED", "spec.finalizers")], [], kind="Namespace")
    assert properties._main_verdict(explained) == "BLOCKED"


def test_every_finalizer_of_the_object_and_of_its_namespace_conditions_must_be_answered():
    explained = _explained([_finding("a.io/x", "ORPHANED")], ["a.io/x", "b.io/y"])
    assert properties.unaccounted(explained) == ["finalizer b.io/y has no finding"]
    namespace = _explained([_finding("kubernetes", "BLOCKED", "spec.finalizers")], kind="Namespace",
                           plan={"steps": [{"command": "kubectl delete apiservice v1.x.io"}]})
    conditions = [{"type": "NamespaceFinalizersRemaining", "status": "True",
                   "message": "Some content in the namespace has finalizers remaining: acme.io/database-cleanup in 1 "
                              "resource instances, kubernetes.io/pvc-protection in 2 resource instances"}]
    assert properties.unaccounted(namespace, {"conditions": conditions}) == [
        "finalizer acme.io/database-cleanup (named by its conditions or left in it) is not in the answer",
        "finalizer kubernetes.io/pvc-protection (named by its conditions or left in it) is not in the answer"]
    namespace["chain"] = {"edges": [{"finalizer": "acme.io/database-cleanup"},
                                    {"finalizer": "kubernetes.io/pvc-protection"}], "rootCauses": []}
    assert properties.unaccounted(namespace, {"conditions": conditions}) == []


def test_no_command_of_a_plan_may_hold_a_placeholder():
    plan = {"plan": {"steps": [{"command": "kubectl delete apiservice <name>", "note": None,
                                "more": [{"command": "kfin remove cm x", "note": "then run kubectl get <kind>"}]}]}}
    assert properties.placeholders(plan) == ["kubectl delete apiservice <name>: <name>",
                                             "then run kubectl get <kind>: <kind>"]
    fine = {"plan": {"steps": [{"command": "kubectl get pods -l 'a in (x)' --field-selector a!=b", "more": []}]}}
    assert properties.placeholders(fine) == []
