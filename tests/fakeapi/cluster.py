"""The state of the fake cluster: resource types, stored objects, and the API server's write rules.

Everything here follows kube-apiserver as captured in shared/k8s-reference: resourceVersion bumps on
every write, a stale resourceVersion is a 409, no finalizer may be added to an object being deleted,
an object with finalizers is kept (deletionTimestamp set) until the last one is removed, and
propagationPolicy Foreground/Orphan adds the `foregroundDeletion`/`orphan` finalizer.
Controllers (controllers.py) react to the events this module queues.
"""

import bisect
import collections
import copy
import json
import random
import re
import string
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import status as st
from .admission import EVENT_ALWAYS

CATALOG = json.loads(Path(__file__).with_name("builtin_resources.json").read_text())

# Types whose main endpoint ignores status (it has a /status subresource) and their status on create.
STATUS_ON_CREATE = {
    ("", "pods"): {"phase": "Pending", "qosClass": "BestEffort"},
    ("", "persistentvolumeclaims"): {"phase": "Pending"},
    ("", "persistentvolumes"): {"phase": "Pending"},
    ("", "namespaces"): {"phase": "Active"},
}
METADATA_ORDER = ["name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                  "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
                  "ownerReferences", "finalizers", "managedFields"]
GRACEFUL_DEFAULT_SECONDS = 30
CRD_CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
# One storage, two APIs: kube-apiserver serves events.k8s.io/v1 Events from core v1's storage
# (pkg/registry/events/rest/storage_events.go builds pkg/registry/core/event/storage): one object, one uid and
# resourceVersion under both, each in its API's shape (captures 25-26 of causes).
EVENTS, EVENTS_V1 = ("", "events"), ("events.k8s.io", "events")
# (core v1 field, events.k8s.io/v1 field)
EVENT_FIELDS = (("involvedObject", "regarding"), ("message", "note"), ("source", "deprecatedSource"),
                ("firstTimestamp", "deprecatedFirstTimestamp"), ("lastTimestamp", "deprecatedLastTimestamp"),
                ("count", "deprecatedCount"), ("reportingComponent", "reportingController"),
                ("reportingInstance", "reportingInstance"), ("eventTime", "eventTime"), ("reason", "reason"),
                ("type", "type"), ("action", "action"), ("related", "related"), ("series", "series"))
DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
STANDARD_FINALIZERS = {"kubernetes", "orphan", "foregroundDeletion"}
OWNER_REFERENCE_ORDER = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")  # Go's field order


@dataclass
class ResourceType:
    group: str
    version: str  # the version the fake stores and prefers
    name: str
    kind: str
    namespaced: bool
    verbs: list
    short_names: list = field(default_factory=list)
    singular: str = ""
    categories: list = field(default_factory=list)
    subresources: set = field(default_factory=set)
    origin: str = "builtin"  # builtin | crd | aggregated
    has_generation: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple:
        return (self.group, self.name)

    def discovery_entry(self) -> dict:
        entry = {"name": self.name, "singularName": self.singular, "namespaced": self.namespaced,
                 "kind": self.kind, "verbs": self.verbs}
        if self.short_names:
            entry["shortNames"] = self.short_names
        if self.categories:
            entry["categories"] = self.categories
        return entry


@dataclass
class AggregatedAPI:
    """An API group served through an APIService (as metrics.k8s.io is)."""
    group: str
    version: str
    resources: list
    supports_metadata: bool = True  # some aggregated servers cannot answer PartialObjectMetadata
    supports_protobuf: bool = True  # nor protobuf (then JSON, the next type kfin accepts)


