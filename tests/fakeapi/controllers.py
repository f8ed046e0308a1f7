"""The controllers of kube-controller-manager and kube-apiserver that decide when a Terminating object goes.

They run synchronously after every write until nothing is left to do, so the fake reaches the state a
real cluster reaches a few seconds later. Scenario tests poll for that state, which makes them pass on
both. Each controller follows the real one for what kfin observes:
- garbage collector: background (dependents go after the owner is gone, dangling owners included),
  foreground (the owner keeps `foregroundDeletion` until no dependent with blockOwnerDeletion remains),
  orphan (ownerReferences removed, then `orphan`);
- namespace controller: deletes the content, reports the conditions, finalizes when empty. While an aggregated
  API is unavailable it still deletes all it can discover and reports what remains, with
  NamespaceDeletionDiscoveryFailure, but never finalizes (discovery errors are not fatal: deleteAllContent in
  pkg/controller/namespace/deletion/namespaced_resources_deleter.go; seen on the real tier). Such a failed sync is
  retried after a backoff (the real workqueue's: 5 ms doubling at each failure, capped at 60 s, so a namespace that
  failed for seconds waits seconds, one that failed for a minute waits a minute: nsControllerRateLimiter in
  namespace_controller.go): the fake waits DISCOVERY_BACKOFF_SECONDS of its clock, until a test advances it and
  calls FakeAPIServer.reconcile(); meanwhile the namespace keeps its conditions, stale once the APIService is fixed
  or gone. Other failures it retries at the next write, as the real one does within its backoff;
- pvc-protection (any scheduled Pod using the claim holds it, whatever its phase), pv-protection
  (a Bound volume is held), and a minimal volume binder;
- the deployment, replicaset and statefulset controllers (a workload's Pods, Pending: tests/fakeapi/workloads.py);
- CRD finalizer (instances are deleted before the CRD goes), APIService availability,
  kube-root-ca.crt publisher and the default ServiceAccount of each namespace;
- node lifecycle (a node that stops posting status turns Ready Unknown after 50 s and gets the
  unreachable taints; its Pods turn Ready False), taint eviction (scheduled for Pods that tolerate the
  taint for a while; a forced deletion cancels it), the pod garbage collector (a Pod bound to a
  missing node goes after a 40 s quarantine), the EndpointSlice controller (a slice without
  endpoints: the fake runs no Pods), and the Events these controllers record.
Timers do not run by themselves: a test advances the fake's clock and calls FakeAPIServer.reconcile().
Writes by these controllers are not sent through admission, except the DELETEs of the namespace controller and
the garbage collector and the garbage collector's releases of an orphaning owner's dependents (UPDATEs), as their
ServiceAccounts; a rejected one is retried when an admission configuration changes and on the fake's reconcile, as
the real controllers retry with backoff. They record no managedFields.
"""

import copy
import ipaddress
import re
import time
from datetime import datetime, timezone

from . import admission, conversion, policies, rbac, undecodable, webhooks
from . import status as st
from .cluster import CRD_CLEANUP, AggregatedAPI, ResourceType
from .workloads import WORKLOADS, WorkloadControllers

NAMESPACES = ("", "namespaces")
PODS = ("", "pods")
PVCS = ("", "persistentvolumeclaims")
PVS = ("", "persistentvolumes")
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
APISERVICES = ("apiregistration.k8s.io", "apiservices")
NODES = ("", "nodes")
SERVICES = ("", "services")
EVENTS = ("", "events")
SLICES = ("discovery.k8s.io", "endpointslices")
SERVICE_CIDRS = ("networking.k8s.io", "servicecidrs")
IP_ADDRESSES = ("networking.k8s.io", "ipaddresses")
VACS = ("storage.k8s.io", "volumeattributesclasses")
RESOURCE_CLAIMS = ("resource.k8s.io", "resourceclaims")
PODGROUPS = ("scheduling.k8s.io", "podgroups")  # served with the GenericWorkload gate (1.36 alpha)
ADMISSION_CONFIGURATIONS = tuple(("admissionregistration.k8s.io", kind) for kind in (
    "validatingwebhookconfigurations", "mutatingwebhookconfigurations", "validatingadmissionpolicies",
    "validatingadmissionpolicybindings"))
SERVICE_CIDR_FINALIZER = "networking.k8s.io/service-cidr-finalizer"
# kube-controller-manager's namespace controller, with --use-service-account-credentials
NAMESPACE_CONTROLLER = "system:serviceaccount:kube-system:namespace-controller"
GARBAGE_COLLECTOR = "system:serviceaccount:kube-system:generic-garbage-collector"  # likewise
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
# kube-controller-manager's defaults: --node-monitor-grace-period (1.32+) and the pod GC's quarantine.
NODE_MONITOR_GRACE_SECONDS = 50
POD_GC_QUARANTINE_SECONDS = 40
UNREACHABLE = "node.kubernetes.io/unreachable"
NODE_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
ROOT_CA = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as "
    "the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters.")
MAX_STEPS = 1_000_000
DISCOVERY_BACKOFF_SECONDS = 60  # the namespace controller's backoff once a namespace has failed a while (its cap)


