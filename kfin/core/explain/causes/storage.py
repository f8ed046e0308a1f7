"""Claims, volumes and CSI: pvc-protection, pv-protection, vac-protection, and the volume finalizers of drivers."""

from __future__ import annotations

from kfin.core.explain.causes.custom import workloads_of_manager
from kfin.core.explain.causes.registry import (
    CONTROLLER_MANAGER_LEASE,
    EVERYWHERE,
    OBJECT_NAMESPACE,
    Action,
    Context,
    Entry,
    Finding,
    Link,
    Verdict,
    condition,
    explains,
    kfin_remove_command,
    state_line,
    waiting_on_controller_manager,
)
from kfin.core.read.facts import ClusterFacts, pod_claims
from kfin.model import MANAGERS, KubeObject
from kfin.util.durations import format_age
from kfin.util.text import first_few


def _volume_of(ctx: Context, claim: KubeObject) -> KubeObject | None:
    name = (claim.raw.get("spec") or {}).get("volumeName")
    return ctx.facts.find("", "persistentvolumes", "", name, full=True) if name else None


def _data_risk(volume: KubeObject | None) -> str:
    if volume is None:
        return "the data's fate depends on the volume's reclaim policy, which kfin could not read"
    spec = volume.raw.get("spec") or {}
    policy = spec.get("persistentVolumeReclaimPolicy", "Retain")
    handle = (spec.get("csi") or {}).get("volumeHandle")
    where = f" (volume {volume.name}" + (f", disk {handle}" if handle else "") + ")"
    if policy == "Delete":
        return f"its reclaim policy is Delete: the backing disk{where} is deleted with the claim, data included"
    return f"its reclaim policy is {policy}: the data stays on the backing disk{where}, to be cleaned up by hand"


def _pod_step(pod: KubeObject) -> tuple[Action, ...]:
    owners = [f"{r.get('kind')} {r.get('name')}" for r in pod.owner_references if r.get("controller")]
    delete = Action(f"kubectl delete pod -n {pod.namespace} {pod.name}")
    if not owners:
        return (delete,)
    return delete, Action(None, when=f"instead, if {owners[0]} would recreate it", note=f"scale down {owners[0]}")


FIX_NAMES = 5  # the Pods a fix names; JSON's condition and evidence name them all


def _user(pod: KubeObject, facts: ClusterFacts) -> str:
    """A Pod that holds the claim, as it is now: its phase and node, or, once it is being deleted (pvc-protection
    holds the claim while a scheduled Pod references it, whatever its phase: podUsesPVC in
    pkg/controller/volume/pvcprotection), since when and what it waits for."""
    node = (pod.raw.get("spec") or {}).get("nodeName")
    since = pod.deletion_requested_at
    if since is None:
        return f"Pod {pod.namespace}/{pod.name} ({(pod.raw.get('status') or {}).get('phase', '?')}, on node {node})"
    age = format_age(max(0.0, (facts.inventory.observed_at - since).total_seconds()))
    return f"Pod {pod.namespace}/{pod.name} (on node {node}, being deleted for {age}: {state_line(pod, facts)})"


