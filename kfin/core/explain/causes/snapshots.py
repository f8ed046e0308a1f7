"""Volume snapshots: the finalizers of the snapshot controller (external-snapshotter, pkg/utils/util.go) and
of the CSI external-provisioner (pkg/controller/controller.go), each with what still holds it: a snapshot
being taken of a claim, a claim being provisioned from a snapshot or cloned from a claim, a snapshot and its
content bound to each other."""

from __future__ import annotations

from kfin.core.explain.causes.registry import (
    EVERYWHERE,
    OBJECT_NAMESPACE,
    Context,
    Entry,
    Finding,
    Link,
    LinkKind,
    Verdict,
    explains,
)
from kfin.model import JSON, KubeObject

SNAPSHOTS = "snapshot.storage.k8s.io"
PREFIX = "snapshot.storage.kubernetes.io/"
RISK = (
    "removing it lets the object go while the snapshot operation that needs it is under way: a snapshot or "
    "a restored volume may end up incomplete, or the storage snapshot is left behind in the backend"
)


def _spec(obj: KubeObject) -> JSON:
    spec = obj.raw.get("spec")
    return spec if isinstance(spec, dict) else {}


def _status(obj: KubeObject) -> JSON:
    status = obj.raw.get("status")
    return status if isinstance(status, dict) else {}


def _held(ctx: Context, holders: list[KubeObject], what: str, kind: LinkKind) -> Finding:
    return ctx.finding(
        f"{what}: {', '.join(h.ref for h in holders[:3])}{', ...' if len(holders) > 3 else ''}",
        Verdict.HOLDING,
        fix="let those operations finish (or delete what started them); the controller then removes it",
        risk=RISK,
        evidence=[f"{h.ref} {what}" for h in holders[:10]],
        summary=f"{what} ({holders[0].ref})",
        links=[Link(kind, what, target=h) for h in holders],
    )


def _waiting(ctx: Context, condition: str) -> Finding:
    return ctx.finding(
        condition,
        Verdict.WAITING,
        fix=f"check {ctx.family.owner}'s Pods and logs: it removes the finalizer",
        risk=RISK,
    )


def _unreadable(ctx: Context, what: str) -> Finding:
    return ctx.finding(
        f"kfin could not read the {what} that may hold it",
        Verdict.UNKNOWN,
        fix=f"check by hand: kubectl get {what} -n {ctx.obj.namespace}",
        risk=RISK,
    )


@explains(
    "snapshot-source",
    Entry(
        PREFIX + "pvc-as-source-protection", "a claim while a snapshot of it is being taken", "the snapshot controller"
    ),
    reads=((SNAPSHOTS, "volumesnapshots", OBJECT_NAMESPACE),),
)
def claim_as_snapshot_source(ctx: Context) -> Finding:
    snapshots = ctx.facts.objects(SNAPSHOTS, "volumesnapshots", ctx.obj.namespace, full=True)
    if snapshots is None:
        return _unreadable(ctx, "volumesnapshots")
    taking = [
        s
        for s in snapshots
        if (_spec(s).get("source") or {}).get("persistentVolumeClaimName") == ctx.obj.name
        and _status(s).get("readyToUse") is not True
    ]
    if taking:
        return _held(ctx, taking, "a snapshot of it is being taken", "snapshot-in-progress")
    return _waiting(ctx, "no snapshot of it is in progress: the snapshot controller should remove it")


def _provisioned_from(ctx: Context, kind: str) -> list[KubeObject] | None:
    """Claims in the namespace still being provisioned (Pending) from this object (dataSource or dataSourceRef)."""
    claims = ctx.facts.objects("", "persistentvolumeclaims", ctx.obj.namespace, full=True)
    if claims is None:
        return None
    out = []
    for claim in claims:
        sources = [_spec(claim).get("dataSource"), _spec(claim).get("dataSourceRef")]
        if _status(claim).get("phase") != "Pending":
            continue
        if any(isinstance(s, dict) and s.get("kind") == kind and s.get("name") == ctx.obj.name for s in sources):
            out.append(claim)
    return out


