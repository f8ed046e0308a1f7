"""The deployment, replicaset and statefulset controllers, as far as kfin observes them: a Deployment owns a
ReplicaSet named after its Pod template's hash, a ReplicaSet or StatefulSet owns its Pods, each by a controller
ownerReference with blockOwnerDeletion (so deleting a workload cascades through the garbage collector), and
their status counts the Pods that are ready. The Pods stay Pending: the fake, like the real tier, has no
scheduler and no kubelet; a test that wants a workload running writes its Pods' status (phase Running, Ready
True), as the real tier's replicaset controller then counts them too. Shapes follow what kube-controller-manager
v1.36.2 wrote on the real tier (names, labels, annotations, status fields, zero counts left out).
A Deployment's new replica count is given to its ReplicaSet (with the desired- and max-replicas annotations:
pkg/controller/deployment/sync.go scale, util.SetReplicasAnnotations, maxSurge 25% rounded up), and a ReplicaSet
with more Pods than it wants deletes the extra ones, not-ready first, then the newest (pkg/controller/replicaset
getPodsToDelete, simplified from its ranking): a Pod not bound to a node goes at once, as kube-apiserver deletes it.
Simplified: the hash is not the real one (FNV of the template), one revision only (a template change is not
rolled out), a StatefulSet's scale-down and DaemonSets are not modelled."""

import copy
import hashlib
import json

from . import status as st

DEPLOYMENTS = ("apps", "deployments")
REPLICASETS = ("apps", "replicasets")
STATEFULSETS = ("apps", "statefulsets")
PODS = ("", "pods")
WORKLOADS = (DEPLOYMENTS, REPLICASETS, STATEFULSETS)
OWNED_PODS = {"ReplicaSet": REPLICASETS, "StatefulSet": STATEFULSETS}
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # the characters of generated names
REVISION = "deployment.kubernetes.io/revision"


def _template_hash(template: dict) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(ALPHANUMS[b % len(ALPHANUMS)] for b in digest[:10])