def unused_condition(
    claim: KubeObject, users: list[KubeObject], unscheduled: list[KubeObject]
) -> tuple[list[str], bool]:
    """(evidence, disagrees) from the claim's `Unused` condition: the pvc-protection controller's own word on
    whether a Pod uses the claim (PersistentVolumeClaimUnusedSinceTime, alpha in 1.36: True/NoPodsUsingPVC,
    False/PodUsingPVC). It counts Pods that have not terminated, scheduled or not; the finalizer counts scheduled
    Pods in any phase. And it is not updated once the claim is being deleted: on a Terminating claim it tells
    what the controller saw before (pkg/controller/volume/pvcprotection)."""
    said = condition(claim, "Unused")
    if said.get("status") not in ("True", "False"):
        return [], False
    unused = said["status"] == "True"
    reason, since = said.get("reason") or "no reason", said.get("lastTransitionTime") or "?"
    text = f"condition Unused={said['status']} ({reason}) since {since}"
    if claim.terminating:
        text += ", set before the deletion (the controller stops updating it once the claim is being deleted)"
    if unused and users:
        first = users[0]
        return [
            f"{text}: the server says no Pod uses the claim, kfin sees Pod {first.namespace}/{first.name} "
            f"({(first.raw.get('status') or {}).get('phase', '?')}{', Terminating' if first.terminating else ''}) "
            "scheduled with it. They disagree: the condition leaves out finished Pods and Terminating Pods whose "
            "containers stopped, the finalizer does not"
        ], True
    if not unused and not users:
        if unscheduled:
            names = ", ".join(f"{p.namespace}/{p.name}" for p in unscheduled[:3])
            return [f"{text}: Pods not yet scheduled ({names}) count for the condition, not for the finalizer"], False
        return [
            f"{text}: the server said a Pod used the claim, kfin sees none scheduled with it. They disagree: "
            "the condition may speak of a Pod gone since, or of one kfin cannot see"
        ], True
    return [f"{text}: the server agrees"], False


@explains(
    "pvc-protection",
    Entry(
        "kubernetes.io/pvc-protection",
        "a claim still used by a Pod",
        "kube-controller-manager (pvc-protection controller)",
    ),
    reads=(("", "pods", OBJECT_NAMESPACE), CONTROLLER_MANAGER_LEASE),
)
def pvc_protection(ctx: Context) -> Finding:
    claim, facts = ctx.obj, ctx.facts
    users = facts.claim_users(claim)
    volume = _volume_of(ctx, claim)
    risk = "forcing it deletes the claim while Pods may still mount it; " + _data_risk(volume)
    if users is None:
        failure = facts.unreadable.get(("", "pods", claim.namespace))
        return ctx.finding(
            "kfin could not read the Pods of the claim's namespace" + (f" ({failure.message})" if failure else ""),
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl get pods -n {claim.namespace} -o wide",
            risk=risk,
            summary="held while a scheduled Pod uses the claim (kfin could not read the Pods)",
        )
    pods = facts.objects("", "pods", claim.namespace, full=True) or []
    unscheduled = [p for p in pods if not (p.raw.get("spec") or {}).get("nodeName") and claim.name in pod_claims(p)]
    evidence = [
        f"Pod {p.namespace}/{p.name} references the claim but is not scheduled: it does not hold it"
        for p in unscheduled
    ]
    whole = (  # a claim listed as metadata only has no status: its conditions are read then
        claim
        if isinstance(claim.raw.get("status"), dict)
        else facts.find("", "persistentvolumeclaims", claim.namespace, claim.name, full=True) or claim
    )
    said, disagrees = unused_condition(whole, users, unscheduled)
    evidence += said
    if users:
        described = [_user(p, facts) for p in users]
        running = [p for p in users if not p.terminating]
        deleting = [p for p in users if p.terminating]
        owners = sorted(
            {
                f"{r.get('kind')} {p.namespace}/{r.get('name')}"
                for p in running
                for r in p.owner_references
                if r.get("controller")
            }
        )
        wanted = []
        if running:
            named = first_few([f"{p.namespace}/{p.name}" for p in running], FIX_NAMES)
            wanted.append(
                f"stop what uses the claim: delete Pod{'s' if len(running) > 1 else ''} {named}"
                + (f" (or scale down {', '.join(owners)}, which would recreate them)" if owners else "")
            )
        if deleting:  # deleted already: what is left is what holds the Pod
            named = first_few([f"{p.namespace}/{p.name}" for p in deleting], FIX_NAMES)
            one = len(deleting) == 1
            wanted.append(
                f"Pod{'' if one else 's'} {named} {'is' if one else 'are'} being deleted already: deal with what "
                f"holds {'it' if one else 'them'} (kfin explain pod {deleting[0].name} -n {deleting[0].namespace})"
            )
        first = users[0]
        more = f" and {len(users) - 1} more Pod{'s' if len(users) > 2 else ''}" if len(users) > 1 else ""
        node = (first.raw.get("spec") or {}).get("nodeName")
        state = f"being deleted: {state_line(first, facts)}" if first.terminating else f"on node {node}"
        return ctx.finding(
            f"in use by {len(users)} scheduled Pod{'s' if len(users) > 1 else ''}: " + ", ".join(described),
            Verdict.HOLDING,
            fix="; ".join(wanted) + "; the finalizer then goes by itself",
            risk=risk,
            evidence=evidence,
            summary=f"in use by Pod {first.namespace}/{first.name} ({state}){more}",
            links=[
                Link(
                    "used-by-pod",
                    f"mounted by Pod {p.namespace}/{p.name} (scheduled on node "
                    f"{(p.raw.get('spec') or {}).get('nodeName')}" + (", being deleted)" if p.terminating else ")"),
                    target=p,
                    # a Pod being deleted already: what holds it is followed, and deleting it again does nothing
                    step=() if p.terminating else _pod_step(p),
                )
                for p in users
            ],
        )
    if disagrees:  # kfin's view against the server's own word: said, never settled
        return waiting_on_controller_manager(
            ctx,
            "kfin sees no scheduled Pod using the claim, but its Unused condition says a Pod used it",
            risk=risk,
            evidence=evidence,
            summary="kfin sees no scheduled Pod using the claim (its Unused condition disagrees); "
            "kube-controller-manager should release it",
        )
    return waiting_on_controller_manager(
        ctx,
        "no scheduled Pod uses the claim any more",
        risk=risk,
        evidence=evidence,
        summary="no scheduled Pod uses the claim any more; kube-controller-manager should release it",
    )