def now_rfc3339(offset: float = 0.0) -> str:
    return datetime.fromtimestamp(time.time() + offset, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def ordered_metadata(meta: dict) -> dict:
    ordered = {k: meta[k] for k in METADATA_ORDER if k in meta}
    ordered.update({k: v for k, v in meta.items() if k not in ordered})
    return ordered


def storage_key(namespace: str, name: str) -> str:
    """Where etcd keeps an object, below its resource's prefix: lists come in this key's order."""
    return f"/{namespace}/{name}" if namespace else f"/{name}"


def _first(entry):
    return entry[0]


def go_string_slice(values) -> str:
    """Go's %#v of a []string, as the finalizer validation message prints it."""
    return "[]string{" + ", ".join(json.dumps(v) for v in values) + "}"


class Cluster:
    def __init__(self):
        self.warnings: list[str] = []  # Warning headers for the answer to the request being served
        self.lock = threading.RLock()
        # What watches replay: (resourceVersion, ADDED|MODIFIED|DELETED, type key, object), like etcd's
        # window of revisions; older revisions are compacted away (a watch from before answers 410).
        self.history: collections.deque = collections.deque(maxlen=20_000)
        self.changed = threading.Condition(self.lock)
        self.stopped = False  # the server stopped: its watches end
        self.compacted_rv = 0
        self.clock_offset = 0.0  # seconds added to "now" (tests age objects with it)
        self._rv = 200
        self.types: dict[tuple, ResourceType] = {}
        self.objects: dict[tuple, dict] = {}  # (group, resource) -> {(namespace, name): obj}
        self._order: dict[tuple, list] = {}  # (group, resource) -> sorted [(storage key, (namespace, name))]
        self.by_uid: dict[str, tuple] = {}  # uid -> (group, resource, namespace, name)
        self.dependents: dict[str, set] = {}  # owner uid -> uids of objects whose ownerReferences name it
        self.events: list[tuple] = []  # queued for the controllers
        self.group_order: list[str] = [g["name"] for g in CATALOG["groups"]]
        self.group_versions: dict[str, list[str]] = {
            g["name"]: [v["version"] for v in g["versions"]] for g in CATALOG["groups"]}
        self.discovery: dict[str, list] = {"v1": CATALOG["core"], **CATALOG["groupVersions"]}
        self.aggregated: dict[str, AggregatedAPI] = {}
        self.aggregated_backends: dict[str, AggregatedAPI] = {}  # group/version -> a running backend
        self.feature_gates: frozenset[str] = frozenset()
        self._register_builtins()

    # ----- resource types -------------------------------------------------------------------------
    def _register_builtins(self):
        for gv, entries in [("v1", CATALOG["core"])] + [
                (f"{g['name']}/{g['preferredVersion']['version']}", CATALOG["groupVersions"][g["preferredVersion"]["groupVersion"]])
                for g in CATALOG["groups"]]:
            group, _, version = gv.rpartition("/")
            for e in entries:
                if "/" in e["name"]:
                    self.types[(group, e["name"].split("/")[0])].subresources.add(e["name"].split("/")[1])
                    continue
                self.register(ResourceType(group, version, e["name"], e["kind"], e["namespaced"], e["verbs"],
                                           e.get("shortNames", []), e.get("singularName", ""),
                                           e.get("categories", []),
                                           has_generation=group in ("apps", "batch", "apiextensions.k8s.io",
                                                                   "admissionregistration.k8s.io")
                                           or e["name"] == "pods"))

    def enable(self, gates) -> None:
        """Alpha feature gates, as kube-apiserver's --feature-gates (and --runtime-config for their APIs)."""
        self.feature_gates = frozenset(gates)
        if "GenericWorkload" in self.feature_gates:  # discovery of scheduling.k8s.io/v1alpha2 on v1.36.2
            verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
            podgroups = ResourceType("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup", True, verbs,
                                     singular="podgroup", subresources={"status"})
            workloads = ResourceType("scheduling.k8s.io", "v1alpha2", "workloads", "Workload", True, verbs,
                                     singular="workload")
            for rt in (podgroups, workloads):
                self.register(rt)
            self.add_group_version("scheduling.k8s.io", "v1alpha2", [
                podgroups.discovery_entry(),
                {"name": "podgroups/status", "singularName": "", "namespaced": True, "kind": "PodGroup",
                 "verbs": ["get", "patch", "update"]},
                workloads.discovery_entry()])

    def register(self, rt: ResourceType):
        self.types[rt.key] = rt
        self.objects.setdefault(rt.key, {})
        self._order.pop(rt.key, None)

    def resolve(self, group: str, version: str, resource: str) -> ResourceType | None:
        rt = self.types.get((group, resource))
        if rt is None:
            return None
        if group == "":
            return rt if version == "v1" else None
        return rt if version in self.group_versions.get(group, []) else None

    def type_for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group = api_version.rpartition("/")[0]
        for rt in self.types.values():
            if rt.group == group and rt.kind == kind:
                return rt
        return None

    def add_group_version(self, group: str, version: str, entries: list):
        if group not in self.group_versions:
            self.group_order.append(group)
            self.group_versions[group] = []
        if version not in self.group_versions[group]:
            self.group_versions[group].append(version)
        self.discovery[f"{group}/{version}"] = entries

    def remove_group_version(self, group: str, version: str):
        self.discovery.pop(f"{group}/{version}", None)
        versions = self.group_versions.get(group, [])
        if version in versions:
            versions.remove(version)
        if not versions:
            self.group_versions.pop(group, None)
            if group in self.group_order:
                self.group_order.remove(group)

    # ----- time, versions, identities ---------------------------------------------------------------
    def now(self) -> str:
        return now_rfc3339(self.clock_offset)

    def next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    @property
    def current_rv(self) -> str:
        return str(self._rv)

    # ----- reads ------------------------------------------------------------------------------------
    def get(self, rt: ResourceType, namespace: str, name: str) -> dict:
        obj = self.objects[rt.key].get((namespace or "", name))
        if obj is None:
            raise st.not_found(rt.group, rt.name, name)
        return obj

    def find(self, rt: ResourceType, namespace: str, name: str) -> dict | None:
        return self.objects[rt.key].get((namespace or "", name))

    def list(self, rt: ResourceType, namespace: str | None) -> list[dict]:
        return self.page(rt, namespace)[0]

    def page(self, rt: ResourceType, namespace: str | None, after: str = "", limit: int = 0):
        """(objects, their last storage key, how many remain after them), in etcd's order: by storage key,
        starting after the key `after`. Like etcd's range reads, a page costs its size, not the store's."""
        order = self._order.get(rt.key)
        if order is None:
            order = self._order[rt.key] = sorted((storage_key(*k), k) for k in self.objects[rt.key])
        low, high = 0, len(order)
        if namespace is not None and rt.namespaced:
            low = bisect.bisect_left(order, f"/{namespace}/", key=_first)
            high = bisect.bisect_left(order, f"/{namespace}0", key=_first)  # "0" sorts right after "/"
        if after:
            low = max(low, bisect.bisect_right(order, after, key=_first))
        end = min(high, low + limit) if limit else high
        chosen = order[low:end]
        store = self.objects[rt.key]
        return [store[k] for _, k in chosen], (chosen[-1][0] if chosen else ""), max(0, high - end)

    def by_identity(self, uid: str) -> dict | None:
        where = self.by_uid.get(uid)
        if where is None:
            return None
        group, resource, namespace, name = where
        return self.objects[(group, resource)].get((namespace, name))

    # ----- writes -----------------------------------------------------------------------------------
    def create(self, rt: ResourceType, namespace: str | None, body: dict, dry_run: bool = False) -> dict:
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
        name = meta.get("name", "")
        if not name:
            raise st.invalid(rt.kind, "", "metadata.name", "FieldValueRequired",
                             "Required value: name or generateName is required")
        self.validate_name(rt, name)
        if rt.namespaced:
            namespace = namespace or meta.get("namespace")
            ns = self.find(self.types[("", "namespaces")], "", namespace)
            if ns is None:
                raise st.not_found("", "namespaces", namespace)
            if ns["metadata"].get("deletionTimestamp"):
                raise st.namespace_terminating(rt.group, rt.name, name, namespace)
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if (meta.get("namespace", ""), name) in self.objects[rt.key]:
            raise st.already_exists(rt.group, rt.name, name)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        for volatile in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "uid", "selfLink"):
            meta.pop(volatile, None)
        if meta.get("finalizers") == []:
            del meta["finalizers"]
        if meta.get("ownerReferences") == []:
            del meta["ownerReferences"]
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.now()
        if rt.has_generation or rt.origin == "crd":
            meta["generation"] = 1
        if "status" in rt.subresources or rt.key in STATUS_ON_CREATE:
            obj.pop("status", None)
            if rt.key in STATUS_ON_CREATE:
                obj["status"] = copy.deepcopy(STATUS_ON_CREATE[rt.key])
            elif rt.origin == "builtin":
                obj["status"] = {}
        self.validate_metadata(rt, meta, name)
        from .admission import admit_create
        admit_create(self, rt, obj)
        meta["resourceVersion"] = self.current_rv if dry_run else self.next_rv()
        obj["metadata"] = ordered_metadata(meta)
        if not dry_run:
            self._store(rt, obj)
            self.events.append(("created", rt.key, obj["metadata"].get("namespace", ""), name))
        return obj

    def validate_name(self, rt: ResourceType, name: str):
        """Names as the real server validates them on create (capture 34 of causes): a DNS subdomain for most
        kinds, a DNS label for namespaces, a path segment for RBAC objects."""
        if rt.group == "rbac.authorization.k8s.io":
            if name in (".", "..") or "/" in name or "%" in name:
                raise st.invalid(rt.kind, name, "metadata.name", "FieldValueInvalid",
                                 f'Invalid value: "{name}": may not contain \'/\' or \'%\'')
            return
        label = rt.key == ("", "namespaces")
        pattern = DNS_LABEL if label else DNS_SUBDOMAIN
        if len(name) <= (63 if label else 253) and re.fullmatch(pattern, name):
            return
        if label:
            detail = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                      "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                      f"validation is '{DNS_LABEL}')")
        else:
            detail = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                      "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                      f"validation is '{DNS_SUBDOMAIN}')")
        raise st.invalid(rt.kind, name, "metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {detail}')

    def validate_metadata(self, rt: ResourceType, meta: dict, name: str, had: tuple = ()):
        """What kube-apiserver checks of every object's finalizers and owner references (captures 01-04 of
        causes): a built-in object's finalizer must be standard or domain-qualified (422); a custom
        resource's may be unqualified, with a Warning when it is added (`had`: the finalizers before an update;
        v1.36.2 on the real tier warns of no finalizer the object already had); at most one owner reference is
        the controller."""
        for index, finalizer in enumerate(meta.get("finalizers") or []):
            if "/" in finalizer or finalizer in STANDARD_FINALIZERS:
                continue
            if rt.origin == "builtin":
                raise st.invalid(rt.kind, name, f"metadata.finalizers[{index}]", "FieldValueInvalid",
                                 f'Invalid value: "{finalizer}": name is neither a standard finalizer name nor is '
                                 "it fully qualified")
            if finalizer in had:
                continue
            self.warnings.append(f'299 - "metadata.finalizers: \\"{finalizer}\\": prefer a domain-qualified '
                                 'finalizer name to avoid accidental conflicts with other finalizer writers"')
        refs = meta.get("ownerReferences") or []
        controllers = [r for r in refs if r.get("controller")]
        if len(controllers) > 1:
            shown = json.dumps([{k: r[k] for k in OWNER_REFERENCE_ORDER if k in r} for r in refs],
                               separators=(",", ":"))
            found = " and ".join(f"{r.get('kind')}/{r.get('name')}" for r in controllers)
            raise st.invalid(rt.kind, name, "metadata.ownerReferences", "FieldValueInvalid",
                             f"Invalid value: {shown}: Only one reference can have Controller set to true. "
                             f'Found "true" in references for {found}')

    def _store(self, rt: ResourceType, obj: dict):
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        previous = self.objects[rt.key].get(key)
        if previous is not None:
            self._unindex_owners(previous)
        if previous is None:
            self._order.pop(rt.key, None)
        self.objects[rt.key][key] = obj
        self._record("ADDED" if previous is None else "MODIFIED", rt, obj)
        self.by_uid[meta["uid"]] = (rt.group, rt.name) + key
        for ref in meta.get("ownerReferences", []):
            self.dependents.setdefault(ref.get("uid", ""), set()).add(meta["uid"])
        twin = self._event_twin(rt, obj)
        if twin is not None:
            other, shown = twin
            if key not in self.objects[other.key]:
                self._order.pop(other.key, None)
            self.objects[other.key][key] = shown
            self._record("ADDED" if previous is None else "MODIFIED", other, shown)

    def _event_twin(self, rt: ResourceType, obj: dict) -> tuple[ResourceType, dict] | None:
        """An Event as the other events API shows it (the same stored object), or None for other kinds."""
        core = rt.key == EVENTS
        other = self.types.get(EVENTS_V1 if core else EVENTS) if rt.key in (EVENTS, EVENTS_V1) else None
        if other is None:
            return None
        shown = {"kind": other.kind, "apiVersion": other.api_version, "metadata": copy.deepcopy(obj["metadata"])}
        for old, new in EVENT_FIELDS:
            source, target = (old, new) if core else (new, old)
            if obj.get(source) not in (None, ""):
                shown[target] = copy.deepcopy(obj[source])
        if core and "reportingController" not in shown and (obj.get("source") or {}).get("component"):
            shown["reportingController"] = obj["source"]["component"]
        for field, value in EVENT_ALWAYS[other.key].items():
            shown.setdefault(field, value)
        return other, shown

    def _record(self, kind: str, rt: ResourceType, obj: dict):
        if len(self.history) == self.history.maxlen:
            self.compacted_rv = max(self.compacted_rv, self.history[0][0])
        self.history.append((int(obj["metadata"]["resourceVersion"]), kind, rt.key, obj))
        with self.changed:  # the lock is re-entrant: writers already hold it
            self.changed.notify_all()

    def _unindex_owners(self, obj: dict):
        uid = obj["metadata"]["uid"]
        for ref in obj["metadata"].get("ownerReferences", []):
            self.dependents.get(ref.get("uid", ""), set()).discard(uid)

    def update(self, rt: ResourceType, old: dict, new: dict, subresource: str = "", dry_run: bool = False) -> dict:
        """Persist `new` in place of `old`, applying the rules every update path shares."""
        old_meta = old["metadata"]
        name = old_meta["name"]
        new = copy.deepcopy(new)
        meta = new.setdefault("metadata", {})
        if meta.get("resourceVersion") and meta["resourceVersion"] != old_meta["resourceVersion"]:
            raise st.conflict(rt.group, rt.name, name)
        if subresource == "status":
            merged = copy.deepcopy(old)
            if "status" in new:
                merged["status"] = new["status"]
            new, meta = merged, merged["metadata"]
        elif subresource == "finalize":
            merged = copy.deepcopy(old)
            merged.setdefault("spec", {})["finalizers"] = (new.get("spec") or {}).get("finalizers") or []
            if not merged["spec"]["finalizers"]:
                del merged["spec"]["finalizers"]
            new, meta = merged, merged["metadata"]
        else:
            if "status" in rt.subresources or rt.key in STATUS_ON_CREATE:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            if rt.key == ("", "namespaces"):  # only /finalize changes a namespace's spec.finalizers
                new.setdefault("spec", {})
                if "finalizers" in (old.get("spec") or {}):
                    new["spec"]["finalizers"] = list(old["spec"]["finalizers"])
                else:
                    new["spec"].pop("finalizers", None)
        # Fields the server owns.
        for owned in ("uid", "name", "namespace", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation", "selfLink"):
            if owned in old_meta:
                meta[owned] = old_meta[owned]
            else:
                meta.pop(owned, None)
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        self.validate_metadata(rt, meta, name, tuple(old_meta.get("finalizers") or ()))
        if meta.get("finalizers") == []:
            del meta["finalizers"]
        if meta.get("ownerReferences") == []:
            del meta["ownerReferences"]
        if old_meta.get("deletionTimestamp"):
            added = [f for f in meta.get("finalizers", []) if f not in old_meta.get("finalizers", [])]
            if added:
                raise st.invalid(rt.kind, name, "metadata.finalizers", "FieldValueForbidden",
                                 "Forbidden: no new finalizers can be added if the object is being deleted, "
                                 f"found new finalizers {go_string_slice(added)}", repeat=2)
        if "generation" in old_meta and subresource == "" and new.get("spec") != old.get("spec"):
            meta["generation"] = old_meta["generation"] + 1
        unchanged = {k: v for k, v in new.items() if k != "metadata"} == {
            k: v for k, v in old.items() if k != "metadata"} and {
            k: v for k, v in meta.items() if k != "resourceVersion"} == {
            k: v for k, v in old_meta.items() if k != "resourceVersion"}
        new["metadata"] = meta = ordered_metadata(meta)
        if unchanged or dry_run:
            meta["resourceVersion"] = old_meta["resourceVersion"]
            return new
        if self._finished(rt, new):
            # The last finalizer went away from an object being deleted: it is removed, and the
            # answer is the object as it was last written (the captured server keeps its resourceVersion).
            meta["resourceVersion"] = old_meta["resourceVersion"]
            self.remove(rt, old)
            return new
        meta["resourceVersion"] = self.next_rv()
        self._store(rt, new)
        self.events.append(("updated", rt.key, meta.get("namespace", ""), name))
        return new

    def _finished(self, rt: ResourceType, obj: dict) -> bool:
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return False
        if rt.key == ("", "namespaces") and (obj.get("spec") or {}).get("finalizers"):
            return False
        if rt.key == ("", "pods") and meta.get("deletionGracePeriodSeconds"):
            return False  # waits for a kubelet to confirm the graceful deletion
        return True

    def delete(self, rt: ResourceType, obj: dict, propagation: str | None, grace: int | None,
               dry_run: bool = False) -> tuple[dict, bool]:
        """Returns (object as answered, gone now)."""
        obj = copy.deepcopy(obj)
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            if grace == 0 and rt.key == ("", "pods") and not meta.get("finalizers"):
                if not dry_run:
                    self.remove(rt, obj)
                meta["deletionTimestamp"], meta["deletionGracePeriodSeconds"] = self.now(), 0  # as answered (causes 21)
                return obj, True
            if rt.key == ("", "namespaces") and not meta.get("finalizers") and \
                    not (obj.get("spec") or {}).get("finalizers"):
                # kube-apiserver's namespace storage purges a Terminating namespace at a DELETE once its
                # finalizers are all gone (pkg/registry/core/namespace/storage: the first DELETE only marks it;
                # seen on the real tier with spec.finalizers emptied through /finalize before the DELETE)
                if not dry_run:
                    self.remove(rt, obj)
                return obj, True
            return obj, False  # deleting again changes nothing (capture 16)
        finalizers = list(meta.get("finalizers", []))
        if rt.key == ("apiextensions.k8s.io", "customresourcedefinitions") and CRD_CLEANUP not in finalizers:
            finalizers.append(CRD_CLEANUP)  # the CRD's own delete adds it: its instances go first
        if propagation == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers = [f for f in finalizers if f != "orphan"] + ["foregroundDeletion"]
        elif propagation == "Orphan" and "orphan" not in finalizers:
            finalizers = [f for f in finalizers if f != "foregroundDeletion"] + ["orphan"]
        grace_seconds = 0
        if rt.key == ("", "pods") and (obj.get("spec") or {}).get("nodeName") and \
                obj.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            default = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", GRACEFUL_DEFAULT_SECONDS)
            grace_seconds = default if grace is None else grace
        is_namespace = rt.key == ("", "namespaces")
        if not finalizers and not grace_seconds and not is_namespace:
            if not dry_run:
                self.remove(rt, obj)
            return obj, True
        if finalizers:
            meta["finalizers"] = finalizers
        meta["deletionTimestamp"] = now_rfc3339(self.clock_offset + grace_seconds)
        if not is_namespace:
            meta["deletionGracePeriodSeconds"] = grace_seconds
        else:
            obj.setdefault("status", {})["phase"] = "Terminating"
        obj["metadata"] = ordered_metadata(meta)
        if dry_run:
            return obj, False
        obj["metadata"]["resourceVersion"] = self.next_rv()
        self._store(rt, obj)
        self.events.append(("deleting", rt.key, meta.get("namespace", ""), meta["name"]))
        return obj, False

    def remove(self, rt: ResourceType, obj: dict):
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        stored = self.objects[rt.key].pop(key, None)
        if stored is not None:
            self._order.pop(rt.key, None)
            self.by_uid.pop(stored["metadata"]["uid"], None)
            self._unindex_owners(stored)
            rv = self.next_rv()
            self._record("DELETED", rt, dict(stored, metadata=dict(stored["metadata"], resourceVersion=rv)))
            self.events.append(("removed", rt.key, key[0], key[1], stored))
            twin = self._event_twin(rt, stored)
            if twin is not None and self.objects[twin[0].key].pop(key, None) is not None:
                self._order.pop(twin[0].key, None)
                self._record("DELETED", twin[0], dict(twin[1], metadata=dict(twin[1]["metadata"], resourceVersion=rv)))
