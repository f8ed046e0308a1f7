"""Objects kube-apiserver cannot read from storage (KEP-3926), on plain values: the failed lists as the real v1.36.2
tier answered them (tests/fakeapi/undecodable.py quotes them), with the AllowUnsafeMalformedObjectDeletion gate on
(StorageReadError, the keys in details.causes) and off (the decoder's bare error)."""

from datetime import timedelta

from kfin.api import discovery
from kfin.api.connection import Kube, Target
from kfin.api.discovery import failure_of
from kfin.api.scan import read_objects
from kfin.core.explain.causes import Verdict, explain_object
from kfin.core.explain.causes.unreadable import list_failure_causes
from kfin.errors import KfinError
from kfin.model import Failure
from tests.fakeapi import undecodable
from tests.values import facts, lease, obj

PROTO_ERROR = "proto: wrong wireType = 7 for field TypeMeta"
KEY = "/registry/configmaps/team-a/broken"
GATE_ON = Failure("list", "configmaps", "StorageReadError",
                  "failed to read one or more configmaps from the storage (500 StorageReadError)", (KEY,))
GATE_OFF = Failure("list", "configmaps in namespace team-a", "Error", f"{PROTO_ERROR} (500 Internal Server Error)")


def namespace(failure: str = ""):
    conditions = [{"type": "NamespaceDeletionContentFailure", "status": "True", "reason": "ContentDeletionFailed",
                   "message": f"Failed to delete all resource types, 1 remaining: {failure}"}] if failure else []
    return obj("namespaces", "team-a", deleting_for=timedelta(hours=1), spec={"finalizers": ["kubernetes"]},
               status={"phase": "Terminating", "conditions": conditions})


def test_a_storage_read_error_names_the_keys_and_the_unsafe_delete_of_each():
    ns = namespace("failed to read one or more configmaps from the storage")
    [finding] = explain_object(ns, facts(ns, lease(), failures=(GATE_ON,))).findings
    assert finding.verdict == Verdict.BLOCKED
    assert f"configmaps in namespace team-a from storage (keys {KEY}: failed to read" in finding.condition
    assert "the AllowUnsafeMalformedObjectDeletion feature gate is on (the API server answered StorageReadError)" \
        in finding.evidence
    assert ("echo '{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"ignoreStoreReadErrorWithClusterBreakingPotential"
            "\":true}' | kubectl delete --raw /api/v1/namespaces/team-a/configmaps/broken -f -") in finding.fix
    # a snapshot asks no SelfSubjectAccessReview: it says so, never that the user has the verb
    assert "it needs the verb unsafe-delete-ignore-read-errors on configmaps in namespace team-a (kfin did not " \
           "check whether you have it)" in finding.evidence
    assert "finalizers, preconditions and the type's after-delete hooks are skipped" in finding.risk
    assert [link.actor for link in finding.links] == [f"storage of configmaps in namespace team-a ({KEY})"]


def test_a_bare_decode_error_the_namespace_controller_reports_too_blocks_it():
    ns = namespace(PROTO_ERROR)
    [finding] = explain_object(ns, facts(ns, lease(), failures=(GATE_OFF,))).findings
    assert finding.verdict == Verdict.BLOCKED
    assert any(e.startswith("the AllowUnsafeMalformedObjectDeletion feature gate is off on the API server that "
                            "answered") for e in finding.evidence)
    assert "etcdctl get --prefix --keys-only /registry/configmaps/team-a/" in finding.fix


def test_a_decode_error_the_controller_does_not_report_yet_is_unknown_never_empty():
    ns = namespace()
    [finding] = explain_object(ns, facts(ns, lease(), failures=(GATE_OFF,))).findings
    assert finding.verdict == Verdict.UNKNOWN
    assert "configmaps in namespace team-a" in finding.condition and "empty" not in finding.condition
    assert "its condition does not say so yet" in finding.condition


def test_the_warning_names_the_cause_once_per_type():
    wide = Failure("list", "configmaps", "Error", f"{PROTO_ERROR} (500 Internal Server Error)")
    causes = list_failure_causes(facts(lease(), failures=(wide, GATE_OFF)))
    assert list(causes) == ["configmaps"]
    assert causes["configmaps"].startswith("kube-apiserver cannot read what it stored of configmaps: ")


def test_a_storage_read_error_keeps_its_keys_in_a_snapshot():
    assert GATE_ON.to_dict()["keys"] == [KEY] and "keys" not in GATE_OFF.to_dict()


def test_kfins_list_keeps_the_keys_a_storage_read_error_names(fake, fake_kubeconfig):
    """Through kfin's own transport: the fake with the gate on answers the list as the real tier did (details.causes,
    one per key), and kfin's failure keeps the keys and the reason."""

    cluster = fake.cluster
    cluster.feature_gates = set(getattr(cluster, "feature_gates", None) or ()) | {undecodable.GATE}
    rtype = cluster.types[("", "configmaps")]
    key = undecodable.write(cluster, rtype, "team-a", "broken")
    kube = Kube.connect(Target(str(fake_kubeconfig)))
    configmaps = next(r for r in kube_types(kube) if r.qualified == "configmaps")
    try:
        read_objects(kube, configmaps, None)
    except KfinError as error:
        failure = failure_of("list", "configmaps", error)
    else:
        raise AssertionError("the list of configmaps did not fail")
    assert (failure.reason, failure.keys) == ("StorageReadError", (key,))
    assert failure.message == "failed to read one or more configmaps from the storage (500 StorageReadError)"


def kube_types(kube):
    types, _ = discovery.discover(kube, refresh=True)
    return types