@explains(
    "pv-protection",
    Entry(
        "kubernetes.io/pv-protection",
        "a volume still bound to a claim",
        "kube-controller-manager (pv-protection controller)",
    ),
)
def pv_protection(ctx: Context) -> Finding:
    facts = ctx.facts
    volume = facts.find("", "persistentvolumes", "", ctx.obj.name, full=True) or ctx.obj
    spec, status = volume.raw.get("spec") or {}, volume.raw.get("status") or {}
    risk = "forcing it removes the volume object while a claim may still use it; " + _data_risk(volume)
    if "phase" not in status:
        return ctx.finding(
            "kfin could not read the volume's phase",
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl get pv {volume.name}",
            risk=risk,
            summary="held while the volume is Bound to a claim (kfin could not read it)",
        )
    phase = status["phase"]
    claim_ref = spec.get("claimRef") or {}
    claim_name = f"{claim_ref.get('namespace')}/{claim_ref.get('name')}"
    policy = spec.get("persistentVolumeReclaimPolicy", "Retain")
    evidence = [f"reclaim policy {policy}"]
    if phase == "Bound":
        claim = facts.find("", "persistentvolumeclaims", claim_ref.get("namespace", ""), claim_ref.get("name", ""))
        if claim is None and facts.objects("", "persistentvolumeclaims", claim_ref.get("namespace")) is not None:
            return waiting_on_controller_manager(
                ctx,
                f"still marked Bound, but its claim {claim_name} is gone: the binder should release it",
                risk=risk,
                evidence=evidence,
            )
        state = "Terminating" if claim is not None and claim.terminating else "in use"
        bound = [] if claim is None else [_bound_claim(claim, f"Bound to claim {claim_name} ({state})")]
        return ctx.finding(
            f"Bound to claim {claim_name} ({state})",
            Verdict.HOLDING,
            fix=f"deal with the claim first: kfin explain pvc {claim_ref.get('name')} -n {claim_ref.get('namespace')}",
            risk=risk,
            evidence=evidence,
            summary=f"still Bound to claim {claim_name} (reclaim policy {policy})",
            links=bound,
        )
    return waiting_on_controller_manager(
        ctx,
        f"not bound any more (phase {phase})",
        risk=risk,
        evidence=evidence,
        summary=f"not bound any more (phase {phase}); kube-controller-manager should release it",
    )