@explains(
    "snapshot-restore",
    Entry(
        PREFIX + "volumesnapshot-as-source-protection",
        "a snapshot while a claim is being restored from it",
        "the snapshot controller",
    ),
    Entry(
        "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection",
        "a snapshot while a claim is being provisioned from it",
        "the CSI driver's external-provisioner",
    ),
    reads=(("", "persistentvolumeclaims", OBJECT_NAMESPACE),),
)
def snapshot_as_restore_source(ctx: Context) -> Finding:
    restoring = _provisioned_from(ctx, "VolumeSnapshot")
    if restoring is None:
        return _unreadable(ctx, "persistentvolumeclaims")
    if restoring:
        return _held(ctx, restoring, "is being provisioned from it", "restoring")
    return _waiting(ctx, "no claim is being provisioned from it any more: its controller should remove it")


@explains(
    "clone-source",
    Entry(
        "provisioner.storage.kubernetes.io/cloning-protection",
        "a claim while another is being cloned from it",
        "the CSI driver's external-provisioner",
    ),
    reads=(("", "persistentvolumeclaims", OBJECT_NAMESPACE),),
)
def claim_as_clone_source(ctx: Context) -> Finding:
    cloning = _provisioned_from(ctx, "PersistentVolumeClaim")
    if cloning is None:
        return _unreadable(ctx, "persistentvolumeclaims")
    if cloning:
        return _held(ctx, cloning, "is being cloned from it", "cloning")
    return _waiting(ctx, "no claim is being cloned from it any more: the external-provisioner should remove it")


@explains(
    "snapshot-bound",
    Entry(
        PREFIX + "volumesnapshot-bound-protection",
        "a snapshot until its bound content (deletionPolicy Delete) is deleted",
        "the snapshot controller",
    ),
    reads=((SNAPSHOTS, "volumesnapshotcontents", EVERYWHERE),),
)
def snapshot_bound(ctx: Context) -> Finding:
    name = _status(ctx.obj).get("boundVolumeSnapshotContentName") or _status(
        ctx.facts.find(SNAPSHOTS, "volumesnapshots", ctx.obj.namespace, ctx.obj.name, full=True) or ctx.obj
    ).get("boundVolumeSnapshotContentName")
    content = ctx.facts.find(SNAPSHOTS, "volumesnapshotcontents", "", str(name), full=True) if name else None
    if content is None:
        return _waiting(ctx, "its content is gone (or not bound): the snapshot controller should remove it")
    return ctx.finding(
        f"its VolumeSnapshotContent {content.name} must be deleted first (deletionPolicy "
        f"{_spec(content).get('deletionPolicy') or 'unknown'}: the storage snapshot goes with it)",
        Verdict.WAITING,
        fix=f"let the snapshot controller and the CSI snapshotter delete VolumeSnapshotContent {content.name} "
        "(its own blocker is named below)",
        risk=RISK,
        links=[Link("bound-content", "its content, deleted first", target=content)],
    )


@explains(
    "content-bound",
    Entry(
        PREFIX + "volumesnapshotcontent-bound-protection",
        "a snapshot content while its snapshot is bound to it",
        "the snapshot controller",
    ),
    reads=((SNAPSHOTS, "volumesnapshots", EVERYWHERE),),
)
def content_bound(ctx: Context) -> Finding:
    content = ctx.facts.find(SNAPSHOTS, "volumesnapshotcontents", "", ctx.obj.name, full=True) or ctx.obj
    ref = _spec(content).get("volumeSnapshotRef") or {}
    snapshot = (
        ctx.facts.find(
            SNAPSHOTS, "volumesnapshots", str(ref.get("namespace") or ""), str(ref.get("name") or ""), full=True
        )
        if isinstance(ref, dict)
        else None
    )
    if snapshot is not None and (not ref.get("uid") or ref.get("uid") == snapshot.uid):
        return _held(ctx, [snapshot], "is still bound to it", "bound-snapshot")
    return _waiting(
        ctx,
        "its VolumeSnapshot is gone: the snapshot controller (and the CSI snapshotter, for "
        "deletionPolicy Delete) should delete the storage snapshot and remove it",
    )


@explains(
    "volume-snapshot",
    Entry(PREFIX + "*", "a snapshot, its content or its source while in use", "the snapshot controller"),
)
def other_snapshot_finalizer(ctx: Context) -> Finding:
    return _waiting(ctx, "waiting for the snapshot controller")
