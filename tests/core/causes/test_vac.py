"""VolumeAttributesClasses (vac-protection in kfin/core/explain/causes/storage.py): held while a claim or volume names
the class, where pkg/controller/volume/vacprotection looks (spec, and a claim's current and target class)."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from tests.values import facts, lease, obj

FINALIZER = "kubernetes.io/vac-protection"


def vac():
    return obj("volumeattributesclasses.storage.k8s.io", "gold", finalizers=(FINALIZER,),
               deleting_for=timedelta(minutes=5), driverName="csi.example.com")


def test_a_class_named_by_a_claim_is_held_by_it():
    gold = vac()
    claim = obj("pvc", "data", "shop", spec={"volumeAttributesClassName": "gold"})
    [finding] = explain_object(gold, facts(gold, claim, lease())).findings
    assert finding.verdict == Verdict.HOLDING
    assert [link.target.name for link in finding.links] == ["data"]


def test_a_claim_still_moving_to_the_class_holds_it_too():
    gold = vac()
    moving = obj("pvc", "data", "shop", spec={"volumeAttributesClassName": "silver"},
                 status={"modifyVolumeStatus": {"targetVolumeAttributesClassName": "gold", "status": "InProgress"}})
    [finding] = explain_object(gold, facts(gold, moving, lease())).findings
    assert finding.verdict == Verdict.HOLDING


def test_an_unused_class_waits_for_the_controller():
    gold = vac()
    other = obj("pvc", "data", "shop", spec={"volumeAttributesClassName": "silver"})
    [finding] = explain_object(gold, facts(gold, other, lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True
