"""Removal planning (kfin/core/remove/plan.py): which finalizers a plan selects, which it refuses and why, and
the guarded patch it would send; on plain values, nothing is sent."""

import copy
from datetime import timedelta

import pytest

from kfin.core.remove.apply import Remover
from kfin.core.explain.causes import Verdict, explain_object
from kfin.core.remove.plan import plan, requests_preview
from kfin.errors import APIError
from kfin.model import MANAGERS, metadata_patch
from tests.values import custom_type, facts, lease, obj, pod

DELETING = timedelta(hours=1)
WIDGETS = custom_type()


def orphaned_widget():
    w = obj(WIDGETS, "w1", "shop", finalizers=("example.com/cleanup", "example.com/other"), deleting_for=DELETING)
    return w, explain_object(w, facts(w, extra_types=(WIDGETS,))).findings


def held_claim():
    claim = obj("pvc", "data", "shop", finalizers=("kubernetes.io/pvc-protection",), deleting_for=DELETING)
    return claim, explain_object(claim, facts(claim, pod("db-0", "shop", claims=("data",)), lease())).findings


def test_by_default_only_orphaned_finalizers_are_selected():
    w, findings = orphaned_widget()
    assert {f.verdict for f in findings} == {Verdict.ORPHANED}
    chosen = plan(w, findings, None, force=False, allow_live=False)
    assert [f.finalizer for f in chosen.selected] == ["example.com/cleanup", "example.com/other"]
    assert chosen.refused is None


def test_a_holding_finalizer_named_explicitly_is_refused_with_its_safe_fix_unless_forced():
    claim, findings = held_claim()
    refused = plan(claim, findings, ["kubernetes.io/pvc-protection"], force=False, allow_live=False)
    [choice] = refused.blocked
    assert choice.refused.startswith("it is HOLDING: in use by 1 scheduled Pod: Pod shop/db-0")
    assert choice.refused.endswith(f"Safe fix: {choice.finding.fix}")
    forced = plan(claim, findings, ["kubernetes.io/pvc-protection"], force=True, allow_live=False)
    assert forced.selected and "forced although it is HOLDING" in forced.choices[0].warning


def test_nothing_is_selected_by_default_when_something_still_holds():
    claim, findings = held_claim()
    refused = plan(claim, findings, None, force=False, allow_live=False).refused
    # the safe fix leads; forcing comes last (issue 29)
    assert refused.startswith("no finalizer is safe to remove. Safe fix: stop what uses the claim: delete Pod shop/db-0")
    assert refused.endswith("Only if that cannot be done: --finalizer NAME --force")


def stalled_widget():
    """Its controller (the field manager that added the finalizer) is installed but scaled to zero."""
    w = obj(WIDGETS, "w1", "shop", finalizers=("example.com/cleanup",), deleting_for=DELETING,
            **{MANAGERS: {"example.com/cleanup": "widget-operator"}})
    operator = obj("deploy.apps", "widget-operator", "operators", spec={"replicas": 0, "template": {"spec": {}}},
                   status={})
    return w, explain_object(w, facts(w, operator, extra_types=(WIDGETS,))).findings


def test_a_stalled_finalizer_is_never_selected_by_default_and_named_it_is_removed_with_the_fix_as_warning():
    """Issue 40: STALLED is not ORPHANED: its controller is there, and once fixed it cleans up. Neither a plain
    remove nor --all-stuck selects it; named by --finalizer it goes (no --force: kfin knows what holds it),
    with a warning naming what would let the controller clean up instead."""
    w, findings = stalled_widget()
    assert [f.verdict for f in findings] == [Verdict.STALLED]
    default = plan(w, findings, None, force=False, allow_live=False)
    assert not default.selected
    assert default.refused.startswith("no finalizer is safe to remove. Safe fix: fix or scale up Deployment "
                                      "operators/widget-operator")
    assert "(example.com/cleanup is STALLED)" in default.refused
    named = plan(w, findings, ["example.com/cleanup"], force=False, allow_live=False)
    [choice] = named.choices
    assert choice.selected and choice.refused is None and named.refused is None
    assert choice.warning.startswith("its controller is there but cannot act (its controller Deployment "
                                     "operators/widget-operator")
    assert choice.warning.endswith("fix or scale up Deployment operators/widget-operator: running, it removes the "
                                   "finalizer")