@explains(
    "volume",
    Entry(
        "kubernetes.io/pv-controller",
        "a volume until its storage is deprovisioned",
        "kube-controller-manager (persistent volume controller)",
    ),
    Entry(
        "external-provisioner.volume.kubernetes.io/finalizer",
        "a volume until the CSI driver deletes its storage",
        "the CSI driver's external-provisioner",
    ),
    Entry(
        "external-attacher/*",
        "an attachment until the CSI driver detaches the volume",
        "the CSI driver's external-attacher",
    ),
)
def csi_volume(ctx: Context) -> Finding:
    """external-provisioner / external-attacher / pv-controller: is the driver there, is it attached?"""
    facts, obj = ctx.facts, ctx.obj
    full = facts.find(obj.type.group, obj.type.resource, obj.namespace, obj.name, full=True) or obj
    spec = full.raw.get("spec") or {}
    driver = (spec.get("csi") or {}).get("driver") or spec.get("attacher")
    risk = (
        "removing it skips the storage cleanup: the disk"
        + (f" ({(spec.get('csi') or {}).get('volumeHandle')})" if (spec.get("csi") or {}).get("volumeHandle") else "")
        + " stays allocated (and billed) in the storage backend, to be deleted by hand"
    )
    evidence: list[str] = []
    if obj.type.resource == "persistentvolumes":
        attachments = facts.objects("storage.k8s.io", "volumeattachments", full=True)
        attached = [
            a
            for a in attachments or []
            if ((a.raw.get("spec") or {}).get("source") or {}).get("persistentVolumeName") == obj.name
        ]
        if attached:
            node = (attached[0].raw.get("spec") or {}).get("nodeName")
            return ctx.finding(
                f"still attached to node {node} (VolumeAttachment {attached[0].name})",
                Verdict.HOLDING,
                fix="let the volume detach: stop the Pods using it on that node",
                risk=risk,
                evidence=evidence,
                controller=f"the CSI driver {driver}" if driver else None,
                links=[
                    Link(
                        "attachment",
                        f"attached to node {(a.raw.get('spec') or {}).get('nodeName')}",
                        target=a,
                        step=()
                        if a.terminating
                        else (
                            Action(
                                None,
                                note="stop the Pods that use the volume on node "
                                f"{(a.raw.get('spec') or {}).get('nodeName')}",
                            ),
                        ),
                    )
                    for a in attached
                ],
            )
    if obj.type.group == "storage.k8s.io" and obj.type.resource == "volumeattachments" and driver:
        return _attachment(ctx, full, driver, risk)
    if ctx.finalizer == "kubernetes.io/pv-controller" or not driver:
        return waiting_on_controller_manager(ctx, "the persistent volume controller deprovisions the volume", risk=risk)
    drivers = facts.objects("storage.k8s.io", "csidrivers")
    if drivers is not None and not any(d.name == driver for d in drivers):
        # No proof the driver is gone: a CSI driver may run without a CSIDriver object, so UNKNOWN, not ORPHANED.
        remove = kfin_remove_command(obj, ctx.finalizer)
        return ctx.finding(
            f"no CSIDriver {driver} is registered: the driver that would remove it is probably not installed",
            Verdict.UNKNOWN,
            fix=f"reinstall the {driver} driver so that it cleans up, or delete the "
            "disk in the storage backend yourself, then remove the finalizer",
            risk=risk,
            evidence=[
                f"CSIDriver objects read: {', '.join(d.name for d in drivers) or 'none'}; a driver may also run "
                "without one, so this is no proof"
            ],
            controller=f"the CSI driver {driver}",
            remove_command=remove,
            links=[
                Link(
                    "controller",
                    f"the CSI driver {driver} is not installed",
                    actor=f"CSI driver {driver}",
                    step=(
                        Action(None, note=f"reinstall the {driver} driver"),
                        Action(remove, when="instead, once you deleted the disk in the storage backend yourself"),
                    ),
                )
            ],
        )
    return ctx.finding(
        f"waiting for the CSI driver {driver} to delete or detach the volume",
        Verdict.WAITING,
        fix=f"check the {driver} controller's Pods and logs",
        risk=risk,
        controller=f"the CSI driver {driver}",
    )


