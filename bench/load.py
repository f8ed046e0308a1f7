"""The benchmark's data set, and the loader that puts it on an API server and takes it away again.

N objects spread over built-in kinds and generated CRDs, in namespaces of 1,000 objects that the
loader owns (labelled, named kfin-bench-NNN). Of every 40 objects, 25 form an app, one of each type
(Pods among them), whose ownerReferences form a small binary tree, so the owner graph has depth; the
other 15 are Events about the app, which, as in real clusters, are the most numerous kind and have no
owner. Every object has labels and annotations as controllers and Helm set them, and the server adds
managedFields. About 1% of the apps' objects carry a finalizer nobody removes and are deleted: they
stay Terminating, which is what `kfin stuck` looks for.
Everything is plain API calls (parallel creates), so a real cluster is loaded the same way as the fake.
"""

from __future__ import annotations

import base64
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kfin.errors import KfinError, NotFoundError

GROUP = "bench.kfin.dev"
HOLD = f"{GROUP}/hold"
NAMESPACE_PREFIX = "kfin-bench-"
MANAGED = {"app.kubernetes.io/managed-by": "kfin-bench"}
PER_NAMESPACE = 1000
APP_SIZE = 25
CYCLE = 40  # objects per app and its Events
BUILTIN_TYPES = [("", "v1", "configmaps", "ConfigMap"), ("", "v1", "pods", "Pod"), ("", "v1", "secrets", "Secret"),
                 ("", "v1", "serviceaccounts", "ServiceAccount"),
                 ("rbac.authorization.k8s.io", "v1", "roles", "Role"),
                 ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")]
EVENT_TYPE = ("", "v1", "events", "Event")
SCHEDULING_GATE = "bench.kfin.dev/never"  # a real scheduler never places the benchmark's Pods
FILLER = "settings for a service that an operator would keep in a config map; " * 8  # ~550 bytes


@dataclass(frozen=True)
class ObjectType:
    group: str
    version: str
    resource: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection(self, namespace: str) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{base}/namespaces/{namespace}/{self.resource}"


def object_types(crds: int) -> list[ObjectType]:
    """The types of an app's objects (Events come beside them)."""
    return [ObjectType(*t) for t in BUILTIN_TYPES] + [
        ObjectType(GROUP, "v1", f"gadget{i:02d}s", f"Gadget{i:02d}") for i in range(crds)]


def namespace_of(index: int) -> str:
    return f"{NAMESPACE_PREFIX}{index // PER_NAMESPACE:03d}"


def is_held(name: str) -> bool:
    """About one app object in a hundred stays Terminating (chosen by name, so every run holds the same)."""
    return not name.startswith("event-") and zlib.crc32(name.encode()) % 100 == 0


@dataclass(frozen=True)
class Planned:
    index: int
    type: ObjectType
    namespace: str
    name: str
    owner: int | None  # index of the owner in the same app
    level: int  # depth in the app's owner tree: owners are created in an earlier wave


def plan(start: int, stop: int, types: list[ObjectType]) -> list[Planned]:
    out = []
    for index in range(start, stop):
        position = index % CYCLE
        if position >= APP_SIZE:  # an Event about the app's first object
            out.append(Planned(index, ObjectType(*EVENT_TYPE), namespace_of(index), f"event-{index:06d}",
                               index - position, 1))
            continue
        rtype = types[position % len(types)]
        owner = index - position + (position - 1) // 2 if position else None
        out.append(Planned(index, rtype, namespace_of(index), f"{rtype.kind.lower()}-{index:06d}", owner,
                           (position + 1).bit_length() - 1))
    return out


def labels_of(item: Planned) -> dict:
    app = f"app-{item.index // CYCLE:05d}"
    return {**MANAGED, "app": app, "app.kubernetes.io/name": app, "app.kubernetes.io/instance": f"{app}-prod",
            "app.kubernetes.io/part-of": "kfin-bench", "app.kubernetes.io/version": "1.4.2",
            "helm.sh/chart": "bench-1.4.2"}


def annotations_of(item: Planned) -> dict:
    return {"meta.helm.sh/release-name": f"app-{item.index // CYCLE:05d}", "meta.helm.sh/release-namespace":
            item.namespace, "kfin.dev/bench-note": f"created by python -m bench as object {item.index}"}


def event_body(item: Planned, about: tuple[Planned, str]) -> dict:
    subject, uid = about
    moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": item.name, "namespace": item.namespace, "labels": labels_of(item)},
            "involvedObject": {"apiVersion": subject.type.api_version, "kind": subject.type.kind,
                               "name": subject.name, "namespace": subject.namespace, "uid": uid},
            "reason": "Reconciled", "type": "Normal", "count": item.index % 7 + 1,
            "message": f"reconciled {subject.type.kind} {subject.name}: configuration applied, 3 replicas ready",
            "firstTimestamp": moment, "lastTimestamp": moment,
            "source": {"component": "bench-controller", "host": "node-1"},
            "reportingComponent": "bench-controller", "reportingInstance": "bench-controller-7d9f8"}