def test_a_live_object_is_refused_unless_allowed():
    w = obj(WIDGETS, "w1", "shop", finalizers=("example.com/cleanup",))
    findings = explain_object(w, facts(w, extra_types=(WIDGETS,))).findings
    assert "not being deleted" in plan(w, findings, ["example.com/*"], force=False, allow_live=False).refused
    assert plan(w, findings, ["example.com/*"], force=False, allow_live=True).refused is None


def test_patterns_that_match_nothing_are_refused_naming_what_is_there():
    w, findings = orphaned_widget()
    refused = plan(w, findings, ["acme.io/*"], force=False, allow_live=False).refused
    assert refused == "none of its finalizers (example.com/cleanup, example.com/other) matches acme.io/*"


def test_the_patch_tests_the_uid_and_the_whole_list_then_removes_from_the_end():
    ops = metadata_patch("uid-1", ["a/x", "b/y", "c/z"], ["a/x", "c/z"])
    assert ops == [{"op": "test", "path": "/metadata/uid", "value": "uid-1"},
                   {"op": "test", "path": "/metadata/finalizers", "value": ["a/x", "b/y", "c/z"]},
                   {"op": "remove", "path": "/metadata/finalizers/2"},
                   {"op": "remove", "path": "/metadata/finalizers/0"}]


def test_the_preview_names_the_request_with_its_percent_encoded_path():
    w, findings = orphaned_widget()
    chosen = plan(w, findings, ["example.com/cleanup"], force=False, allow_live=False)
    preview = requests_preview(chosen)
    assert preview[0] == "PATCH /apis/example.com/v1/namespaces/shop/widgets/w1 (application/json-patch+json)"
    assert '"path": "/metadata/finalizers/0"' in preview[1] and "finalizers/1" not in preview[1]


def test_changes_between_two_scans_are_named_as_kubectl_w_names_them():
    """kfin stuck --watch: ADDED, MODIFIED (verdict, blocker or finalizers changed), DELETED."""
    from msgspec.structs import replace

    from kfin.core.explain.stuck import StuckObject, changes, row_key

    claim, _ = held_claim()
    row = StuckObject(claim, 60.0, finalizers=["kubernetes.io/pvc-protection"], families=["pvc-protection"],
                      blocker="pvc-protection: in use",
                      verdict="HOLDING")
    assert [e for e, _ in changes({}, [row])] == ["ADDED"]
    before = {row_key(row): row}
    assert changes(before, [replace(row, terminating_seconds=120.0)]) == []  # only older: no change
    assert [e for e, _ in changes(before, [replace(row, verdict="WAITING")])] == ["MODIFIED"]
    assert [e for e, _ in changes(before, [])] == ["DELETED"]


def orphaned_ack_bucket():
    """Issue 44: an ACK Bucket whose controller is gone (no RBAC grants update on it: ORPHANED), whose finalizer
    guards the AWS bucket outside the cluster."""
    buckets = custom_type("buckets", "s3.services.k8s.aws", "Bucket")
    b = obj(buckets, "logs", "shop", finalizers=("finalizers.s3.services.k8s.aws/Bucket",), deleting_for=DELETING)
    return b, explain_object(b, facts(b, extra_types=(buckets,))).findings


def test_a_bulk_removal_never_takes_an_infrastructure_finalizer_without_force_even_orphaned():
    b, findings = orphaned_ack_bucket()
    assert [(f.verdict, f.infrastructure) for f in findings] == [(Verdict.ORPHANED, "the AWS resource it represents")]
    bulk = plan(b, findings, None, force=False, allow_live=False, bulk=True)
    [choice] = bulk.blocked
    assert not bulk.selected
    assert choice.refused.startswith("it guards infrastructure outside the cluster (the AWS resource it "
                                     "represents), left behind once it is removed. Safe fix: ")
    assert choice.refused.endswith("A bulk removal takes such a finalizer only with --force, once what it guards "
                                   "is cleaned up by hand")
    named = plan(b, findings, ["finalizers.s3.services.k8s.aws/*"], force=False, allow_live=False, bulk=True)
    assert not named.selected and named.blocked  # naming it is not forcing it
    forced = plan(b, findings, None, force=True, allow_live=False, bulk=True)
    assert [f.finalizer for f in forced.selected] == ["finalizers.s3.services.k8s.aws/Bucket"]
    assert forced.choices[0].warning.startswith("forced although it guards infrastructure outside the cluster")