VAC_USERS = (
    ("spec", "volumeAttributesClassName"),
    ("status", "currentVolumeAttributesClassName"),
    ("status", "modifyVolumeStatus", "targetVolumeAttributesClassName"),
)


def _names_class(obj: KubeObject, name: str) -> bool:
    """Whether a claim or volume names the VolumeAttributesClass, where the vac-protection controller looks
    (pkg/controller/volume/vacprotection: the spec's class, and a claim's current and target classes)."""
    for path in VAC_USERS:
        node: object = obj.raw
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if node == name:
            return True
    return False


@explains(
    "vac-protection",
    Entry(
        "kubernetes.io/vac-protection",
        "a VolumeAttributesClass while a claim or volume names it",
        "kube-controller-manager (vac-protection controller)",
    ),
    reads=(("", "persistentvolumeclaims", EVERYWHERE), ("", "persistentvolumes", EVERYWHERE), CONTROLLER_MANAGER_LEASE),
)
def vac_protection(ctx: Context) -> Finding:
    facts, vac = ctx.facts, ctx.obj
    risk = (
        "removing it deletes the class while claims or volumes still name it: their modifications can no "
        "longer be resolved, and the driver's parameters for them are lost"
    )
    claims = facts.objects("", "persistentvolumeclaims", full=True)
    volumes = facts.objects("", "persistentvolumes", full=True)
    if claims is None or volumes is None:
        return ctx.finding(
            "kfin could not list the claims and volumes that may name it",
            Verdict.UNKNOWN,
            fix=f"check by hand: kubectl get pvc -A -o wide; kubectl get pv (VOLUMEATTRIBUTESCLASS {vac.name})",
            risk=risk,
        )
    users = [o for o in claims + volumes if _names_class(o, vac.name)]
    if not users:
        return waiting_on_controller_manager(ctx, "no claim or volume names it any more", risk=risk)
    return ctx.finding(
        f"named by {len(users)} claim{'s' if len(users) != 1 else ''} or volume{'s' if len(users) != 1 else ''} "
        f"({', '.join(u.ref for u in users[:3])}{', ...' if len(users) > 3 else ''})",
        Verdict.HOLDING,
        fix="move those claims to another VolumeAttributesClass (or delete them); the controller then removes it",
        risk=risk,
        evidence=[f"{u.ref} names it" for u in users[:10]],
        summary=f"named by {users[0].ref}" + (f" (+{len(users) - 1} more)" if len(users) > 1 else ""),
        links=[Link("named-by", "names the class", target=user, step=_unnaming(user)) for user in users],
    )


def _unnaming(user: KubeObject) -> tuple[Action, ...]:
    """What makes a claim or volume stop naming a VolumeAttributesClass: another class set, or it deleted."""
    where = f" -n {user.namespace}" if user.namespace else ""
    return (
        Action(f"kubectl edit {user.type.resource}{where} {user.name}", note="set another VolumeAttributesClass"),
        Action(f"kubectl delete {user.type.resource}{where} {user.name}", when="instead, if it may go"),
    )