def body(item: Planned, owner: tuple[Planned, str] | None) -> dict:
    if item.type.kind == "Event":
        return event_body(item, owner)
    meta = {"name": item.name, "namespace": item.namespace, "labels": labels_of(item),
            "annotations": annotations_of(item)}
    if is_held(item.name):
        meta["finalizers"] = [HOLD]
    if owner is not None:
        parent, uid = owner
        meta["ownerReferences"] = [{"apiVersion": parent.type.api_version, "kind": parent.type.kind,
                                    "name": parent.name, "uid": uid, "controller": True,
                                    "blockOwnerDeletion": True}]
    obj = {"apiVersion": item.type.api_version, "kind": item.type.kind, "metadata": meta}
    kind = item.type.kind
    if kind == "ConfigMap":
        obj["data"] = {"app.properties": FILLER}
    elif kind == "Secret":
        obj["type"] = "Opaque"
        obj["data"] = {"token": base64.b64encode(FILLER[:300].encode()).decode()}
    elif kind == "Pod":
        obj["spec"] = {"schedulingGates": [{"name": SCHEDULING_GATE}], "serviceAccountName": "default",
                       "containers": [{"name": "app", "image": "registry.example/app:1.4.2",
                                       "env": [{"name": "MODE", "value": "production"}],
                                       "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
    elif kind == "Role":
        obj["rules"] = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]
    elif kind == "RoleBinding":
        obj["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}
        obj["subjects"] = [{"kind": "ServiceAccount", "name": "default", "namespace": item.namespace}]
    elif item.type.group == GROUP:
        obj["spec"] = {"replicas": item.index % 5 + 1, "config": FILLER[:400]}
    return obj


def crd_body(rtype: ObjectType) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{rtype.resource}.{GROUP}", "labels": dict(MANAGED)},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": rtype.resource, "singular": rtype.resource[:-1], "kind": rtype.kind,
                               "listKind": f"{rtype.kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


class Loader:
    """Grows the data set to N objects on one server (kfin's Kube connection), and removes it."""

    def __init__(self, kube, crds: int = 20, concurrency: int = 16, log=print):
        self.kube = kube
        self.types = object_types(crds)
        self.concurrency = concurrency
        self.loaded = 0
        self.uids: dict[int, str] = {}
        self.held: list[Planned] = []
        self.log = log

    def _parallel(self, work, items):
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(work, items))

    def prepare(self) -> None:
        """Clear what an interrupted run left behind, then create the CRDs and wait until they serve."""
        if self._leftover_namespaces() or self._crds():
            self.log("removing what an earlier benchmark run left behind")
            self.cleanup()
        crds = [t for t in self.types if t.group == GROUP]
        self._parallel(lambda t: self.kube.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                                   body=crd_body(t)), crds)
        deadline = time.monotonic() + 120
        pending = {f"{t.resource}.{GROUP}" for t in crds}
        while pending:
            for name in sorted(pending):
                crd = self.kube.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                conditions = (crd.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    pending.discard(name)
            if pending and time.monotonic() > deadline:
                raise RuntimeError(f"CRDs not established after 120 s: {', '.join(sorted(pending))}")
            if pending:
                time.sleep(0.2)
        # A real server serves a new CRD's API a moment after Established; wait until a list works.
        for rtype in crds:
            while True:
                try:
                    self.kube.request("GET", f"/apis/{GROUP}/v1/{rtype.resource}", {"limit": 1})
                    break
                except NotFoundError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)

    def grow(self, total: int) -> None:
        """Create objects up to `total`, then delete the held ones so that they stay Terminating."""
        if total <= self.loaded:
            return
        items = plan(self.loaded, total, self.types)
        namespaces = sorted({i.namespace for i in items} - {namespace_of(i) for i in range(self.loaded)})
        self._parallel(lambda ns: self.kube.request("POST", "/api/v1/namespaces", body={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": dict(MANAGED)}}), namespaces)
        by_index = {i.index: i for i in items}
        for level in range(max(i.level for i in items) + 1):
            wave = [i for i in items if i.level == level]

            def create(item: Planned) -> None:
                owner = None
                if item.owner is not None:
                    parent = by_index.get(item.owner) or plan(item.owner, item.owner + 1, self.types)[0]
                    owner = (parent, self.uids[item.owner])
                created = self.kube.request("POST", item.type.collection(item.namespace), body=body(item, owner))
                self.uids[item.index] = created["metadata"]["uid"]
            self._parallel(create, wave)
        held = [i for i in items if is_held(i.name)]
        self._parallel(lambda i: self.kube.request("DELETE", f"{i.type.collection(i.namespace)}/{i.name}"), held)
        self.held += held
        self.loaded = total

    def expected_terminating(self) -> set[tuple[str, str, str]]:
        """(kind, namespace, name) of every object the loader left Terminating."""
        return {(i.type.kind, i.namespace, i.name) for i in self.held}

    # ----- taking it away ----------------------------------------------------------------------------
    def _leftover_namespaces(self) -> list[str]:
        found = self.kube.request("GET", "/api/v1/namespaces",
                                  {"labelSelector": "app.kubernetes.io/managed-by=kfin-bench"}) or {}
        return [n["metadata"]["name"] for n in found.get("items") or []]

    def _crds(self) -> list[str]:
        found = self.kube.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                  {"labelSelector": "app.kubernetes.io/managed-by=kfin-bench"}) or {}
        return [c["metadata"]["name"] for c in found.get("items") or []]

    def _release_held(self, namespace: str) -> None:
        """Remove the bench's own finalizer from whatever in `namespace` still has it."""
        for rtype in self.types:
            try:
                page = self.kube.request("GET", rtype.collection(namespace)) or {}
            except NotFoundError:
                continue
            for obj in page.get("items") or []:
                finalizers = obj["metadata"].get("finalizers") or []
                if HOLD in finalizers:
                    kept = [f for f in finalizers if f != HOLD]
                    try:
                        self.kube.request("PATCH", f"{rtype.collection(namespace)}/{obj['metadata']['name']}",
                                          body={"metadata": {"finalizers": kept or None,
                                                             "resourceVersion": obj["metadata"]["resourceVersion"]}},
                                          content_type="application/merge-patch+json")
                    except NotFoundError:
                        pass

    def cleanup(self, timeout: float = 600) -> None:
        """Delete every namespace and CRD the loader made, and wait until they are gone."""
        namespaces = self._leftover_namespaces()
        self._parallel(self._release_held, namespaces)

        def delete(path: str) -> None:
            try:
                self.kube.request("DELETE", path)
            except NotFoundError:
                pass
        self._parallel(delete, [f"/api/v1/namespaces/{ns}" for ns in namespaces])
        deadline = time.monotonic() + timeout
        while self._leftover_namespaces():
            if time.monotonic() > deadline:
                raise RuntimeError("benchmark namespaces still terminating after cleanup")
            time.sleep(1)
        self._parallel(delete, [f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
                                for name in self._crds()])
        while self._crds():
            if time.monotonic() > deadline:
                raise RuntimeError("benchmark CRDs still present after cleanup")
            time.sleep(1)
        self.loaded, self.uids, self.held = 0, {}, []


def connect(kubeconfig: str, context: str | None):
    from kfin.api.connection import Kube, Target
    try:
        return Kube.connect(Target(kubeconfig, context, 60))
    except KfinError as error:
        raise SystemExit(f"error: {error.message}") from None