class Controllers:
    def __init__(self, cluster):
        self.c = cluster
        self.enabled = True
        self._renewed = 0.0
        self._orphaned_since: dict[str, float] = {}  # Pod uid -> when the pod GC first saw its node missing
        self._evictions: set[str] = set()  # Pod uids the taint eviction controller has scheduled
        self._namespace_retry_at: dict[str, float] = {}  # namespace -> when its failed discovery is retried
        self.workloads = WorkloadControllers(cluster)

    # ----- the loop --------------------------------------------------------------------------------
    def run(self):
        if not self.enabled:
            self.c.events.clear()
            return
        steps = 0
        while self.c.events:
            steps += 1
            if steps > MAX_STEPS:
                raise RuntimeError("controllers did not settle")
            event = self.c.events.pop(0)
            self.handle(*event)

    def tick(self):
        """What the controllers do on their timers rather than on a write (see FakeAPIServer.reconcile)."""
        if not self.enabled:
            return
        self.monitor_nodes()
        self.collect_orphaned_pods()
        self.retry_garbage_collection()
        self.retry_namespaces()
        self.run()

    def renew_lease(self):
        """kube-controller-manager's leader lease, renewed every 2 s while the controllers run, as the real
        one is: kfin reads it to tell whether that controller-manager is alive."""
        c = self.c
        if not self.enabled:
            return
        now = time.time() + c.clock_offset
        if now - self._renewed < 2:
            return
        self._renewed = now
        leases = c.types[("coordination.k8s.io", "leases")]
        stamp = datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease = c.find(leases, "kube-system", "kube-controller-manager")
        spec = {"holderIdentity": "fake-control-plane_1b2c3d", "leaseDurationSeconds": 15, "acquireTime": stamp,
                "renewTime": stamp, "leaseTransitions": 0}
        if lease is None:
            c.create(leases, "kube-system", {"metadata": {"name": "kube-controller-manager"}, "spec": spec})
        else:
            self._update(("coordination.k8s.io", "leases"), lease,
                         lambda o: o["spec"].update(renewTime=stamp))
        self.run()

    def handle(self, what, key, namespace, name, gone=None):
        c = self.c
        rt = c.types.get(key)
        obj = gone if what == "removed" else (c.find(rt, namespace, name) if rt else None)
        if obj is None:
            return
        if key == NAMESPACES:
            self.namespace_changed(what, obj)
        elif key == CRDS:
            if what == "removed":
                self.unregister_crd(obj)  # forced away (finalizer stripped): its API goes with it
            else:
                self.crd_changed(obj)
            if what == "updated":
                self.retry_namespaces()
        elif key == APISERVICES:
            self.apiservice_changed(what, obj)
        elif key == PVCS:
            self.pvc_changed(what, obj)
        elif key == PVS:
            if what == "removed":
                self.volume_gone(obj)
            else:
                self.pv_changed(obj)
        elif key == PODS:
            if what == "removed":
                self.pod_gone(obj)
            self.pod_changed(obj, gone=what == "removed")
            self.workloads.changed(key, obj)
        elif key == SERVICES:
            if what == "removed":
                self.release_address(obj)
            else:
                self.service_changed(obj)
                self.allocate_address(obj)
        elif key == SERVICE_CIDRS and what != "removed":
            self.service_cidr_changed(obj)
        elif key == IP_ADDRESSES and what == "removed":
            self.check_service_cidrs()
        elif key == VACS and what != "removed":
            self.check_vac_protection()
        elif key == RESOURCE_CLAIMS and what != "removed":
            self.check_resource_claim(obj)
        elif key == PODGROUPS and what != "removed":
            self.check_podgroup(obj)
        elif key in WORKLOADS and what != "removed":
            self.workloads.changed(key, obj)
        elif key in ADMISSION_CONFIGURATIONS:
            self.retry_namespaces()  # what rejected the namespace controller's deletions may be gone
            self.retry_garbage_collection()  # and the garbage collector's
        if key in (PVCS, PVS):
            self.check_vac_protection()
        if key == PODS:
            for claim in self._claims_reserved_for(obj):
                self.check_resource_claim(claim)
            group = ((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
            if group and PODGROUPS in c.types:
                podgroup = c.find(c.types[PODGROUPS], namespace, group)
                if podgroup is not None:
                    self.check_podgroup(podgroup)
        if key == PODS or (key == PVCS and what != "removed"):
            self.update_unused_conditions(namespace)
        self.garbage_collect(what, obj)
        if namespace and what in ("removed", "updated", "deleting"):
            ns = c.find(c.types[NAMESPACES], "", namespace)
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self.finalize_namespace(ns)
        if rt is not None and rt.origin == "crd" and what == "removed":
            crd = c.find(c.types[CRDS], "", f"{rt.name}.{rt.group}")
            if crd is not None and crd["metadata"].get("deletionTimestamp"):
                self.crd_changed(crd)

    def _update(self, key, obj, mutate, subresource=""):
        new = copy.deepcopy(obj)
        mutate(new)
        new["metadata"].pop("resourceVersion", None)
        return self.c.update(self.c.types[key], obj, new, subresource=subresource)

    def _remove_finalizer(self, key, obj, finalizer):
        def drop(o):
            o["metadata"]["finalizers"] = [f for f in o["metadata"].get("finalizers", []) if f != finalizer]
        if finalizer in obj["metadata"].get("finalizers", []):
            self._update(key, obj, drop)

    # ----- garbage collector -----------------------------------------------------------------------
    def _owner(self, dependent: dict, ref: dict):
        """(state, owner) with state solid | dangling | waiting | unresolvable, as the real GC classifies."""
        c = self.c
        rt = c.type_for_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if rt is None:
            return "unresolvable", None
        dependent_ns = dependent["metadata"].get("namespace", "")
        if rt.namespaced and not dependent_ns:
            return "unresolvable", None  # a cluster-scoped dependent cannot have a namespaced owner
        owner = c.find(rt, dependent_ns if rt.namespaced else "", ref.get("name", ""))
        if owner is None or owner["metadata"]["uid"] != ref.get("uid"):
            return "dangling", None
        meta = owner["metadata"]
        if meta.get("deletionTimestamp") and "foregroundDeletion" in meta.get("finalizers", []):
            return "waiting", owner
        return "solid", owner

    def garbage_collect(self, what, obj):
        c = self.c
        meta = obj["metadata"]
        if what != "removed":
            if meta.get("ownerReferences"):
                self.attempt_to_delete(obj)
            if meta.get("deletionTimestamp"):
                if "orphan" in meta.get("finalizers", []):
                    self.orphan_dependents(obj)
                elif "foregroundDeletion" in meta.get("finalizers", []):
                    self.delete_dependents(obj)
        for dependent_uid in list(c.dependents.get(meta["uid"], ())):
            dependent = c.by_identity(dependent_uid)
            if dependent is not None and what in ("removed", "deleting"):
                self.attempt_to_delete(dependent)
        # A dependent that changed may unblock an owner waiting in foreground deletion.
        for ref in meta.get("ownerReferences", []):
            owner = c.by_identity(ref.get("uid", ""))
            if owner is not None and "foregroundDeletion" in owner["metadata"].get("finalizers", []) \
                    and owner["metadata"].get("deletionTimestamp"):
                self.delete_dependents(owner)

    def _type_of(self, obj):
        return self.c.type_for_kind(obj["apiVersion"], obj["kind"])

    def attempt_to_delete(self, obj):
        c = self.c
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and "foregroundDeletion" not in meta.get("finalizers", []):
            return
        states = [(self._owner(obj, ref), ref) for ref in meta.get("ownerReferences", [])]
        solid = [ref for (s, _), ref in states if s == "solid"]
        dangling = [ref for (s, _), ref in states if s == "dangling"]
        waiting = [ref for (s, _), ref in states if s == "waiting"]
        if any(s == "unresolvable" for (s, _), _ in states) and not (solid or dangling or waiting):
            return
        if solid:
            drop = {r["uid"] for r in dangling + waiting}
            if drop:
                self._update(self._type_of(obj).key, obj, lambda o: o["metadata"].__setitem__(
                    "ownerReferences", [r for r in o["metadata"]["ownerReferences"] if r.get("uid") not in drop]))
            return
        if not (dangling or waiting):
            return
        if meta.get("deletionTimestamp"):
            return
        rt = self._type_of(obj)
        has_dependents = bool(c.dependents.get(meta["uid"]))
        if waiting and has_dependents:
            policy = "Foreground"
        elif "orphan" in meta.get("finalizers", []):
            policy = "Orphan"
        elif "foregroundDeletion" in meta.get("finalizers", []):
            policy = "Foreground"
        else:
            policy = "Background"
        # admitted as its ServiceAccount, as kube-controller-manager's DELETEs are (--use-service-account-credentials)
        try:
            webhooks.admit(c, "DELETE", rt, meta.get("namespace") or None, "", meta.get("labels") or {},
                           name=meta.get("name", ""), old=obj,
                           user=rbac.service_account_user("kube-system", "generic-garbage-collector"))
            policies.admit(c, rt, "DELETE", obj, None, "", GARBAGE_COLLECTOR)
        except st.APIError:
            return  # the real one logs it and retries with backoff (retry_garbage_collection); the owner shows nothing
        c.delete(rt, obj, policy, None)

    def delete_dependents(self, owner):
        """processDeletingDependentsItem: the owner goes once no blocking dependent remains."""
        c = self.c
        blocking = []
        for uid in list(c.dependents.get(owner["metadata"]["uid"], ())):
            dependent = c.by_identity(uid)
            if dependent is None:
                continue
            self.attempt_to_delete(dependent)
            dependent = c.by_identity(uid)
            if dependent is None:
                continue
            refs = [r for r in dependent["metadata"].get("ownerReferences", [])
                    if r.get("uid") == owner["metadata"]["uid"]]
            if any(r.get("blockOwnerDeletion") for r in refs):
                blocking.append(dependent)
        if not blocking:
            current = c.by_identity(owner["metadata"]["uid"])
            if current is not None:
                self._remove_finalizer(self._type_of(current).key, current, "foregroundDeletion")

    def retry_garbage_collection(self):
        """The garbage collector retries a deletion or a release that failed (the real one, with its backoff): what
        rejected it may be gone."""
        c = self.c
        for owner_uid in list(c.dependents):
            for uid in list(c.dependents.get(owner_uid, ())):
                dependent = c.by_identity(uid)
                if dependent is not None:
                    self.attempt_to_delete(dependent)
            owner = c.by_identity(owner_uid)
            if owner is None or not owner["metadata"].get("deletionTimestamp"):
                continue
            if "orphan" in owner["metadata"].get("finalizers", []):
                self.orphan_dependents(owner)
            elif "foregroundDeletion" in owner["metadata"].get("finalizers", []):
                self.delete_dependents(owner)

    def orphan_dependents(self, owner):
        """attemptToOrphan (garbagecollector.go orphanDependents): each dependent released, its ownerReference to the
        owner removed by a patch that admission sees as an UPDATE by the garbage collector's ServiceAccount; `orphan`
        goes only once every one is released. A rejected one leaves it: the real collector logs the error and
        retries with backoff (here: retry_garbage_collection), the owner shows nothing."""
        c = self.c
        uid = owner["metadata"]["uid"]
        released_all = True
        for dependent_uid in list(c.dependents.get(uid, ())):
            dependent = c.by_identity(dependent_uid)
            if dependent is None:
                continue

            def release(o):
                kept = [r for r in o["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
                if kept:
                    o["metadata"]["ownerReferences"] = kept
                else:  # an empty list is dropped (omitempty), as the strategic merge patch leaves it
                    o["metadata"].pop("ownerReferences", None)

            rt, meta = self._type_of(dependent), dependent["metadata"]
            released = copy.deepcopy(dependent)
            release(released)
            try:
                webhooks.admit(c, "UPDATE", rt, meta.get("namespace") or None, "", meta.get("labels") or {},
                               name=meta.get("name", ""), old=dependent, new=released,
                               user=rbac.service_account_user("kube-system", "generic-garbage-collector"))
                policies.admit(c, rt, "UPDATE", dependent, released, "", GARBAGE_COLLECTOR)
            except st.APIError:
                released_all = False
                continue
            self._update(rt.key, dependent, release)
        current = c.by_identity(uid)
        if current is not None and released_all:
            self._remove_finalizer(self._type_of(current).key, current, "orphan")

    # ----- namespaces ------------------------------------------------------------------------------
    def namespace_changed(self, what, ns):
        c = self.c
        name = ns["metadata"]["name"]
        if what == "created":
            cm_type, sa_type = c.types[("", "configmaps")], c.types[("", "serviceaccounts")]
            if c.find(cm_type, name, ROOT_CA) is None:
                c.create(cm_type, name, {"metadata": {"name": ROOT_CA, "annotations": {
                    "kubernetes.io/description": ROOT_CA_DESCRIPTION}}, "data": {"ca.crt": "fake-ca"}})
            if c.find(sa_type, name, "default") is None:
                c.create(sa_type, name, {"metadata": {"name": "default"}})
        elif ns["metadata"].get("deletionTimestamp") and what != "removed":
            self.finalize_namespace(ns, delete_content=True)

    def discovery_failures(self) -> list[str]:
        return sorted(gv for gv in self.c.aggregated if gv not in self.c.aggregated_backends)

    def finalize_namespace(self, ns, delete_content=False):
        c = self.c
        name = ns["metadata"]["name"]
        if "kubernetes" not in (ns.get("spec") or {}).get("finalizers", []):
            return
        now = c.now()
        if time.time() + c.clock_offset < self._namespace_retry_at.get(name, 0):
            return  # backing off after a failed discovery: not retried before its time
        self._namespace_retry_at.pop(name, None)
        failing = self.discovery_failures()
        namespaced = [rt for rt in c.types.values() if rt.namespaced and "delete" in rt.verbs
                      and rt.origin != "aggregated"]
        # OrderedNamespaceDeletion (locked on since 1.34, namespaced_resources_deleter.go): the Pods first, and
        # nothing else is touched while one remains (seen on the real tier: a Widget waited for a Pod's finalizer)
        pods = c.types.get(PODS)
        if pods is not None and c.list(pods, name):
            if delete_content:
                for obj in c.list(pods, name):
                    if not obj["metadata"].get("deletionTimestamp"):
                        c.delete(pods, obj, "Background", None)
            if c.list(pods, name):
                namespaced = [pods]
        # a type whose deletecollection fails (a conversion webhook that cannot be called: conversion.py; an
        # admission webhook failing closed on DELETE of one of its objects; an object that cannot be decoded:
        # undecodable.py) is left as it is and counted nowhere,
        # as the real controller collects its error and carries on
        failed = {rt.key: error for rt in namespaced
                  if (error := conversion.namespace_deletion_error(c, rt, name)
                      or undecodable.namespace_deletion_error(c, rt, name) or _rejected_delete(c, rt, name))
                  is not None}
        if delete_content:
            for rt in namespaced:
                if rt.key in failed:
                    continue
                for obj in c.list(rt, name):
                    if not obj["metadata"].get("deletionTimestamp"):
                        c.delete(rt, obj, "Background", None)
        remaining, finalizers = {}, {}
        for rt in namespaced:
            if rt.key in failed:
                continue
            for obj in c.list(rt, name):
                resource = f"{rt.name}.{rt.group}" if rt.group else rt.name
                remaining[resource] = remaining.get(resource, 0) + 1
                for f in obj["metadata"].get("finalizers", []):
                    finalizers[f] = finalizers.get(f, 0) + 1
        ns = c.find(c.types[NAMESPACES], "", name)
        if ns is None:
            return
        if not remaining and not failed and not failing:
            self._update(NAMESPACES, ns, lambda o: o["spec"].__setitem__(
                "finalizers", [f for f in o["spec"]["finalizers"] if f != "kubernetes"]), subresource="finalize")
            return
        conditions = _ok_conditions()
        if failing:
            detail = ", ".join(f"{gv}: stale GroupVersion discovery: {gv}" for gv in failing)
            conditions["NamespaceDeletionDiscoveryFailure"] = ("True", "DiscoveryFailed",
                f"Discovery failed for some groups, {len(failing)} failing: unable to retrieve the complete list of "
                f"server APIs: {detail}")
            self._namespace_retry_at[name] = time.time() + c.clock_offset + DISCOVERY_BACKOFF_SECONDS
        if failed:  # the errors sorted and joined (status_condition_utils.go makeDeleteContentCondition)
            conditions["NamespaceDeletionContentFailure"] = ("True", "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(failed)} remaining: " + ", ".join(sorted(failed.values())))
        if remaining:
            conditions["NamespaceContentRemaining"] = ("True", "SomeResourcesRemain",
                "Some resources are remaining: " +
                ", ".join(f"{r} has {n} resource instances" for r, n in sorted(remaining.items())))
        if finalizers:
            conditions["NamespaceFinalizersRemaining"] = ("True", "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: " +
                ", ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items())))
        self._set_conditions(ns, now, conditions)

    def _set_conditions(self, ns, now, wanted: dict):
        def apply(o):
            old = {cond["type"]: cond for cond in (o.get("status") or {}).get("conditions") or []}
            out = []
            for ctype, (status, reason, message) in wanted.items():
                prev = old.get(ctype)
                since = prev["lastTransitionTime"] if prev and prev["status"] == status else now
                out.append({"type": ctype, "status": status, "lastTransitionTime": since,
                            "reason": reason, "message": message})
            o.setdefault("status", {})["conditions"] = out
        self._update(NAMESPACES, ns, apply, subresource="status")

    # ----- events ----------------------------------------------------------------------------------
    def record_event(self, obj: dict, event_type: str, reason: str, message: str, component: str,
                     with_identity: bool = True):
        """An Event about `obj`, as a controller records it (one object, which both events APIs show)."""
        c = self.c
        meta = obj["metadata"]
        now = c.now()
        involved = {"kind": obj.get("kind", ""), "namespace": meta.get("namespace", ""), "name": meta["name"]}
        if with_identity:
            involved.update(uid=meta.get("uid"), apiVersion=obj.get("apiVersion"),
                            resourceVersion=meta.get("resourceVersion"))
        else:
            involved["apiVersion"] = obj.get("apiVersion")
        # client-go names an Event after its object and the time in nanoseconds, in hex: they list in order
        name = f"{meta['name']}.{int((time.time() + c.clock_offset) * 1e9):x}"
        namespace = meta.get("namespace") or "default"
        return c.create(c.types[EVENTS], namespace, {"metadata": {"name": name}, "involvedObject": involved,
                        "reason": reason, "message": message, "source": {"component": component},
                        "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": event_type,
                        "eventTime": None, "reportingComponent": component, "reportingInstance": ""})

    # ----- nodes and their Pods --------------------------------------------------------------------
    def _seconds_since(self, stamp: str | None) -> float:
        from datetime import datetime
        if not stamp:
            return 0.0
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        return time.time() + self.c.clock_offset - moment

    def monitor_nodes(self):
        """The node lifecycle controller: a node whose kubelet has not posted status for the grace period
        turns Ready Unknown and gets the unreachable taints; its Pods turn Ready False (captures 17-18)."""
        c = self.c
        for node in c.list(c.types[NODES], None):
            conditions = {cond.get("type"): cond for cond in (node.get("status") or {}).get("conditions") or []}
            ready = conditions.get("Ready")
            if ready and ready.get("status") == "Unknown":
                continue
            last = (ready or {}).get("lastHeartbeatTime") or node["metadata"].get("creationTimestamp")
            if self._seconds_since(last) < NODE_MONITOR_GRACE_SECONDS:
                continue
            now = c.now()

            def unknown(o, conditions=conditions, last=last):
                out = []
                for kind in NODE_CONDITIONS:
                    had = conditions.get(kind)
                    reason, message = (("NodeStatusUnknown", "Kubelet stopped posting node status.") if had
                                       else ("NodeStatusNeverUpdated", "Kubelet never posted node status."))
                    out.append({"type": kind, "status": "Unknown", "lastHeartbeatTime": (had or {}).get(
                        "lastHeartbeatTime", last), "lastTransitionTime": now, "reason": reason, "message": message})
                o.setdefault("status", {})["conditions"] = out
            self._update(NODES, node, unknown, subresource="status")
            node = c.find(c.types[NODES], "", node["metadata"]["name"])

            def taint(o):
                taints = [t for t in (o.setdefault("spec", {}).get("taints") or []) if t.get("key") != UNREACHABLE]
                o["spec"]["taints"] = taints + [{"key": UNREACHABLE, "effect": effect, "timeAdded": now}
                                                for effect in ("NoSchedule", "NoExecute")]
            self._update(NODES, node, taint)
            for pod in c.list(c.types[PODS], None):
                if (pod.get("spec") or {}).get("nodeName") == node["metadata"]["name"]:
                    self._mark_not_ready(pod, now)

    def _mark_not_ready(self, pod: dict, now: str):
        def not_ready(o):
            conditions = [cond for cond in (o.setdefault("status", {}).get("conditions") or [])
                          if cond.get("type") != "Ready"]
            o["status"]["conditions"] = [{"type": "Ready", "status": "False", "lastProbeTime": None,
                                          "lastTransitionTime": now}] + conditions
        self.record_event(pod, "Warning", "NodeNotReady", "Node is not ready", "node-controller")
        self._update(PODS, pod, not_ready, subresource="status")
        tolerates = [t for t in (pod.get("spec") or {}).get("tolerations") or []
                     if t.get("key") == UNREACHABLE and t.get("effect") == "NoExecute"]
        if tolerates and tolerates[0].get("tolerationSeconds") is not None:
            self._evictions.add(pod["metadata"]["uid"])  # the taint eviction controller waits, then evicts

    def pod_gone(self, pod: dict):
        uid = pod["metadata"]["uid"]
        self._orphaned_since.pop(uid, None)
        if uid in self._evictions:
            self._evictions.discard(uid)
            meta = pod["metadata"]
            self.record_event(pod, "Normal", "TaintManagerEviction",
                              f"Cancelling deletion of Pod {meta.get('namespace')}/{meta['name']}",
                              "taint-eviction-controller", with_identity=False)

    def collect_orphaned_pods(self):
        """The pod garbage collector: a Pod bound to a node that does not exist goes after a quarantine
        (capture 24), deleted at once as no kubelet will ever confirm it."""
        c = self.c
        now = time.time() + c.clock_offset
        for pod in c.list(c.types[PODS], None):
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or c.find(c.types[NODES], "", node) is not None:
                continue
            since = self._orphaned_since.setdefault(pod["metadata"]["uid"], now)
            if now - since >= POD_GC_QUARANTINE_SECONDS:
                c.delete(c.types[PODS], pod, None, 0)
                current = c.find(c.types[PODS], pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
                if current is not None and not current["metadata"].get("finalizers"):
                    c.remove(c.types[PODS], current)

    # ----- endpoint slices -------------------------------------------------------------------------
    def service_changed(self, svc: dict):
        """The EndpointSlice controller: one slice for a Service with a selector; the fake has no running
        Pods, so it lists no endpoints (capture 16)."""
        c = self.c
        slices = c.types.get(SLICES)
        meta = svc["metadata"]
        if slices is None or not (svc.get("spec") or {}).get("selector"):
            return
        namespace, name = meta.get("namespace", ""), meta["name"]
        if any((s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name
               for s in c.list(slices, namespace)):
            return
        c.create(slices, namespace, {
            "metadata": {"generateName": f"{name}-", "labels": {
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                "kubernetes.io/service-name": name},
                "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": c.now()},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": name, "uid": meta["uid"],
                                     "controller": True, "blockOwnerDeletion": True}]},
            "addressType": "IPv4", "endpoints": None, "ports": None})

    # ----- service addresses ----------------------------------------------------------------------
    # kube-apiserver allocates a Service's cluster IP and records it as an IPAddress (simplified: only for
    # a Service that names its clusterIP, inside a ServiceCIDR; the fake has no default ServiceCIDR), and
    # kube-controller-manager's service-cidr controller keeps its finalizer on a ServiceCIDR while an address
    # of its ranges is allocated and no other ServiceCIDR covers it (pkg/controller/servicecidrs; the real one
    # also waits 10 s after the deletion, skipped here).
    def _cidrs(self, live_only: bool = True) -> list[tuple[dict, list]]:
        c = self.c
        out = []
        for cidr in c.list(c.types[SERVICE_CIDRS], None):
            if live_only and cidr["metadata"].get("deletionTimestamp"):
                continue
            nets = []
            for text in (cidr.get("spec") or {}).get("cidrs") or []:
                try:
                    nets.append(ipaddress.ip_network(text, strict=False))
                except ValueError:
                    continue
            out.append((cidr, nets))
        return out

    def allocate_address(self, svc: dict):
        c = self.c
        ip_text = (svc.get("spec") or {}).get("clusterIP")
        try:
            ip = ipaddress.ip_address(ip_text or "")
        except ValueError:
            return
        if not any(ip in n for _, nets in self._cidrs() for n in nets if n.version == ip.version):
            return
        meta = svc["metadata"]
        if c.find(c.types[IP_ADDRESSES], "", str(ip)) is None:
            c.create(c.types[IP_ADDRESSES], None, {"metadata": {"name": str(ip), "labels": {
                "ipaddress.kubernetes.io/ip-family": f"IPv{ip.version}",
                "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}},
                "spec": {"parentRef": {"group": "", "resource": "services", "namespace": meta.get("namespace", ""),
                                       "name": meta["name"]}}})

    def release_address(self, svc: dict):
        c = self.c
        meta = svc["metadata"]
        for address in c.list(c.types[IP_ADDRESSES], None):
            ref = (address.get("spec") or {}).get("parentRef") or {}
            if (ref.get("resource"), ref.get("namespace"), ref.get("name")) == \
                    ("services", meta.get("namespace", ""), meta["name"]):
                c.remove(c.types[IP_ADDRESSES], address)

    def service_cidr_changed(self, cidr: dict):
        if SERVICE_CIDR_FINALIZER not in cidr["metadata"].get("finalizers", []) and \
                not cidr["metadata"].get("deletionTimestamp"):
            def protect(o):
                o["metadata"].setdefault("finalizers", []).append(SERVICE_CIDR_FINALIZER)
            cidr = self._update(SERVICE_CIDRS, cidr, protect)
            self._update(SERVICE_CIDRS, cidr, lambda o: o.setdefault("status", {}).update(conditions=[{
                "type": "Ready", "status": "True", "reason": "", "message": "Kubernetes Service CIDR is ready",
                "lastTransitionTime": self.c.now()}]), subresource="status")
        self.check_service_cidrs()

    def check_service_cidrs(self):
        c = self.c
        live = [n for _, nets in self._cidrs() for n in nets]
        for cidr, nets in self._cidrs(live_only=False):
            if not cidr["metadata"].get("deletionTimestamp"):
                continue
            held = []
            for address in c.list(c.types[IP_ADDRESSES], None):
                try:
                    ip = ipaddress.ip_address(address["metadata"]["name"])
                except ValueError:
                    continue
                mine = any(ip in n for n in nets if n.version == ip.version)
                if mine and not any(ip in n for n in live if n.version == ip.version):
                    held.append(address)
            if not held:
                self._remove_finalizer(SERVICE_CIDRS, cidr, SERVICE_CIDR_FINALIZER)
                continue
            condition = {"type": "Ready", "status": "False", "reason": "OrphanIPAddress",
                         "message": "There are still IPAddresses referencing the ServiceCIDR, please remove them or "
                                    "create a new ServiceCIDR", "lastTransitionTime": c.now()}
            if ((cidr.get("status") or {}).get("conditions") or [{}])[0].get("reason") != "OrphanIPAddress":
                self._update(SERVICE_CIDRS, cidr, lambda o: o.setdefault("status", {}).update(conditions=[condition]),
                             subresource="status")

    # ----- volume attributes classes and resource claims ------------------------------------------
    def check_vac_protection(self):
        """The vac-protection controller: a deleted VolumeAttributesClass loses its finalizer once no claim
        (spec, status current or target class) and no volume (spec) names it."""
        c = self.c
        if VACS not in c.types:
            return
        named = set()
        for claim in c.list(c.types[PVCS], None):
            status = claim.get("status") or {}
            named |= {(claim.get("spec") or {}).get("volumeAttributesClassName"),
                      status.get("currentVolumeAttributesClassName"),
                      (status.get("modifyVolumeStatus") or {}).get("targetVolumeAttributesClassName")}
        for volume in c.list(c.types[PVS], None):
            named.add((volume.get("spec") or {}).get("volumeAttributesClassName"))
        for vac in c.list(c.types[VACS], None):
            if vac["metadata"].get("deletionTimestamp") and vac["metadata"]["name"] not in named:
                self._remove_finalizer(VACS, vac, admission.VAC_PROTECTION)

    def _claims_reserved_for(self, pod: dict) -> list[dict]:
        c = self.c
        if RESOURCE_CLAIMS not in c.types:
            return []
        uid = pod["metadata"]["uid"]
        return [claim for claim in c.list(c.types[RESOURCE_CLAIMS], pod["metadata"].get("namespace", ""))
                if any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or [])]

    def check_resource_claim(self, claim: dict):
        """The resourceclaim controller: reservations for Pods that are gone are dropped; a deleted claim that
        no Pod reserves is deallocated and loses its finalizer (pkg/controller/resourceclaim)."""
        c = self.c
        claim = c.find(c.types[RESOURCE_CLAIMS], claim["metadata"].get("namespace", ""), claim["metadata"]["name"])
        if claim is None:
            return
        ns = claim["metadata"].get("namespace", "")
        reserved = (claim.get("status") or {}).get("reservedFor") or []
        alive = [r for r in reserved if r.get("resource") == "pods" and any(
            p["metadata"]["uid"] == r.get("uid") and p["metadata"]["name"] == r.get("name")
            for p in c.list(c.types[PODS], ns))]
        if alive != reserved:
            claim = self._update(RESOURCE_CLAIMS, claim,
                                 lambda o: o["status"].update(reservedFor=alive or None), subresource="status")
        if claim["metadata"].get("deletionTimestamp") and not alive:
            if (claim.get("status") or {}).get("allocation"):
                claim = self._update(RESOURCE_CLAIMS, claim, lambda o: o["status"].pop("allocation", None),
                                     subresource="status")
            self._remove_finalizer(RESOURCE_CLAIMS, claim, CLAIM_FINALIZER)

    def check_podgroup(self, podgroup: dict):
        """The podgroup-protection controller: a deleted PodGroup loses its finalizer once no Pod of its namespace
        that has not finished (phase other than Succeeded or Failed: Terminating Pods count) names it in
        spec.schedulingGroup.podGroupName (pkg/controller/scheduling/podgroupprotection)."""
        c = self.c
        ns, name = podgroup["metadata"].get("namespace", ""), podgroup["metadata"]["name"]
        current = c.find(c.types[PODGROUPS], ns, name)
        if current is None or not current["metadata"].get("deletionTimestamp"):
            return
        for pod in c.list(c.types[PODS], ns):
            if ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") == name and \
                    (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                return
        self._remove_finalizer(PODGROUPS, current, admission.PODGROUP_PROTECTION)

    # ----- storage ---------------------------------------------------------------------------------
    def update_unused_conditions(self, namespace: str):
        """The pvc-protection controller's Unused condition (PersistentVolumeClaimUnusedSinceTime, alpha in 1.36):
        False (PodUsingPVC) while a Pod that has not terminated names the claim, scheduled or not; True
        (NoPodsUsingPVC) otherwise. A Pod counts as terminated when it finished, or when it is being deleted and
        none of its containers runs (volumeutil.IsPodTerminated). Never updated on a claim being deleted (seen on
        the real tier: the condition stays as it was when the deletion began)."""
        c = self.c
        if "PersistentVolumeClaimUnusedSinceTime" not in c.feature_gates or not namespace:
            return
        used = set()
        for pod in c.list(c.types[PODS], namespace):
            status = pod.get("status") or {}
            running = any("running" in (s.get("state") or {}) for s in status.get("containerStatuses") or [])
            finished = status.get("phase") in ("Succeeded", "Failed") or (
                pod["metadata"].get("deletionTimestamp") and not running)
            if not finished:
                used |= pod_claims(pod)
        for pvc in c.list(c.types[PVCS], namespace):
            if pvc["metadata"].get("deletionTimestamp"):
                continue
            status = "False" if pvc["metadata"]["name"] in used else "True"
            conditions = (pvc.get("status") or {}).get("conditions") or []
            if any(k.get("type") == "Unused" and k.get("status") == status for k in conditions):
                continue
            wanted = {"type": "Unused", "status": status, "lastProbeTime": None, "lastTransitionTime": c.now(),
                      "reason": "PodUsingPVC" if status == "False" else "NoPodsUsingPVC",
                      "message": "A pod is currently referencing this PVC" if status == "False"
                      else "No pods are currently referencing this PVC"}

            def mark(o, wanted=wanted):
                kept = [k for k in (o.setdefault("status", {}).get("conditions") or []) if k.get("type") != "Unused"]
                o["status"]["conditions"] = [*kept, wanted]
            self._update(PVCS, pvc, mark, subresource="status")

    def volume_gone(self, pv: dict):
        """A bound volume that went away (forced): its claim is Lost (capture 27)."""
        c = self.c
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        pvc = c.find(c.types[PVCS], ref.get("namespace", ""), ref.get("name", ""))
        if pvc is not None and (pvc.get("spec") or {}).get("volumeName") == pv["metadata"]["name"]:
            self._update(PVCS, pvc, lambda o: o.setdefault("status", {}).update(phase="Lost"), subresource="status")

    def pvc_changed(self, what, pvc):
        c = self.c
        ns = pvc["metadata"].get("namespace", "")
        if what == "removed":
            self.release_volume(pvc)
            return
        self.bind(pvc)
        current = c.find(c.types[PVCS], ns, pvc["metadata"]["name"])
        if current is not None and current["metadata"].get("deletionTimestamp"):
            self.check_pvc_protection(current)

    def pod_changed(self, pod, gone: bool = False):
        c = self.c
        ns = pod["metadata"].get("namespace", "")
        node = (pod.get("spec") or {}).get("nodeName")
        if node and not gone and c.find(c.types[NODES], "", node) is None:  # the pod GC starts its quarantine
            self._orphaned_since.setdefault(pod["metadata"]["uid"], time.time() + c.clock_offset)
        for claim in pod_claims(pod):
            pvc = c.find(c.types[PVCS], ns, claim)
            if pvc is not None and pvc["metadata"].get("deletionTimestamp"):
                self.check_pvc_protection(pvc)

    def check_pvc_protection(self, pvc):
        c = self.c
        ns, name = pvc["metadata"].get("namespace", ""), pvc["metadata"]["name"]
        for pod in c.list(c.types[PODS], ns):
            if (pod.get("spec") or {}).get("nodeName") and name in pod_claims(pod):
                return  # a scheduled Pod uses it, whatever its phase
        self._remove_finalizer(PVCS, pvc, admission.PVC_PROTECTION)

    def pv_changed(self, pv):
        c = self.c
        claim_ref = (pv.get("spec") or {}).get("claimRef")
        if claim_ref and not pv["metadata"].get("deletionTimestamp"):
            pvc = c.find(c.types[PVCS], claim_ref.get("namespace", ""), claim_ref.get("name", ""))
            if pvc is not None:
                self.bind(pvc)
        current = c.find(c.types[PVS], "", pv["metadata"]["name"])
        if current is not None and current["metadata"].get("deletionTimestamp") and \
                (current.get("status") or {}).get("phase") != "Bound":
            self._remove_finalizer(PVS, current, admission.PV_PROTECTION)

    def bind(self, pvc):
        """Bind a claim and the volume that names each other (or the one that claims it)."""
        c = self.c
        meta = pvc["metadata"]
        if (pvc.get("status") or {}).get("phase") == "Bound" or meta.get("deletionTimestamp"):
            return
        ns, name = meta.get("namespace", ""), meta["name"]
        volume_name = (pvc.get("spec") or {}).get("volumeName")
        candidates = [c.find(c.types[PVS], "", volume_name)] if volume_name else c.list(c.types[PVS], None)
        for pv in candidates:
            if pv is None or pv["metadata"].get("deletionTimestamp"):
                continue
            ref = (pv.get("spec") or {}).get("claimRef")
            if ref and (ref.get("namespace"), ref.get("name")) != (ns, name):
                continue
            if not ref and not volume_name:
                continue
            def bind_pv(o, pvc=pvc):
                o["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": ns, "name": name,
                                         "uid": pvc["metadata"]["uid"], "apiVersion": "v1",
                                         "resourceVersion": pvc["metadata"]["resourceVersion"]}
            self._update(PVS, pv, bind_pv)
            pv = c.find(c.types[PVS], "", pv["metadata"]["name"])
            self._update(PVS, pv, lambda o: o["status"].update(phase="Bound", lastPhaseTransitionTime=c.now()),
                         subresource="status")
            pvc = c.find(c.types[PVCS], ns, name)
            pv_name = pv["metadata"]["name"]
            def bind_pvc(o):
                o["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
                o["spec"]["volumeName"] = pv_name
            self._update(PVCS, pvc, bind_pvc)
            pvc = c.find(c.types[PVCS], ns, name)
            spec = pv.get("spec") or {}
            self._update(PVCS, pvc, lambda o: o.__setitem__("status", {
                "phase": "Bound", "accessModes": spec.get("accessModes", []),
                "capacity": spec.get("capacity", {})}), subresource="status")
            return

    def release_volume(self, pvc):
        c = self.c
        for pv in c.list(c.types[PVS], None):
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            if ref.get("uid") != pvc["metadata"]["uid"]:
                continue
            if pv["spec"].get("persistentVolumeReclaimPolicy") == "Delete":
                self._update(PVS, pv, lambda o: o["status"].update(phase="Released"), subresource="status")
                current = c.find(c.types[PVS], "", pv["metadata"]["name"])
                if not current["metadata"].get("deletionTimestamp"):
                    c.delete(c.types[PVS], current, "Background", None)
                else:
                    self.pv_changed(current)
            else:
                self._update(PVS, pv, lambda o: o["status"].update(phase="Released"), subresource="status")

    # ----- CRDs and APIServices --------------------------------------------------------------------
    def crd_changed(self, crd):
        c = self.c
        spec = crd.get("spec") or {}
        group, names = spec.get("group", ""), spec.get("names") or {}
        served = [v for v in spec.get("versions", []) if v.get("served")]
        if crd["metadata"]["uid"] not in c.by_uid:
            return
        if not crd["metadata"].get("deletionTimestamp"):
            storage = next((v["name"] for v in spec.get("versions", []) if v.get("storage")), served[0]["name"])
            subresources = set()
            for v in served:
                subresources |= set((v.get("subresources") or {}).keys())
            rt = ResourceType(group, storage, names.get("plural", ""), names.get("kind", ""),
                              spec.get("scope") == "Namespaced",
                              ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"],
                              names.get("shortNames", []), names.get("singular", ""),
                              names.get("categories", []), subresources, origin="crd")
            if c.types.get(rt.key) is None or c.types[rt.key].origin == "crd":
                c.register(rt)
                # served versions in kube-aware priority (v1 before v1beta1 before v1alpha1), as discovery lists
                # them: the first is the preferred version, which need not be the storage version
                for v in sorted(served, key=lambda v: _version_priority(v["name"])):
                    entries = [e for gv, es in c.discovery.items() if gv == f"{group}/{v['name']}"
                               for e in es if e["name"].split("/")[0] != rt.name]
                    entries.append(rt.discovery_entry())
                    entries += [{"name": f"{rt.name}/{s}", "singularName": "", "namespaced": rt.namespaced,
                                 "kind": rt.kind, "verbs": ["get", "patch", "update"]} for s in sorted(subresources)]
                    c.add_group_version(group, v["name"], entries)
            if not (crd.get("status") or {}).get("conditions"):
                def establish(o):
                    o["status"]["acceptedNames"] = {k: v for k, v in names.items()}
                    o["status"]["conditions"] = [
                        {"type": "NamesAccepted", "status": "True", "lastTransitionTime": c.now(),
                         "reason": "NoConflicts", "message": "no conflicts found"},
                        {"type": "Established", "status": "True", "lastTransitionTime": c.now(),
                         "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}]
                self._update(CRDS, crd, establish, subresource="status")
            return
        rt = c.types.get((group, names.get("plural", "")))
        instances = c.list(rt, None) if rt is not None else []
        for obj in instances:
            if not obj["metadata"].get("deletionTimestamp"):
                c.delete(rt, obj, "Background", None)
        if rt is not None and c.list(rt, None):
            return  # instances with finalizers keep the CRD (customresourcecleanup) until they go
        current = c.find(c.types[CRDS], "", crd["metadata"]["name"])
        if current is None:
            return
        self.unregister_crd(current)
        self._remove_finalizer(CRDS, current, CRD_CLEANUP)

    def unregister_crd(self, crd):
        c = self.c
        spec = crd.get("spec") or {}
        group, plural = spec.get("group", ""), (spec.get("names") or {}).get("plural", "")
        rt = c.types.get((group, plural))
        if rt is None or rt.origin != "crd":
            return
        del c.types[rt.key]
        c.objects.pop(rt.key, None)
        for v in spec.get("versions", []):
            entries = [e for e in c.discovery.get(f"{group}/{v['name']}", []) if e["name"].split("/")[0] != plural]
            if entries:
                c.discovery[f"{group}/{v['name']}"] = entries
            else:
                c.remove_group_version(group, v["name"])

    def apiservice_changed(self, what, svc):
        c = self.c
        spec = svc.get("spec") or {}
        gv = f"{spec.get('group')}/{spec.get('version')}"
        if not spec.get("service"):
            return  # local APIServices are served by kube-apiserver itself
        if what == "removed":
            c.aggregated.pop(gv, None)
            c.remove_group_version(spec.get("group"), spec.get("version"))
            for key in [k for k, rt in c.types.items() if rt.origin == "aggregated" and rt.group == spec.get("group")]:
                del c.types[key]
        else:
            backend = c.aggregated_backends.get(gv)
            c.aggregated[gv] = backend or AggregatedAPI(spec.get("group"), spec.get("version"), [])
            entries = [rt.discovery_entry() for rt in backend.resources] if backend else []
            c.add_group_version(spec.get("group"), spec.get("version"), entries)
            for rt in backend.resources if backend else []:
                c.register(rt)
            service = spec["service"]
            if backend:
                condition = {"type": "Available", "status": "True", "reason": "Passed", "message": "all checks passed"}
            else:
                condition = {"type": "Available", "status": "False", "reason": "ServiceNotFound",
                             "message": f'service/{service.get("name")} in "{service.get("namespace")}" is not present'}
            current = (svc.get("status") or {}).get("conditions") or [{}]
            if {k: current[0].get(k) for k in condition} != condition:
                condition = {"type": "Available", "status": condition["status"], "lastTransitionTime": c.now(),
                             "reason": condition["reason"], "message": condition["message"]}
                self._update(APISERVICES, svc, lambda o: o.__setitem__("status", {"conditions": [condition]}),
                             subresource="status")
        self.retry_namespaces()

    def retry_namespaces(self):
        """The namespace controller retries every namespace being deleted (the real one, with its backoff): what
        stopped it may be fixed (an APIService, a CRD's conversion)."""
        c = self.c
        for ns in c.list(c.types[NAMESPACES], None):
            if ns["metadata"].get("deletionTimestamp"):
                self.finalize_namespace(ns, delete_content=True)


def _rejected_delete(c, rt, namespace: str) -> str | None:
    """What admission answers the namespace controller's deletecollection of `rt` in `namespace`: webhooks and
    ValidatingAdmissionPolicies are called for each object, and the first rejection fails the type (seen on the
    real tier: "Internal error occurred: failed calling webhook ..."), as the controller's own ServiceAccount. RBAC
    first: the controller asks deletecollection of every type, empty or not, and a 403 fails the type
    (namespaced_resources_deleter.go deleteCollection; its right comes from the bootstrap ClusterRole
    system:controller:namespace-controller, which the server seeds)."""
    account = rbac.service_account_user("kube-system", "namespace-controller")
    if not rbac.allowed(c, account, "deletecollection", rt.group, rt.name, "", namespace, None):
        return st.forbidden(account.name, "deletecollection", rt.group, rt.name, "", namespace, None).body["message"]
    for obj in c.list(rt, namespace):
        try:
            webhooks.admit(c, "DELETE", rt, namespace, "", obj["metadata"].get("labels") or {},
                           name=obj["metadata"].get("name", ""), old=obj, user=account)
            policies.admit(c, rt, "DELETE", obj, None, "", NAMESPACE_CONTROLLER)
        except st.APIError as error:
            return error.body["message"]
    return None


def _ok_conditions() -> dict:
    conditions = {
        "NamespaceDeletionDiscoveryFailure": ("False", "ResourcesDiscovered", "All resources successfully discovered")}
    conditions.update({
        "NamespaceDeletionGroupVersionParsingFailure": ("False", "ParsedGroupVersions",
                                                        "All legacy kube types successfully parsed"),
        "NamespaceDeletionContentFailure": ("False", "ContentDeleted",
                                            "All content successfully deleted, may be waiting on finalization"),
        "NamespaceContentRemaining": ("False", "ContentRemoved", "All content successfully removed"),
        "NamespaceFinalizersRemaining": ("False", "ContentHasNoFinalizers",
                                         "All content-preserving finalizers finished"),
    })
    return conditions


def _version_priority(version: str) -> tuple:
    """apimachinery's CompareKubeAwareVersionStrings as a sort key: GA, then beta, then alpha, higher first;
    names of another form last, alphabetically."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (3, 0, 0, version)
    major, stage, minor = int(match.group(1)), match.group(2), int(match.group(3) or 0)
    return ({None: 0, "beta": 1, "alpha": 2}[stage], -major, -minor, version)


def pod_claims(pod) -> set:
    """Claims a Pod uses: direct persistentVolumeClaim volumes and generic ephemeral volumes."""
    claims = set()
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if volume.get("persistentVolumeClaim"):
            claims.add(volume["persistentVolumeClaim"].get("claimName"))
        elif volume.get("ephemeral"):
            claims.add(f"{pod['metadata']['name']}-{volume.get('name')}")
    return claims
