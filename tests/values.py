"""Plain values for unit tests of kfin.core: objects as an API server would give them, and Facts over them
as a snapshot would hold them (every type listed, the kinds explanations read kept whole)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.resources import KindLookup
from kfin.core.read.facts import Facts
from kfin.model import Failure, Inventory, KubeObject, ResourceType, format_time

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
CATALOG = KindLookup(builtin_resources())
_uids = count(1)


def kind(text: str) -> ResourceType:
    """A built-in type by any kubectl form (pvc, deploy.apps, ...)."""
    return CATALOG.find(text)


def custom_type(plural: str = "widgets", group: str = "example.com", kind_name: str = "Widget",
                namespaced: bool = True) -> ResourceType:
    return ResourceType(group, "v1", plural, kind_name, namespaced, ("list", "get", "update", "patch"))


def obj(rtype: ResourceType | str, name: str, namespace: str = "", *, finalizers: tuple[str, ...] = (),
        deleting_for: timedelta | None = None, owners: tuple[KubeObject, ...] = (), block_owner: bool = True,
        labels: dict | None = None, uid: str | None = None, grace_seconds: int | None = None,
        **fields: object) -> KubeObject:
    """An object; `deleting_for`: Terminating that long (with `grace_seconds`, a graceful deletion's
    period); `owners`: ownerReferences (controller, blocking)."""
    rtype = kind(rtype) if isinstance(rtype, str) else rtype
    meta: dict = {"name": name, "uid": uid if uid is not None else f"uid-{next(_uids)}",
                  "creationTimestamp": format_time(NOW - timedelta(days=30))}
    if namespace:
        meta["namespace"] = namespace
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if deleting_for is not None:
        meta["deletionTimestamp"] = format_time(NOW - deleting_for + timedelta(seconds=grace_seconds or 0))
    if grace_seconds is not None:
        meta["deletionGracePeriodSeconds"] = grace_seconds
    if labels:
        meta["labels"] = labels
    if owners:
        meta["ownerReferences"] = [{"apiVersion": o.type.api_version, "kind": o.type.kind, "name": o.name,
                                    "uid": o.uid, "controller": True, "blockOwnerDeletion": block_owner}
                                   for o in owners]
    return KubeObject(rtype, {"apiVersion": rtype.api_version, "kind": rtype.kind, "metadata": meta, **fields})


def facts(*objects: KubeObject, extra_types: tuple[ResourceType, ...] = (), failures: tuple[Failure, ...] = (),
          unlisted: tuple[str, ...] = (), with_namespaces: bool = True) -> Facts:
    """Facts of a snapshot holding `objects`: every built-in type (and `extra_types`) listed whole, except
    the `unlisted` ones (by plural), whose list failed as a real scan's can (forbidden). The namespaces the objects live in
    exist (Active) unless given, or unless `with_namespaces` is False (a ghost's namespace is gone)."""
    given = {o.name for o in objects if o.type.resource == "namespaces"}
    if with_namespaces:
        wanted = sorted({o.namespace for o in objects if o.namespace} - given)
        objects += tuple(obj("namespaces", name, spec={"finalizers": ["kubernetes"]}, status={"phase": "Active"})
                         for name in wanted)
    types = list(builtin_resources())
    types += [t for t in extra_types if t not in types]
    types += [o.type for o in objects if o.type not in types]
    failed = [Failure("list", r.qualified, "Forbidden", "forbidden") for r in types if r.resource in unlisted]
    inventory = Inventory(types, [o for o in objects if o.type.resource not in unlisted],
                          failures=list(failures) + failed, observed_at=NOW,
                          detailed={(r.group, r.resource, "") for r in types if r.resource not in unlisted})
    return Facts(inventory)


def node(name: str, ready: bool = True, since: timedelta = timedelta(hours=1)) -> KubeObject:
    return obj("nodes", name, status={"conditions": [{"type": "Ready", "status": "True" if ready else "Unknown",
                                                      "lastTransitionTime": format_time(NOW - since)}]})


def pod(name: str, namespace: str, *, node_name: str | None = "node-1", claims: tuple[str, ...] = (),
        phase: str = "Running", **kwargs: object) -> KubeObject:
    spec: dict = {"volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]}
    if node_name:
        spec["nodeName"] = node_name
    return obj("pods", name, namespace, spec=spec, status={"phase": phase}, **kwargs)  # type: ignore[arg-type]


def lease(name: str = "kube-controller-manager", renewed_ago: timedelta = timedelta(seconds=5)) -> KubeObject:
    return obj("leases.coordination.k8s.io", name, "kube-system",
               spec={"holderIdentity": f"{name}-1", "renewTime": format_time(NOW - renewed_ago),
                     "leaseDurationSeconds": 15})
