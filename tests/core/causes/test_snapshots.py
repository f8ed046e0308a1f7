"""Volume snapshot finalizers (kfin/core/explain/causes/snapshots.py), names as external-snapshotter's pkg/utils/util.go
and external-provisioner's pkg/controller/controller.go spell them, on plain values."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from kfin.core.read.catalog import Catalog
from kfin.core.explain.causes.registry import family
from kfin.model import ResourceType
from tests.values import facts, obj

SNAPSHOT = ResourceType("snapshot.storage.k8s.io", "v1", "volumesnapshots", "VolumeSnapshot", True)
CONTENT = ResourceType("snapshot.storage.k8s.io", "v1", "volumesnapshotcontents", "VolumeSnapshotContent", False)
DELETING = timedelta(minutes=10)


def snapshot(name: str = "snap", ready: bool = True, finalizers: tuple[str, ...] = (), content: str = "c1"):
    return obj(SNAPSHOT, name, "shop", finalizers=finalizers, deleting_for=DELETING if finalizers else None,
               spec={"source": {"persistentVolumeClaimName": "data"}},
               status={"readyToUse": ready, "boundVolumeSnapshotContentName": content})


def test_each_finalizer_has_its_own_cause():
    for name, cause in [("snapshot.storage.kubernetes.io/pvc-as-source-protection", "snapshot-source"),
                        ("snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection", "snapshot-restore"),
                        ("provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection", "snapshot-restore"),
                        ("provisioner.storage.kubernetes.io/cloning-protection", "clone-source"),
                        ("snapshot.storage.kubernetes.io/volumesnapshot-bound-protection", "snapshot-bound"),
                        ("snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection", "content-bound"),
                        ("snapshot.storage.kubernetes.io/volumesnapshot-in-group-protection", "volume-snapshot")]:
        assert family(name, Catalog()).name == cause, name


def test_a_claim_is_held_while_a_snapshot_of_it_is_being_taken():
    claim = obj("pvc", "data", "shop", finalizers=("snapshot.storage.kubernetes.io/pvc-as-source-protection",),
                deleting_for=DELETING)
    [finding] = explain_object(claim, facts(claim, snapshot(ready=False), extra_types=(SNAPSHOT,))).findings
    assert finding.verdict == Verdict.HOLDING and [link.target.name for link in finding.links] == ["snap"]
    [finding] = explain_object(claim, facts(claim, snapshot(ready=True), extra_types=(SNAPSHOT,))).findings
    assert finding.verdict == Verdict.WAITING


def test_a_snapshot_is_held_while_a_claim_is_restored_from_it():
    snap = snapshot(finalizers=("snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection",))
    restoring = obj("pvc", "restored", "shop", spec={"dataSource": {"kind": "VolumeSnapshot", "name": "snap",
                                                                    "apiGroup": "snapshot.storage.k8s.io"}},
                    status={"phase": "Pending"})
    [finding] = explain_object(snap, facts(snap, restoring, extra_types=(SNAPSHOT,))).findings
    assert finding.verdict == Verdict.HOLDING and [link.target.name for link in finding.links] == ["restored"]


def test_a_content_is_held_by_the_snapshot_bound_to_it_and_a_snapshot_waits_for_its_content():
    snap = snapshot(finalizers=("snapshot.storage.kubernetes.io/volumesnapshot-bound-protection",))
    content = obj(CONTENT, "c1", finalizers=("snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection",),
                  deleting_for=DELETING, spec={"deletionPolicy": "Delete", "volumeSnapshotRef": {
                      "namespace": "shop", "name": "snap", "uid": snap.uid}})
    known = facts(snap, content, extra_types=(SNAPSHOT, CONTENT))
    [held] = explain_object(content, known).findings
    assert held.verdict == Verdict.HOLDING and [link.target.name for link in held.links] == ["snap"]
    [waits] = explain_object(snap, known).findings
    assert waits.verdict == Verdict.WAITING and [link.target.name for link in waits.links] == ["c1"]