def _owner_reference(kind: str, owner: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": kind, "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def _controller_uid(obj: dict) -> str | None:
    return next((r.get("uid") for r in obj["metadata"].get("ownerReferences", []) if r.get("controller")), None)


def _ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _pod_spec(template_spec: dict) -> dict:
    spec = copy.deepcopy(template_spec)
    if spec.get("serviceAccountName"):
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    return spec


def _max_replicas(replicas: int) -> int:
    """The max-replicas annotation: the replicas and the default maxSurge, 25% of them rounded up."""
    return replicas + -(-replicas // 4)


def _counts(always: tuple[str, ...] = (), **counts: int) -> dict:
    """Status counts as the API shows them: zeros left out (omitempty), terminatingReplicas and `always` kept (a
    ReplicaSet's or StatefulSet's replicas has no omitempty: 0 after a scale-down to none, on the real tier)."""
    return {k: v for k, v in counts.items() if v or k == "terminatingReplicas" or k in always}


class WorkloadControllers:
    def __init__(self, cluster):
        self.c = cluster

    def changed(self, key: tuple, obj: dict) -> None:
        """A workload or a Pod was written (or, for a Pod, removed): bring what owns what up to date."""
        if key == PODS:
            owner = self.c.by_identity(_controller_uid(obj) or "")
            if owner is not None and owner.get("kind") in OWNED_PODS:
                self.pods_of(OWNED_PODS[owner["kind"]], owner)
        elif key == DEPLOYMENTS:
            self.deployment(obj)
        elif key in (REPLICASETS, STATEFULSETS):
            self.pods_of(key, obj)
            if key == REPLICASETS:
                deployment = self.c.by_identity(_controller_uid(obj) or "")
                if deployment is not None and deployment.get("kind") == "Deployment":
                    self.deployment(deployment)

    def _owned(self, key: tuple, owner: dict) -> list[dict]:
        uid = owner["metadata"]["uid"]
        return [o for o in self.c.list(self.c.types[key], owner["metadata"]["namespace"]) if _controller_uid(o) == uid]

    def deployment(self, deployment: dict) -> None:
        c = self.c
        meta, spec = deployment["metadata"], deployment.get("spec") or {}
        template, replicas = spec.get("template") or {}, spec.get("replicas", 1)
        sets = self._owned(REPLICASETS, deployment)
        if not sets and not meta.get("deletionTimestamp"):
            pod_hash = _template_hash(template)
            labels = {**((template.get("metadata") or {}).get("labels") or {}), "pod-template-hash": pod_hash}
            selector = copy.deepcopy(spec.get("selector") or {})
            selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
            c.create(c.types[REPLICASETS], meta["namespace"], {
                "metadata": {"name": f"{meta['name']}-{pod_hash}", "labels": labels,
                             "annotations": {"deployment.kubernetes.io/desired-replicas": str(replicas),
                                             "deployment.kubernetes.io/max-replicas": str(_max_replicas(replicas)),
                                             REVISION: "1"},
                             "ownerReferences": [_owner_reference("Deployment", deployment)]},
                "spec": {"replicas": replicas, "selector": selector,
                         "template": {"metadata": {**copy.deepcopy(template.get("metadata") or {}), "labels": labels},
                                      "spec": copy.deepcopy(template.get("spec") or {})}}})
            return  # the ReplicaSet's own change brings the Deployment's status
        if not meta.get("deletionTimestamp"):
            for rs in [rs for rs in sets if (rs.get("spec") or {}).get("replicas", 1) != replicas]:
                self._update(REPLICASETS, rs, lambda o: self._scaled(o, replicas))
        current = c.by_identity(meta["uid"])
        if current is None:
            return
        if (current["metadata"].get("annotations") or {}).get(REVISION) != "1":
            current = self._update(DEPLOYMENTS, current, lambda o: o["metadata"].setdefault(
                "annotations", {}).__setitem__(REVISION, "1"))
        statuses = [rs.get("status") or {} for rs in sets]
        total = sum(s.get("replicas", 0) for s in statuses)
        available = sum(s.get("availableReplicas", 0) for s in statuses)
        self._status(DEPLOYMENTS, current, {"observedGeneration": current["metadata"].get("generation", 1),
                                            **_counts(replicas=total, updatedReplicas=total,
                                                      readyReplicas=sum(s.get("readyReplicas", 0) for s in statuses),
                                                      availableReplicas=available,
                                                      unavailableReplicas=max(replicas - available, 0),
                                                      terminatingReplicas=0)})

    @staticmethod
    def _scaled(replica_set: dict, replicas: int) -> None:
        replica_set["spec"]["replicas"] = replicas
        replica_set["metadata"].setdefault("annotations", {}).update({
            "deployment.kubernetes.io/desired-replicas": str(replicas),
            "deployment.kubernetes.io/max-replicas": str(_max_replicas(replicas))})

    def pods_of(self, key: tuple, owner: dict) -> None:
        """Create the Pods a ReplicaSet or StatefulSet wants and lacks (a StatefulSet's are <name>-0, <name>-1,
        ...), delete those a ReplicaSet has too many (a StatefulSet never has fewer: its scale-down is not
        modelled), and count them in its status."""
        c = self.c
        owner = c.by_identity(owner["metadata"]["uid"])
        if owner is None:
            return
        meta, spec = owner["metadata"], owner.get("spec") or {}
        template, kind = spec.get("template") or {}, owner["kind"]
        pods = self._owned(PODS, owner)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if not meta.get("deletionTimestamp"):
            for index in range(len(live), spec.get("replicas", 1)):
                pod_meta = {"labels": copy.deepcopy((template.get("metadata") or {}).get("labels") or {}),
                            "ownerReferences": [_owner_reference(kind, owner)]}
                if kind == "StatefulSet":
                    pod_meta["name"] = f"{meta['name']}-{index}"
                else:
                    pod_meta["generateName"] = f"{meta['name']}-"
                try:
                    live.append(c.create(c.types[PODS], meta["namespace"],
                                         {"metadata": pod_meta, "spec": _pod_spec(template.get("spec") or {})}))
                except st.APIError:  # its namespace is being terminated: the real controller's create fails too
                    break
            if kind == "ReplicaSet":
                extra = len(live) - spec.get("replicas", 1)
                newest_first = sorted(live, key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)
                for pod in sorted(newest_first, key=_ready)[:max(extra, 0)]:  # not ready first
                    c.delete(c.types[PODS], pod, None, None)
                pods = self._owned(PODS, owner)
                live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        ready = len([p for p in live if _ready(p)])
        counts = _counts(("replicas",), replicas=len(live), fullyLabeledReplicas=len(live) if kind == "ReplicaSet" else 0,
                         readyReplicas=ready, availableReplicas=ready, terminatingReplicas=len(pods) - len(live))
        self._status(key, owner, {**counts, "observedGeneration": meta.get("generation", 1)})

    def _status(self, key: tuple, obj: dict, status: dict) -> None:
        counted = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas",
                   "updatedReplicas", "terminatingReplicas", "observedGeneration")
        before = obj.get("status") or {}
        if {k: v for k, v in before.items() if k in counted} != status:
            kept = {k: v for k, v in before.items() if k not in counted}
            self._update(key, obj, lambda o: o.__setitem__("status", {**status, **kept}), "status")

    def _update(self, key, obj, mutate, subresource=""):
        new = copy.deepcopy(obj)
        mutate(new)
        new["metadata"].pop("resourceVersion", None)
        return self.c.update(self.c.types[key], obj, new, subresource=subresource)