def _bound_claim(claim: KubeObject, why: str) -> Link:
    """The claim a volume is Bound to, with its deletion for when its data may go (none while it is deleted)."""
    deleting = (Action(f"kubectl delete pvc -n {claim.namespace} {claim.name}", when="when its data may go"),)
    return Link("bound-claim", why, target=claim, step=() if claim.terminating else deleting)


def _attachment(ctx: Context, attachment: KubeObject, driver: str, risk: str) -> Finding:
    """A VolumeAttachment's external-attacher finalizer: its node (gone, or not Ready), its CSI driver
    (registered), and the attacher that added the finalizer (its field manager's workload, running or not)."""
    facts = ctx.facts
    node_name = str((attachment.raw.get("spec") or {}).get("nodeName") or "")
    evidence: list[str] = []
    nodes = facts.objects("", "nodes", full=True)
    node = next((n for n in nodes or [] if n.name == node_name), None)
    node_gone = nodes is not None and node is None
    if node_gone:
        evidence.append(f"its node {node_name} does not exist: the volume can no longer be unmounted there")
    elif node is not None:
        ready = condition(node, "Ready")
        evidence.append(f"its node {node_name} is {'Ready' if ready.get('status') == 'True' else 'not Ready'}")
    drivers = facts.objects("storage.k8s.io", "csidrivers")
    if drivers is not None:
        registered = any(d.name == driver for d in drivers)
        evidence.append(f"CSIDriver {driver} is {'registered' if registered else 'not registered'}")
    manager = (attachment.raw.get(MANAGERS) or {}).get(ctx.finalizer)
    workloads = workloads_of_manager(facts, manager) if manager else None
    running = [(w, r, n) for w, r, n in workloads or [] if r > 0]
    if manager:
        evidence.append(
            f'the finalizer was added by field manager "{manager}": '
            + (
                f"{running[0][0].type.kind} {running[0][0].namespace}/{running[0][0].name} runs"
                if running
                else "its workload " + ("is installed but not running" if workloads else "was not found")
            )
        )
    shutdown = (
        f"; if node {node_name} is shut down for good, kubectl taint nodes {node_name} "
        "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute lets Kubernetes detach it"
        if node is not None and node_gone is False
        else ""
    )
    if running:
        return ctx.finding(
            f"the external-attacher of {driver} runs and should detach the volume, then remove it"
            + (
                f" (its node {node_name} is gone: the attach-detach controller detaches without waiting for an "
                "unmount after 6 minutes)"
                if node_gone
                else ""
            ),
            Verdict.WAITING,
            fix=f"check the {driver} attacher's logs{shutdown}",
            risk=risk,
            evidence=evidence,
            alive=True,
            controller=f"the external-attacher of {driver}",
        )
    if workloads:
        w = workloads[0][0]
        return ctx.finding(
            f"the external-attacher of {driver} ({w.type.kind} {w.namespace}/{w.name}) is installed but not running",
            Verdict.STALLED,  # there, but it acts only once someone fixes or scales it up
            fix=f"fix or scale up {w.type.kind} {w.namespace}/{w.name}: running, it detaches and removes it",
            risk=risk,
            evidence=evidence,
            alive=False,
            controller=f"the external-attacher of {driver}",
            links=[
                Link(
                    "controller",
                    f"{w.type.kind} {w.namespace}/{w.name} is not running",
                    target=w,
                    step=(Action(None, note=f"fix or scale up {w.type.kind} {w.namespace}/{w.name}"),),
                )
            ],
        )
    return ctx.finding(
        f"kfin found no running external-attacher of {driver}"
        + (f" and its node {node_name} is gone" if node_gone else ""),
        Verdict.UNKNOWN,
        fix=f"check that the {driver} CSI controller (its external-attacher) runs{shutdown}; if the driver was "
        "uninstalled, detach the disk in the storage backend, then remove the finalizer",
        risk=risk,
        evidence=evidence,
        controller=f"the external-attacher of {driver}",
    )
