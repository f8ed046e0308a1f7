"""The one-line blocker of a Terminating object, from what the inventory holds.

One function per finalizer family that can say more than the family's name from live facts;
`kfin stuck` shows the first finalizer's line. Families without one fall back to the catalog text.
"""

from __future__ import annotations

import re
from typing import Callable

from kfin.facts import Facts
from kfin.finalizers import family
from kfin.model import KubeObject

NAMESPACE_CONDITION_ORDER = ("NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
                             "NamespaceDeletionContentFailure", "NamespaceFinalizersRemaining",
                             "NamespaceContentRemaining")
STALE_GROUP = re.compile(r"(\S+): stale GroupVersion discovery")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def pvc_protection(obj: KubeObject, facts: Facts) -> str:
    users = facts.claim_users(obj)
    if users is None:
        return "pvc-protection: held while a scheduled Pod uses the claim"
    if not users:
        return "pvc-protection: no scheduled Pod uses the claim any more; kube-controller-manager should release it"
    first = users[0]
    node = (first.raw.get("spec") or {}).get("nodeName")
    more = f" and {_plural(len(users) - 1, 'more Pod')}" if len(users) > 1 else ""
    return f"pvc-protection: in use by Pod {first.namespace}/{first.name} (on node {node}){more}"


def pv_protection(obj: KubeObject, facts: Facts) -> str:
    if facts.objects("", "persistentvolumes", full=True) is None:
        return "pv-protection: held while the volume is Bound to a claim"
    obj = facts.find("", "persistentvolumes", "", obj.name, full=True) or obj
    spec, phase = obj.raw.get("spec") or {}, (obj.raw.get("status") or {}).get("phase")
    if phase != "Bound":
        return f"pv-protection: not bound any more (phase {phase}); kube-controller-manager should release it"
    claim = spec.get("claimRef") or {}
    policy = spec.get("persistentVolumeReclaimPolicy", "Retain")
    return f"pv-protection: still Bound to claim {claim.get('namespace')}/{claim.get('name')} (reclaim policy {policy})"


def foreground_deletion(obj: KubeObject, facts: Facts) -> str:
    waiting = facts.blocking_dependents(obj.uid)
    if not waiting:
        return "foregroundDeletion: no blocking dependent left; the garbage collector should finish"
    return f"foregroundDeletion: waiting for {_plural(len(waiting), 'blocking dependent')} ({waiting[0].ref})"


def orphan(obj: KubeObject, facts: Facts) -> str:
    return "orphan: the garbage collector must first remove this owner from its dependents"


def namespace(obj: KubeObject, facts: Facts) -> str:
    true = {c["type"]: c for c in (obj.raw.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    for ctype in NAMESPACE_CONDITION_ORDER:
        if ctype not in true:
            continue
        message = true[ctype].get("message", "")
        if ctype == "NamespaceDeletionDiscoveryFailure":
            groups = STALE_GROUP.findall(message)
            what = ", ".join(groups) if groups else message
            return (f"namespace: discovery of {what} fails (an unavailable APIService), so the namespace "
                    "controller stops before deleting anything")
        return f"namespace: {message}"
    remaining = [o for o in facts.inventory.objects if o.namespace == obj.name and o.type.namespaced]
    if remaining:
        stuck = sum(1 for o in remaining if o.terminating)
        return f"namespace: {len(remaining)} objects remain ({stuck} terminating)"
    return "namespace: waiting for the namespace controller to finalize it"


BLOCKERS: dict[str, Callable[[KubeObject, Facts], str]] = {
    "pvc-protection": pvc_protection,
    "pv-protection": pv_protection,
    "foregroundDeletion": foreground_deletion,
    "orphan": orphan,
    "namespace": namespace,
}


def blocker_line(obj: KubeObject, facts: Facts) -> str:
    names = obj.finalizers + obj.spec_finalizers
    if not names:
        if obj.type.resource == "pods" and obj.meta.get("deletionGracePeriodSeconds"):
            return "graceful deletion: waiting for the kubelet to confirm the Pod stopped"
        return "none: deletion should complete on its own"
    # A namespace's own controller entry says the most; otherwise the first finalizer speaks.
    first = "kubernetes" if "kubernetes" in obj.spec_finalizers and not obj.finalizers else names[0]
    fam = family(first)
    explain = BLOCKERS.get(fam.name)
    if explain is not None:
        text = explain(obj, facts)
    elif fam.name in ("custom", "unknown"):
        text = f"{fam.name}: {first} ({fam.owner} must remove it)"
    else:
        text = f"{fam.name}: {fam.protects}"
    more = len(names) - 1
    return text + (f" (+{more} more)" if more else "")