def test_one_object_s_removal_takes_an_orphaned_infrastructure_finalizer_its_risk_said_first():
    b, findings = orphaned_ack_bucket()
    one = plan(b, findings, None, force=False, allow_live=False)
    assert [f.finalizer for f in one.selected] == ["finalizers.s3.services.k8s.aws/Bucket"]
    assert one.selected[0].risk.startswith("it guards infrastructure outside the cluster (the AWS resource")


class RefusingKube:
    """A cluster whose API server answers every PATCH with `message` (403), as an admission plugin, a webhook or
    RBAC words it; reads give the object as it was."""

    def __init__(self, obj, message):
        self.obj, self.message = obj, message

    def read_object_or_none(self, *_):
        return self.obj.raw

    def patch_object(self, *_):
        raise APIError(self.message, 403, "Forbidden")


@pytest.mark.parametrize("message, named", [
    # Gardener's FinalizerRemoval (plugin/pkg/global/finalizerremoval/admission.go, v1.149.3), through
    # admission.NewForbidden: the resource and name, "is forbidden:", then its reason
    ('shoots.core.gardener.cloud "prod" is forbidden: finalizer "gardener" cannot be removed because shoot deletion '
     "has not completed successfully yet", True),
    ('shoots.core.gardener.cloud "prod" is forbidden: User "dev" cannot patch resource "shoots" in API group '
     '"core.gardener.cloud" in the namespace "garden-dev"', False),
    ('admission webhook "validate.example.com" denied the request: no', False),
])
def test_a_refusal_by_an_admission_plugin_of_the_server_is_named_as_such(message, named):
    """Issue 44, item 5: a removal the API server refuses by itself (no webhook or policy kfin could find, nor
    RBAC) is said to come from an admission plugin compiled into it, Gardener's FinalizerRemoval for its finalizer;
    the others keep the server's words."""
    shoots = custom_type("shoots", "core.gardener.cloud", "Shoot")
    shoot = obj(shoots, "prod", "garden-dev", finalizers=("gardener",), deleting_for=DELETING)
    findings = explain_object(shoot, facts(shoot, extra_types=(shoots,))).findings
    chosen = plan(shoot, findings, ["gardener"], force=True, allow_live=False)
    with pytest.raises(APIError) as raised:
        Remover(RefusingKube(shoot, message), lambda _: facts(shoot)).apply(chosen)
    if named:
        assert raised.value.message == (
            "refused by an admission plugin of the API server itself (Gardener's FinalizerRemoval, which keeps the "
            "gardener finalizer until the Shoot's deletion succeeded or no Shoot uses the binding), not by a webhook "
            f"or a policy: {message}")
    else:
        assert raised.value.message == message


class QuickerWriterKube:
    """A live controller quicker than kfin's read-back: the PATCH's answer has the finalizer gone, and the very
    next read already holds it again, written by the controller's field manager."""

    def __init__(self, obj, finalizer, manager):
        self.obj, self.finalizer, self.manager = obj, finalizer, manager
        self.patched = False

    def read_object_or_none(self, *_):
        raw = copy.deepcopy(self.obj.raw)
        if self.patched:
            raw["metadata"]["managedFields"] = [{"manager": self.manager, "operation": "Update", "fieldsV1": {
                "f:metadata": {"f:finalizers": {f'v:"{self.finalizer}"': {}}}}}]
        return raw

    def patch_object(self, *_):
        self.patched = True
        answer = copy.deepcopy(self.obj.raw)
        answer["metadata"]["finalizers"] = []
        return answer


def test_a_finalizer_put_back_before_kfin_reads_again_names_its_writer():
    """The controller put the finalizer back between the write's answer (which had it gone) and kfin's first read
    after it: that is a put-back by that controller, named as such, not 'the server answered OK but it is still
    there'; the record says kfin removed it, and that it is there again."""
    cm = obj("configmaps", "wanted", "shop", finalizers=("example.com/a",))
    findings = explain_object(cm, facts(cm)).findings
    chosen = plan(cm, findings, ["example.com/a"], force=True, allow_live=True)
    outcome = Remover(QuickerWriterKube(cm, "example.com/a", "widget-operator"), lambda _: facts(cm)).apply(chosen)
    assert outcome.result == "put-back", outcome
    assert outcome.message.startswith('example.com/a was removed, then put back within 1.5 s by field manager '
                                      '"widget-operator"'), outcome.message
    assert outcome.removed == ["example.com/a"] and outcome.after == ["example.com/a"]
