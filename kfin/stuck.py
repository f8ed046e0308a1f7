"""Which objects are stuck in Terminating, for how long, and the blocker of each in one line."""

from __future__ import annotations

from dataclasses import dataclass, field

from kfin.finalizers import family, matches
from kfin.model import Inventory, KubeObject, format_time

NAMESPACE_CONDITION_ORDER = ("NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
                             "NamespaceDeletionContentFailure", "NamespaceFinalizersRemaining",
                             "NamespaceContentRemaining")


@dataclass
class StuckObject:
    obj: KubeObject
    terminating_seconds: float
    finalizers: list[str]  # metadata.finalizers, then a namespace's spec.finalizers
    families: list[str]
    blocker: str
    conditions: list[dict] = field(default_factory=list)
    context: str = ""

    def to_dict(self, with_context: bool = False) -> dict:
        o, meta = self.obj, self.obj.meta
        out = {"context": self.context} if with_context else {}
        out.update({
            "apiVersion": o.type.api_version, "kind": o.type.kind, "group": o.type.group, "resource": o.type.resource,
            "namespace": o.namespace or None, "name": o.name, "uid": o.uid,
            "deletionTimestamp": meta.get("deletionTimestamp"),
            "deletionGracePeriodSeconds": meta.get("deletionGracePeriodSeconds"),
            "terminatingSeconds": int(self.terminating_seconds),
            "finalizers": o.finalizers, "specFinalizers": o.spec_finalizers,
            "families": self.families, "blocker": self.blocker,
            "ownerReferences": len(o.owner_references),
        })
        if self.conditions:
            out["conditions"] = self.conditions
        return out


@dataclass
class Filters:
    kinds: set | None = None  # {(group, resource)}
    finalizer: str | None = None
    older_than: float | None = None  # seconds


def _blocking_dependents(inventory: Inventory) -> dict[str, list[KubeObject]]:
    """owner uid -> dependents that block its foreground deletion (blockOwnerDeletion: true)."""
    index: dict[str, list[KubeObject]] = {}
    for obj in inventory.objects:
        for ref in obj.owner_references:
            if ref.get("blockOwnerDeletion"):
                index.setdefault(ref.get("uid", ""), []).append(obj)
    return index


def _namespace_blocker(ns: KubeObject, inventory: Inventory) -> tuple[str, list[dict]]:
    conditions = [c for c in ((ns.raw.get("status") or {}).get("conditions") or [])]
    true = {c["type"]: c for c in conditions if c.get("status") == "True"}
    for ctype in NAMESPACE_CONDITION_ORDER:
        if ctype in true:
            message = true[ctype].get("message", "")
            if ctype == "NamespaceDeletionDiscoveryFailure":
                return f"namespace: API discovery fails, so the namespace controller stops: {message}", conditions
            return f"namespace: {message}", conditions
    remaining = [o for o in inventory.objects if o.namespace == ns.name and o.type.namespaced]
    if remaining:
        stuck = sum(1 for o in remaining if o.terminating)
        return (f"namespace: {len(remaining)} objects remain ({stuck} terminating)"), conditions
    return "namespace: waiting for the namespace controller to finalize it", conditions


def _blocker(obj: KubeObject, inventory: Inventory, dependents: dict) -> str:
    names = obj.finalizers + obj.spec_finalizers
    if not names:
        if obj.type.resource == "pods" and obj.meta.get("deletionGracePeriodSeconds"):
            return "graceful deletion: waiting for the kubelet to confirm the Pod stopped"
        return "none: deletion should complete on its own"
    first = names[0]
    fam = family(first)
    if fam.name == "foregroundDeletion":
        waiting = [d for d in dependents.get(obj.uid, [])]
        if waiting:
            text = (f"foregroundDeletion: waiting for {len(waiting)} blocking dependent"
                    f"{'s' if len(waiting) != 1 else ''} ({waiting[0].ref})")
        else:
            text = "foregroundDeletion: no blocking dependent left; the garbage collector should finish"
    elif fam.name == "orphan":
        text = "orphan: the garbage collector must first remove this owner from its dependents"
    elif fam.name in ("custom", "unknown"):
        text = f"{fam.name}: {first} ({fam.owner} must remove it)"
    else:
        text = f"{fam.name}: {fam.protects}"
    more = len(names) - 1
    return text + (f" (+{more} more)" if more else "")


def find_stuck(inventory: Inventory, filters: Filters = Filters()) -> list[StuckObject]:
    now = inventory.observed_at
    dependents = _blocking_dependents(inventory)
    rows = []
    for obj in inventory.objects:
        if not obj.terminating:
            continue
        if filters.kinds is not None and (obj.type.group, obj.type.resource) not in filters.kinds:
            continue
        names = obj.finalizers + obj.spec_finalizers
        if filters.finalizer and not any(matches(f, filters.finalizer) for f in names):
            continue
        since = obj.deletion_timestamp
        seconds = max(0.0, (now - since).total_seconds()) if since else 0.0
        if filters.older_than is not None and seconds < filters.older_than:
            continue
        conditions: list[dict] = []
        if obj.type.group == "" and obj.type.resource == "namespaces" and "kubernetes" in obj.spec_finalizers:
            blocker, conditions = _namespace_blocker(obj, inventory)
        else:
            blocker = _blocker(obj, inventory, dependents)
        rows.append(StuckObject(obj, seconds, names, list(dict.fromkeys(family(f).name for f in names)),
                                blocker, conditions, inventory.context))
    rows.sort(key=lambda r: (-r.terminating_seconds, r.obj.namespace, r.obj.type.kind_display, r.obj.name))
    return rows


def report(rows: list[StuckObject], inventories: list[Inventory]) -> dict:
    """The machine-readable result of `kfin stuck -o json|yaml` (schema documented in README.md)."""
    several = len(inventories) > 1
    return {
        "apiVersion": "kfin.dev/v1",
        "kind": "StuckReport",
        "observedAt": format_time(inventories[0].observed_at) if inventories else None,
        "sources": [{"context": inv.context, "server": inv.server, "namespace": inv.namespace,
                     "complete": inv.complete} for inv in inventories],
        "complete": all(inv.complete for inv in inventories),
        "items": [r.to_dict(several) for r in rows],
        "failures": [dict(f.to_dict(), context=inv.context) if several else f.to_dict()
                     for inv in inventories for f in inv.failures],
    }
