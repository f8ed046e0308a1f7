"""HTTP front of the fake kube-apiserver: routing, content negotiation, auth, faults and the request log."""

import base64
import bisect
import hashlib
import itertools
import json
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from . import conversion, fields, rbac, undecodable
from . import status as st
from . import policies, webhooks
from . import protobuf as pb
from .cluster import CATALOG, AggregatedAPI, Cluster, ResourceType, storage_key
from .controllers import Controllers
from .patch import PatchError, apply_json_patch, apply_merge_patch, apply_strategic_merge_patch

META_LIST = ("PartialObjectMetadataList", "meta.k8s.io", "v1")
META_ONE = ("PartialObjectMetadata", "meta.k8s.io", "v1")
ADMIN_TOKEN = "admin-token"
VIEWER_TOKEN = "viewer-token"
READER_ROLE = "kfin-test-reader"


@dataclass
class Fault:
    """A fault a test switches on: `delay` seconds, an HTTP `status`, `drop` the connection, answer
    `body` (JSON, or bytes as they are) instead of the real answer, or `trickle` it a byte at a time."""
    path: str  # regular expression searched in the request path
    method: str | None = None
    delay: float = 0.0
    status: int | None = None
    drop: bool = False
    body: object = None
    trickle: float = 0.0  # seconds between bytes of the body
    times: int | None = None  # None: every matching request
    applied: bool = False  # the request is carried out first, then its answer is replaced (an answer lost)
    headers: dict = field(default_factory=dict)  # sent with a `body` (Content-Encoding, say); bytes go as they are
    content_type: str = "application/json"  # of a `body`
    # True: only dry runs (dryRun=All in the query), False: only real writes (kfin checks a removal with a dry
    # run before it writes: a fault of the write is not one of that check); None: both
    dry_run: bool | None = None


class Gate:
    """Holds each request it names until `size` of them are being served at once, then lets them all go, and every
    later one: whether a client keeps that many in flight is then a fact the test reads (`opened`), not a count of
    what happened to overlap on a busy machine. Past `timeout` seconds a held request goes on, the gate still shut."""

    def __init__(self, size: int, names: Callable[[str, str], bool], timeout: float = 20.0):
        self.size, self.names, self.timeout = size, names, timeout
        self.waiting = self.most = 0  # held now, and the most held at once
        self.opened = False
        self._changed = threading.Condition()

    def holds(self, method: str, path: str) -> bool:
        return not self.opened and self.names(method, path)

    def wait(self) -> None:
        with self._changed:
            self.waiting += 1  # held now: one that gives up waiting is held no more
            self.most = max(self.most, self.waiting)
            if self.waiting >= self.size:
                self.opened = True
                self._changed.notify_all()
            if not self._changed.wait_for(lambda: self.opened, self.timeout):
                self.waiting -= 1


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict
    accept: str
    content_type: str
    user: str
    status: int = 0
    raw_path: str = ""  # as sent, percent-encoded; `path` is decoded, as Go's URL.Path
    agent: str = ""  # User-Agent
    response_headers: dict = field(default_factory=dict)
    metadata_only: bool = False
    protobuf: bool = False  # answered as a protobuf metadata list
    response_bytes: int = 0
    resource: str = ""
    verb: str = ""
    body: object = None
    dry_run: bool = False  # the server took it as a dry run (dryRun=All where it reads it)


@dataclass
class Route:
    group: str
    version: str
    namespace: str | None
    resource: str
    name: str | None
    subresource: str


def _media_types(accept: str):
    """[(type, {params})] in the order the client listed them."""
    out = []
    for part in (accept or "*/*").split(","):
        fields = [f.strip() for f in part.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        out.append((fields[0], params))
    return out


AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def _kind_of(entry: dict) -> dict:
    """A legacy discovery entry names the group and version of its kind only when they differ (Scale)."""
    return {"group": entry.get("group", ""), "version": entry.get("version", ""), "kind": entry["kind"]}


def _wants_aggregated(accept: str | None) -> bool:
    """The first acceptable media type decides, as content negotiation does."""
    for media, params in _media_types(accept or ""):
        if media in ("application/json", "*/*", "application/*"):
            return (params.get("as"), params.get("g"), params.get("v")) == (
                "APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2")
    return False


EVENT_FIELDS = ("involvedObject.kind", "involvedObject.name", "involvedObject.namespace", "involvedObject.uid",
                "reason", "type", "source")
EVENT_V1_FIELDS = ("regarding.kind", "regarding.name", "regarding.namespace", "regarding.uid", "reason", "type",
                   "reportingController")


def _selectable_fields(rt, obj: dict) -> dict:
    """The fields a fieldSelector may name: metadata.name and .namespace for every type, and for core Events
    those kubectl describe uses (the real server refuses other fields; the fake just matches nothing)."""
    out = {"metadata.name": obj["metadata"]["name"], "metadata.namespace": obj["metadata"].get("namespace", "")}
    fields = {("", "events"): EVENT_FIELDS, ("events.k8s.io", "events"): EVENT_V1_FIELDS}.get(rt.key, ())
    if fields:
        for path in fields:
            node = obj
            for part in path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            out[path] = node if isinstance(node, str) else ""
    return out


def _encode_continue(rv: str, start: str) -> str:
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": int(rv), "start": start + "\u0000"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> str:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        return json.loads(raw)["start"].rstrip("\u0000")
    except (ValueError, KeyError, TypeError):
        raise st.bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")


def _selector_matches(selector: str, values: dict) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if values.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if values.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in values:
                return False
        elif term not in values:
            return False
    return True


class FakeAPIServer:
    """An in-process kube-apiserver for tests. `start()` it, then point a client at `kubeconfig()`."""

    def __init__(self, feature_gates: tuple[str, ...] = ()):
        """`feature_gates`: alpha features enabled as on the real tier's gated control plane (GenericWorkload
        serves scheduling.k8s.io/v1alpha2, PersistentVolumeClaimUnusedSinceTime: the claims' Unused condition)."""
        self.cluster = Cluster()
        self.cluster.enable(feature_gates)
        self.controllers = Controllers(self.cluster)
        self.faults: list[Fault] = []
        self.requests: list[LoggedRequest] = []
        # Called as hook(method, path) before a write is applied, under the cluster lock: a test's
        # stand-in for another client writing between kfin's read and its write.
        self.before_write: list = []
        # Seconds each request waits before it is served: the round trip to a server across a network (the
        # bench's fleets, and a test of how many requests kfin keeps in flight; the others leave it at 0).
        self.latency = 0.0
        self.gate: Gate | None = None  # holds the requests it names until that many are in flight at once
        self.in_flight = self.most_in_flight = 0  # requests being served now, and the most at once so far
        self._flight_lock = threading.Lock()
        self.tokens = {ADMIN_TOKEN: rbac.User("admin", ["system:masters", "system:authenticated"], "admin-uid"),
                       VIEWER_TOKEN: rbac.User("viewer", ["system:authenticated"], "viewer-uid")}
        self._httpd = None
        self._thread = None
        self._ca: bytes | None = None
        self._seed()
        self.cluster.compacted_rv = int(self.cluster.current_rv)  # a watch from before the fake started: 410

    # ----- lifecycle -------------------------------------------------------------------------------
    def start(self, port: int = 0, tls: tuple[Path, Path] | None = None) -> "FakeAPIServer":
        """`tls`: (certificate, key) PEM files to serve HTTPS with, as a real server does. kubectl (client-go)
        sends no bearer token over plain HTTP, so anything that runs kubectl against the fake needs it."""
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = _Listener(("127.0.0.1", port), handler)
        self._httpd.daemon_threads = True
        if tls:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            # The handshake happens in each connection's thread (_Handler.setup), not in the accept loop.
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True,
                                                     do_handshake_on_connect=False)
            self._ca = Path(tls[0]).read_bytes()
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="fakeapi", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        with self.cluster.changed:  # its watches end too, as a real server's do when it stops
            self.cluster.stopped = True
            self.cluster.changed.notify_all()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.close_connections()
            self._httpd.server_close()
            self._httpd = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self._ca else 'http'}://{host}:{port}"

    def kubeconfig(self, path: Path, user: str = "admin", namespace: str = "default", token: str | None = None) -> Path:
        """Write a kubeconfig (JSON is valid YAML) with contexts `fake` (admin) and `fake-viewer` (read-only)."""
        users = {"admin": ADMIN_TOKEN, "viewer": VIEWER_TOKEN}
        if token:
            users[user] = token
        config = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url, **({"certificate-authority-data": base64.b64encode(
                self._ca).decode()} if self._ca else {})}}],
            "users": [{"name": u, "user": {"token": t}} for u, t in users.items()],
            "contexts": [{"name": "fake" if u == "admin" else f"fake-{u}",
                          "context": {"cluster": "fake", "user": u, "namespace": namespace}} for u in users],
            "current-context": "fake" if user == "admin" else f"fake-{user}",
        }
        path.write_text(json.dumps(config, indent=1))
        return path

    # ----- what tests use directly -----------------------------------------------------------------
    def apply(self, obj: dict) -> dict:
        """Create an object as an admin would (controllers run); returns it as stored."""
        with self.cluster.lock:
            api_version, kind = obj["apiVersion"], obj["kind"]
            rt = self.cluster.type_for_kind(api_version, kind)
            if rt is None:
                raise KeyError(f"no resource for {api_version} {kind}")
            created = self.cluster.create(rt, obj["metadata"].get("namespace"), obj)
            self.controllers.run()
            return self.cluster.find(rt, created["metadata"].get("namespace", ""), created["metadata"]["name"]) or created

    def add_aggregated_backend(self, group: str, version: str, resources: list[dict], supports_metadata: bool = True,
                               supports_protobuf: bool = True):
        """Make an aggregated API available, as a running metrics-server would (resources: discovery entries)."""
        types = [ResourceType(group, version, r["name"], r["kind"], r.get("namespaced", True),
                              r.get("verbs", ["get", "list"]), origin="aggregated") for r in resources]
        with self.cluster.lock:
            self.cluster.aggregated_backends[f"{group}/{version}"] = AggregatedAPI(group, version, types, supports_metadata,
                                                                                      supports_protobuf)
            for svc in self.cluster.list(self.cluster.types[("apiregistration.k8s.io", "apiservices")], None):
                self.cluster.events.append(("updated", svc_key(), "", svc["metadata"]["name"]))
            self.controllers.run()

    def stop_controllers(self, seconds_ago: float = 0):
        """kube-controller-manager stops (as if it crashed `seconds_ago`): nothing reconciles, its lease ages."""
        from datetime import datetime, timezone
        with self.cluster.lock:
            self.controllers.renew_lease()
            self.controllers.enabled = False
            leases = self.cluster.types[("coordination.k8s.io", "leases")]
            lease = self.cluster.find(leases, "kube-system", "kube-controller-manager")
            stamp = datetime.fromtimestamp(time.time() + self.cluster.clock_offset - seconds_ago, timezone.utc)
            lease["spec"]["renewTime"] = stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def reconcile(self):
        """Let the controllers act on what time alone changes (a node that stopped reporting, a Pod's
        quarantine running out): the real ones run on timers, the fake's after each write or here."""
        with self.cluster.lock:
            self.controllers.tick()
            self.controllers.run()

    @contextmanager
    def controllers_paused(self):
        """Writes land but no controller reacts until the block ends (a race the real controllers can lose)."""
        with self.cluster.lock:
            enabled, self.controllers.enabled = self.controllers.enabled, False
        try:
            yield
        finally:
            with self.cluster.lock:
                self.controllers.enabled = enabled
                self.cluster.events.clear()

    def advance_clock(self, seconds: float):
        """Age everything by `seconds` (deletionTimestamps in the past are how stuck objects look)."""
        self.cluster.clock_offset += seconds

    def requests_to(self, resource: str) -> list[LoggedRequest]:
        return [r for r in self.requests if r.resource == resource]

    def _seed(self):
        c = self.cluster
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            c.create(c.types[("", "namespaces")], None, {"metadata": {"name": ns}})
        for group in CATALOG["groups"]:
            for v in group["versions"]:
                c.create(c.types[("apiregistration.k8s.io", "apiservices")], None, {
                    "metadata": {"name": f"{v['version']}.{group['name']}", "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
                    "spec": {"group": group["name"], "version": v["version"], "groupPriorityMinimum": 1000,
                             "versionPriority": 15}})
        for name in ("extension-apiserver-authentication", "kube-apiserver-legacy-service-account-token-tracking"):
            c.create(c.types[("", "configmaps")], "kube-system", {"metadata": {"name": name}, "data": {}})
        rbac_group = "rbac.authorization.k8s.io"
        c.create(c.types[(rbac_group, "clusterroles")], None, {
            "metadata": {"name": READER_ROLE},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]})
        c.create(c.types[(rbac_group, "clusterrolebindings")], None, {
            "metadata": {"name": READER_ROLE},
            "roleRef": {"apiGroup": rbac_group, "kind": "ClusterRole", "name": READER_ROLE},
            "subjects": [{"apiGroup": rbac_group, "kind": "User", "name": "viewer"}]})
        # kube-controller-manager's controllers with --use-service-account-credentials act as their ServiceAccounts,
        # bound by the bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go)
        for account, verbs in (("namespace-controller", ["get", "list", "delete", "deletecollection"]),
                               ("generic-garbage-collector", ["get", "list", "watch", "patch", "update", "delete"])):
            role = f"system:controller:{account}"
            c.create(c.types[(rbac_group, "clusterroles")], None, {
                "metadata": {"name": role}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": verbs}]})
            c.create(c.types[(rbac_group, "clusterrolebindings")], None, {
                "metadata": {"name": role}, "roleRef": {"apiGroup": rbac_group, "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "kube-system"}]})
        self.controllers.run()
        with c.lock:  # local APIServices are Available, as kube-apiserver reports them
            for svc in c.list(c.types[("apiregistration.k8s.io", "apiservices")], None):
                svc["status"] = {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": c.now(),
                                                 "reason": "Local", "message": "Local APIServices are always available"}]}

    # ----- request handling (called by _Handler) ---------------------------------------------------
    def fault_for(self, method: str, path: str, query: dict | None = None) -> Fault | None:
        dry_run = "All" in (query or {}).get("dryRun", [])
        for fault in self.faults:
            if fault.dry_run is not None and fault.dry_run != dry_run:
                continue
            if (fault.method is None or fault.method == method) and re.search(fault.path, path):
                if fault.times is not None:
                    if fault.times <= 0:
                        continue
                    fault.times -= 1
                return fault
        return None

    def authenticate(self, header: str | None) -> rbac.User:
        if header and header.startswith("Bearer "):
            user = self.tokens.get(header[len("Bearer "):].strip())
            if user:
                return user
        raise st.unauthorized()

    def handle(self, method: str, path: str, query: dict, headers, body: bytes, log: LoggedRequest):
        """Returns (status, content_type, body)."""
        user = self.authenticate(headers.get("Authorization"))
        impersonated = headers.get("Impersonate-User")
        log.user = user.name
        parts = [p for p in path.split("/") if p]
        with self.cluster.lock:
            self.cluster.warnings = []
            self.controllers.renew_lease()
            if method == "GET" and parts in (["api"], ["apis"]) and _wants_aggregated(headers.get("Accept")):
                document = self._aggregated_discovery(parts == ["api"])
                # The ETag is a hash of the document: 304 while it is unchanged (captures 09-10 of causes).
                etag = '"' + hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest().upper() + '"'
                log.response_headers["ETag"] = etag
                if headers.get("If-None-Match") == etag:
                    return 304, None, ""
                return 200, AGGREGATED_TYPE, document
            discovery = self._discovery(method, parts)
            if discovery is not None:
                return 200, "application/json", discovery
            route = self._route(parts)
            if route.group and route.group not in self.cluster.group_versions:
                raise st.page_not_found()
            rt = self.cluster.resolve(route.group, route.version, route.resource)
            gv = f"{route.group}/{route.version}"
            if gv in self.cluster.aggregated and gv not in self.cluster.aggregated_backends:
                raise st.service_unavailable()
            if rt is None or (route.subresource and route.subresource not in rt.subresources
                              and route.subresource not in ("finalize", "token")):
                raise st.unknown_resource()
            if rt.namespaced != (route.namespace is not None) and not (rt.namespaced and route.name is None
                                                                        and method == "GET"):
                raise st.unknown_resource()
            verb = {"GET": "get" if route.name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
                    "DELETE": "delete" if route.name else "deletecollection"}.get(method)
            if verb == "list" and (query.get("watch") or [""])[0] in ("1", "true"):
                verb = "watch"
            if route.subresource == "token":
                verb = "create"
            log.resource, log.verb = route.resource, verb
            if verb is None or verb not in rt.verbs and not route.subresource:
                raise st.method_not_allowed()
            for value in (route.name, route.namespace):
                if value in (".", ".."):  # the request's name is checked before anything else (capture 32 of causes)
                    raise st.bad_request(f'Name parameter invalid: "{value}": may not be \'{value}\'')
            if impersonated:
                user = self._impersonate(user, impersonated, headers.get_all("Impersonate-Group") or [], verb, route)
                log.user = user.name
            if not rbac.allowed(self.cluster, user, verb, route.group, route.resource, route.subresource,
                                route.namespace, route.name):
                raise st.forbidden(user.name, verb, route.group, route.resource, route.subresource,
                                   route.namespace, route.name)
            self._admit_namespace(verb, rt, route)
            if verb == "patch":
                self._patch_type(rt, headers.get("Content-Type", ""))
            self._admit_webhooks(verb, rt, route, body, user, query)
            self._convert(verb, rt, route, query)
            undecodable.check(self.cluster, verb, rt, route.namespace, route.name,  # what cannot be read from storage
                              paginated=bool((query.get("limit") or [""])[0]))
            if method in ("PATCH", "PUT") and not query.get("dryRun"):  # a dry run writes nothing
                for hook in list(self.before_write):
                    hook(method, path)
            payload = None
            if body:
                try:
                    payload = json.loads(body)
                except ValueError:
                    raise st.bad_request("the body of the request could not be decoded as JSON")
            log.body = payload
            dry_run = "All" in query.get("dryRun", [])
            if method == "DELETE" and body:  # DeleteOptions come from the body alone when there is one: its
                # query, dryRun=All included, is then not read (apiserver's handlers/delete.go; the real tier
                # deleted a ConfigMap sent DELETE ?dryRun=All with {"propagationPolicy": "Background"})
                dry_run = "All" in ((payload if isinstance(payload, dict) else {}).get("dryRun") or [])
            log.dry_run = dry_run
            code, answer = self._execute(method, verb, rt, route, query, headers, payload, dry_run, user, log)
            if self.cluster.warnings:
                # a header line each, as kube-apiserver's recorder adds them (pkg/endpoints/filters/warning.go)
                log.response_headers["Warning"] = list(self.cluster.warnings)
            self.controllers.run()
            if isinstance(answer, Encoded):
                return code, answer.content_type, answer.data
            return code, "application/json", answer

    def _impersonate(self, user, name: str, groups: list, verb: str, route) -> rbac.User:
        """The user a request acts as with Impersonate-User (and Impersonate-Group): kfin's user must be allowed verb
        impersonate on that ServiceAccount (or user, or group). A ServiceAccount impersonated without groups gets
        its token's groups, any other user system:authenticated (apiserver's filters/impersonation.go). Refused,
        v1.36 answers for the resource asked for, naming constrained impersonation's verb (seen on the real tier:
        'cannot impersonate-on:serviceaccount:delete resource "configmaps"')."""
        namespace, _, account = name[len("system:serviceaccount:"):].partition(":") \
            if name.startswith("system:serviceaccount:") else ("", "", "")
        wanted = [("serviceaccounts", namespace, account)] if account else [("users", None, name)]
        wanted += [("groups", None, group) for group in groups]
        for resource, namespace_, target in wanted:
            if not rbac.allowed(self.cluster, user, "impersonate", "", resource, "", namespace_, target):
                on = "serviceaccount" if account else "user-info"
                raise st.forbidden(user.name, f"impersonate-on:{on}:{verb}", route.group, route.resource,
                                   route.subresource, route.namespace, route.name)
        if account:
            as_user = rbac.service_account_user(namespace, account)
        else:
            as_user = rbac.User(name, [])
        if groups:
            as_user.groups = list(groups)
        elif "system:authenticated" not in as_user.groups:
            as_user.groups.append("system:authenticated")
        return as_user

    def _admit_namespace(self, verb, rt, route):
        """NamespaceLifecycle admission: writes other than deletes into a namespace that does not exist
        answer 404 for the namespace, also for objects still stored there (ghosts of a namespace forced
        through /finalize: capture 37 of causes). Reads and deletes pass."""
        if verb not in ("create", "update", "patch") or route.namespace is None or rt.key == ("", "namespaces"):
            return
        if self.cluster.find(self.cluster.types[("", "namespaces")], "", route.namespace) is None:
            raise st.not_found("", "namespaces", route.namespace)

    def _convert(self, verb, rt, route, query):
        """A custom resource asked for in another version than its storage version goes through its CRD's
        conversion webhook, which the fake can never call: tests/fakeapi/conversion.py answers as the real
        tier does."""
        conversion.check(self.cluster, verb, rt, route.version, route.namespace, route.name,
                         paginated=bool((query.get("limit") or [""])[0]))

    def _admit_webhooks(self, verb, rt, route, body, user, query):
        """A DELETE's webhooks, before anything is deleted; a write's run with the object it writes
        (_admitted)."""
        operation = {"delete": "DELETE", "deletecollection": "DELETE"}.get(verb)
        if operation is None or route.subresource == "token" or rt.key in rbac.SELF_REVIEWS:
            return
        labels, stored, payload = {}, None, None
        if body:
            try:
                payload = json.loads(body)
            except ValueError:
                payload = None
        if route.name:
            stored = self.cluster.find(rt, route.namespace or "", route.name)
            labels = ((stored or {}).get("metadata") or {}).get("labels") or {}
        elif isinstance(payload, dict):
            labels = (payload.get("metadata") or {}).get("labels") or {}
        dry_run = "All" in ((payload.get("dryRun") or []) if isinstance(payload, dict) and verb == "delete"
                            else query.get("dryRun", []))
        if verb == "deletecollection":  # admitted object by object, as the store deletes them (its
            # DeleteCollection validates each deletion), each request naming none but carrying the object as its
            # oldObject (v1.36.2 on the real tier): what the fake then deletes, all of them
            for obj in self.cluster.list(rt, route.namespace):
                webhooks.admit(self.cluster, operation, rt, route.namespace, route.subresource,
                               obj["metadata"].get("labels") or {}, user=user, old=obj, dry_run=dry_run)
            return
        webhooks.admit(self.cluster, operation, rt, route.namespace, route.subresource, labels, name=route.name or "",
                       user=user, old=stored if operation == "DELETE" else None, dry_run=dry_run)

    def _discovery(self, method, parts):
        c = self.cluster
        if method != "GET":
            return None
        if parts == ["version"]:
            return CATALOG["version"]
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": self.url.split("://", 1)[1]}]}
        if parts == ["api", "v1"]:
            return {"kind": "APIResourceList", "groupVersion": "v1", "resources": c.discovery["v1"]}
        if parts == ["apis"]:
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [self._group(g) for g in c.group_order]}
        if len(parts) in (2, 3) and parts[0] == "apis" and parts[1] not in c.group_versions:
            raise st.page_not_found()
        if len(parts) == 2 and parts[0] == "apis":
            return {"kind": "APIGroup", "apiVersion": "v1", **self._group(parts[1])}
        if len(parts) == 3 and parts[0] == "apis":
            gv = f"{parts[1]}/{parts[2]}"
            if gv in c.aggregated and gv not in c.aggregated_backends:
                raise st.service_unavailable()
            if gv not in c.discovery:
                raise st.unknown_resource()
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": c.discovery[gv]}
        return None

    def _aggregated_discovery(self, core: bool) -> dict:
        """/api or /apis as APIGroupDiscoveryList (apidiscovery.k8s.io/v2): every group, version and
        resource in one answer, which is how kubectl (client-go) discovers since Kubernetes 1.30."""
        c = self.cluster
        if core:
            items = [{"metadata": {}, "versions": [self._aggregated_version("v1", c.discovery["v1"])]}]
        else:
            items = []
            for group in c.group_order:
                versions = []
                for version in c.group_versions[group]:
                    gv = f"{group}/{version}"
                    # kube-aggregator lists what it has fetched; a backend never reached is left out.
                    if gv not in c.aggregated or gv in c.aggregated_backends:
                        versions.append(self._aggregated_version(version, c.discovery.get(gv, []), group))
                if versions:
                    items.append({"metadata": {"name": group}, "versions": versions})
        return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
                "items": items}

    def _aggregated_version(self, version: str, entries: list, group: str = "") -> dict:
        resources, by_name = [], {}
        for e in entries:
            name, _, sub = e["name"].partition("/")
            if sub:
                if name in by_name:
                    by_name[name].setdefault("subresources", []).append({
                        "subresource": sub, "responseKind": _kind_of(e),
                        "verbs": e["verbs"]})
                continue
            kind = _kind_of(e)
            rt = self.cluster.resolve(group, version, name)
            if rt is not None and rt.origin == "crd":  # custom resources name their group and version (causes 10)
                kind.update(group=group, version=version)
            entry = {"resource": name, "responseKind": kind,
                     "scope": "Namespaced" if e["namespaced"] else "Cluster",
                     "singularResource": e.get("singularName") or e["kind"].lower(), "verbs": e["verbs"]}
            for key, field_name in (("shortNames", "shortNames"), ("categories", "categories")):
                if e.get(key):
                    entry[field_name] = e[key]
            by_name[name] = entry
            resources.append(entry)
        return {"version": version, "resources": resources, "freshness": "Current"}

    def _group(self, name):
        versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in self.cluster.group_versions[name]]
        return {"name": name, "versions": versions, "preferredVersion": versions[0]}

    def _route(self, parts) -> Route:
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise st.unknown_resource()
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces" and not (len(rest) == 3 and rest[2] in ("finalize", "status")):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise st.unknown_resource()
        return Route(group, version, namespace, rest[0], rest[1] if len(rest) > 1 else None,
                     rest[2] if len(rest) > 2 else "")

    # ----- verbs -----------------------------------------------------------------------------------
    def _execute(self, method, verb, rt, route, query, headers, payload, dry_run, user, log):
        c = self.cluster
        ns = route.namespace
        accept = _media_types(headers.get("Accept"))
        if verb == "list":
            return 200, self._list(rt, ns, query, accept, log)
        if verb == "watch":
            metadata_only = any(params.get("as") in ("PartialObjectMetadata", "PartialObjectMetadataList")
                                for _, params in accept)
            return 200, Watch(self.cluster, rt, ns, query, metadata_only)
        if verb == "get":
            obj = c.get(rt, ns, route.name)
            return 200, self._one(rt, obj, accept, log)
        if verb == "create":
            if route.subresource == "token":
                return 201, self._token_request(rt, ns, route.name, payload)
            if rt.key in rbac.SELF_REVIEWS:
                return 201, self._self_review(rt, payload, user)
            if not isinstance(payload, dict):
                raise st.bad_request("the body of the request is empty")
            payload = self._admitted(rt, route, "CREATE", None, payload, user, dry_run)
            created = c.create(rt, ns, payload, dry_run)
            return 201, self._managed(rt, None, created, query, headers, "", dry_run)
        if verb == "update":
            self._require_json(headers)
            if route.subresource == "finalize" and rt.key != ("", "namespaces"):
                raise st.unknown_resource()
            old = c.get(rt, ns, route.name)
            if not isinstance(payload, dict):
                raise st.bad_request("the body of the request is empty")
            new = self._admitted(rt, route, "UPDATE", old, payload, user, dry_run)
            new = c.update(rt, old, new, route.subresource, dry_run)
            return 200, self._managed(rt, old, new, query, headers, route.subresource, dry_run)
        if verb == "patch":
            if route.subresource == "finalize":
                raise st.method_not_allowed()
            old = c.get(rt, ns, route.name)
            new = self._patched(rt, old, headers.get("Content-Type", ""), payload)
            new = self._admitted(rt, route, "UPDATE", old, new, user, dry_run)
            new = c.update(rt, old, new, route.subresource, dry_run)
            return 200, self._managed(rt, old, new, query, headers, route.subresource, dry_run)
        if verb == "delete":
            options = payload if isinstance(payload, dict) else {}
            propagation = options.get("propagationPolicy") or (
                None if payload is not None else (query.get("propagationPolicy") or [None])[0])
            if options.get("orphanDependents") is True:
                propagation = propagation or "Orphan"
            grace = options.get("gracePeriodSeconds")
            if grace is None and payload is None and query.get("gracePeriodSeconds"):
                grace = int(query["gracePeriodSeconds"][0])
            obj = c.get(rt, ns, route.name)
            policies.admit(c, rt, "DELETE", obj, None, route.subresource, user.name)  # as the user asking, dry run or not
            answer, gone = c.delete(rt, obj, propagation, grace, dry_run)
            if gone and rt.key not in (("", "pods"), ("", "namespaces"), ("", "services"),
                                       ("apiextensions.k8s.io", "customresourcedefinitions")):
                return 200, st.success(route.name, rt.group, rt.name, obj["metadata"]["uid"])
            return 200, self._full(rt, answer)
        if verb == "deletecollection":
            for obj in c.list(rt, ns):
                c.delete(rt, obj, None, None, dry_run)
            return 200, self._list(rt, ns, {}, [("application/json", {})], log)
        raise st.method_not_allowed()

    def _admitted(self, rt, route, operation, old, new, user, dry_run):
        """The object a CREATE or UPDATE (a PATCH, once applied) writes, through admission in kube-apiserver's
        order (pkg/kubeapiserver/options/plugins.go): MutatingAdmissionPolicies, mutating webhooks, then
        ValidatingAdmissionPolicies (on UPDATE) and validating webhooks, which may refuse it."""
        c = self.cluster
        if route.subresource == "token" or rt.key in rbac.SELF_REVIEWS:
            return new
        new = policies.mutate(c, rt, operation, old, new, route.subresource, user.name)
        labels = ((old or new).get("metadata") or {}).get("labels") or {}
        name = route.name or (new.get("metadata") or {}).get("name") or ""
        new = webhooks.admit(c, operation, rt, route.namespace, route.subresource, labels, name=name, user=user,
                             old=old, new=new, dry_run=dry_run, kinds=webhooks.KINDS[:1])
        if operation == "UPDATE":
            policies.admit(c, rt, "UPDATE", old, new, route.subresource, user.name)
        webhooks.admit(c, operation, rt, route.namespace, route.subresource, labels, name=name, user=user,
                       old=old, new=new, dry_run=dry_run, kinds=webhooks.KINDS[1:])
        return new

    def _managed(self, rt, old, new, query, headers, subresource, dry_run):
        """Record the request's field manager in managedFields (tests/fakeapi/fields.py) and answer the object."""
        manager = (query.get("fieldManager") or [""])[0] or \
            (headers.get("User-Agent") or "unknown").split("/")[0].split(" ")[0]
        meta = new["metadata"]
        when = self.cluster.now()
        if old is None and meta.get("creationTimestamp"):  # kube-apiserver's create handler stamps managedFields
            # before its storage sets creationTimestamp: a create's entry is never a later second than the creation
            when = min(when, meta["creationTimestamp"])
        managed = fields.updated((old or {}).get("metadata", {}).get("managedFields"), old, new, manager,
                                 rt.api_version, when, subresource if subresource != "finalize" else "")
        stored = None if dry_run else self.cluster.find(rt, meta.get("namespace", ""), meta["name"])
        for obj in filter(None, (new, stored)):
            if managed:
                obj["metadata"]["managedFields"] = managed
            else:
                obj["metadata"].pop("managedFields", None)
        return self._full(rt, new)

    def _require_json(self, headers):
        if headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            raise st.unsupported_media_type("application/json, application/yaml, application/vnd.kubernetes.protobuf, "
                                            "application/cbor")

    def _patch_type(self, rt, content_type):
        """The patch's media type, refused (415) before admission as kube-apiserver's patch handler refuses it
        (k8s.io/apiserver pkg/endpoints/handlers/patch.go PatchResource): a custom resource takes no strategic merge
        patch."""
        kind = content_type.split(";")[0].strip()
        if kind in ("application/json-patch+json", "application/merge-patch+json") or (
                kind == "application/strategic-merge-patch+json" and rt.origin == "builtin"):
            return kind
        raise st.unsupported_media_type("application/json-patch+json, application/merge-patch+json, "
                                        "application/apply-patch+yaml")

    def _patched(self, rt, old, content_type, payload):
        kind = self._patch_type(rt, content_type)
        try:
            if kind == "application/json-patch+json":
                return apply_json_patch(old, payload)
            if kind == "application/merge-patch+json":
                return apply_merge_patch(old, payload)
            return apply_strategic_merge_patch(old, payload)  # only ownerReferences merged by key (patch.py)
        except PatchError:
            raise st.patch_rejected()

    def _wants_protobuf(self, rt, accept) -> bool:
        """Whether the first media type the fake can serve is a protobuf metadata list: kube-apiserver serves
        one for built-in and custom resources alike; an aggregated server may not (`supports_protobuf`)."""
        for media, params in accept:
            if media == pb.CONTENT_TYPE:
                wanted = (params.get("as"), params.get("g"), params.get("v")) == META_LIST
                if wanted and self._metadata_supported(rt) and self._protobuf_supported(rt):
                    return True
            elif media in ("application/json", "*/*", "application/*"):
                return False
        return False

    def _protobuf_supported(self, rt):
        backend = self.cluster.aggregated_backends.get(rt.api_version)
        return rt.origin != "aggregated" or backend is None or backend.supports_protobuf

    def _metadata_supported(self, rt):
        backend = self.cluster.aggregated_backends.get(rt.api_version)
        return rt.origin != "aggregated" or backend is None or backend.supports_metadata

    def _negotiate(self, rt, accept, wanted):
        """True for metadata-only, False for full objects, per the first acceptable media type."""
        for media, params in accept:
            if media not in ("application/json", "*/*", "application/*"):
                continue
            if "as" not in params:
                return False
            if (params.get("as"), params.get("g"), params.get("v")) == wanted and self._metadata_supported(rt):
                return True
        raise st.not_acceptable()

    def _full(self, rt, obj):
        return obj

    def _one(self, rt, obj, accept, log):
        if self._negotiate(rt, accept, META_ONE):
            log.metadata_only = True
            return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}
        return obj

    def _list(self, rt, ns, query, accept, log):
        c = self.cluster
        protobuf = self._wants_protobuf(rt, accept)
        metadata_only = protobuf or self._negotiate(rt, accept, META_LIST)
        log.metadata_only, log.protobuf = metadata_only, protobuf
        label_selector = (query.get("labelSelector") or [""])[0]
        field_selector = (query.get("fieldSelector") or [""])[0]
        # Continue keys are relative to the list's own prefix, as the real server's are: "/name" within a
        # namespace, "/namespace/name" across all.
        prefix = f"/{ns}" if ns is not None and rt.namespaced else ""
        after = prefix + _decode_continue(query["continue"][0]) if query.get("continue") else ""
        limit = int((query.get("limit") or ["0"])[0] or 0)
        list_meta = {"resourceVersion": c.current_rv}
        if not label_selector and not field_selector:
            items, last, rest = c.page(rt, ns, after, limit)
        else:  # selectors filter the whole range, as the real server does after reading it from etcd
            items = c.page(rt, ns, after)[0]
            if label_selector:
                items = [o for o in items if _selector_matches(label_selector, o["metadata"].get("labels") or {})]
            if field_selector:
                items = [o for o in items if _selector_matches(field_selector, _selectable_fields(rt, o))]
            rest = max(0, len(items) - limit) if limit else 0
            items = items[:limit] if limit else items
            last = storage_key(items[-1]["metadata"].get("namespace", ""), items[-1]["metadata"]["name"]) if items else ""
        if rest:
            list_meta["continue"] = _encode_continue(c.current_rv, last[len(prefix):])
            if not label_selector and not field_selector:  # the real server leaves it out with selectors
                list_meta["remainingItemCount"] = rest
        if protobuf:
            return Encoded(pb.metadata_list(items, list_meta), pb.CONTENT_TYPE)
        if metadata_only:
            return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
                    "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                               "metadata": o["metadata"]} for o in items] or None}
        if rt.origin == "builtin":  # typed lists leave kind and apiVersion out of their items
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": list_meta, "items": items}

    def _self_review(self, rt, payload, user):
        if rt.name == "selfsubjectreviews":
            return {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                    "metadata": {"creationTimestamp": self.cluster.now()},
                    "status": {"userInfo": {"username": user.name, "uid": user.uid, "groups": user.groups}}}
        if rt.name == "selfsubjectrulesreviews":
            spec = (payload or {}).get("spec") or {}
            resource_rules, non_resource_rules = rbac.rules_for(self.cluster, user, spec.get("namespace") or "")
            if "system:masters" in user.groups:
                resource_rules = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}] + resource_rules
            return {"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1", "metadata": {},
                    "spec": {}, "status": {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                                           "incomplete": False}}
        attrs = ((payload or {}).get("spec") or {}).get("resourceAttributes") or {}
        ok = rbac.allowed(self.cluster, user, attrs.get("verb", ""), attrs.get("group", ""), attrs.get("resource", ""),
                          attrs.get("subresource", ""), attrs.get("namespace"), attrs.get("name"))
        answer = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "metadata": {},
                  "spec": (payload or {}).get("spec", {}), "status": {"allowed": ok}}
        return answer

    def _token_request(self, rt, ns, name, payload):
        if rt.key != ("", "serviceaccounts"):
            raise st.unknown_resource()
        sa = self.cluster.get(rt, ns, name)
        token = secrets.token_urlsafe(24)
        self.tokens[token] = rbac.service_account_user(ns, name, sa["metadata"]["uid"])
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "metadata": {"name": name,
                "namespace": ns, "creationTimestamp": None}, "spec": (payload or {}).get("spec", {}),
                "status": {"token": token, "expirationTimestamp": self.cluster.now()}}


@dataclass
class Encoded:
    """An answer already encoded (protobuf), with its media type."""
    data: bytes
    content_type: str


class Watch:
    """A watch of one type (in one namespace, with selectors) from a resourceVersion: what happened after
    it, replayed from the cluster's history, then each change as it comes, until timeoutSeconds.
    A resourceVersion older than the compacted window gets one ERROR event, 410 Expired (capture 29 of
    causes). With allowWatchBookmarks, a BOOKMARK carrying the current resourceVersion is sent every
    BOOKMARK_EVERY seconds, as kube-apiserver's watch cache does (staging/src/k8s.io/apiserver/pkg/storage/
    cacher: defaultBookmarkFrequency is a minute)."""

    LONGEST = 60.0  # the fake's cap on timeoutSeconds, so that a forgotten watch ends (a bench may raise it)
    BOOKMARK_EVERY = 60.0

    def __init__(self, cluster, rt, namespace, query, metadata_only):
        self.cluster, self.rt, self.namespace, self.metadata_only = cluster, rt, namespace, metadata_only
        self.labels = (query.get("labelSelector") or [""])[0]
        self.fields = (query.get("fieldSelector") or [""])[0]
        self.timeout = min(float((query.get("timeoutSeconds") or [self.LONGEST])[0]), self.LONGEST)
        self.bookmarks = (query.get("allowWatchBookmarks") or [""])[0] == "true"
        start = (query.get("resourceVersion") or [""])[0]
        with cluster.lock:
            self.start = int(start) if start.isdigit() and start != "0" else int(cluster.current_rv)
            self.expired = bool(start.isdigit() and start != "0" and self.start < cluster.compacted_rv)
            self.compacted = cluster.compacted_rv

    def _wanted(self, key, obj) -> bool:
        meta = obj["metadata"]
        if key != self.rt.key or (self.namespace is not None and meta.get("namespace") != self.namespace):
            return False
        if self.labels and not _selector_matches(self.labels, meta.get("labels") or {}):
            return False
        return not self.fields or _selector_matches(self.fields, {"metadata.name": meta["name"],
                                                                  "metadata.namespace": meta.get("namespace", "")})

    def _event(self, kind, obj) -> bytes:
        if self.metadata_only:
            obj = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}
        return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"

    def lines(self):
        if self.expired:
            yield json.dumps({"type": "ERROR", "object": st.failure(
                410, "Expired", f"too old resource version: {self.start} ({self.compacted})").body}).encode() + b"\n"
            return
        deadline = time.monotonic() + self.timeout
        position = self.start
        bookmark_due = time.monotonic() + self.BOOKMARK_EVERY
        while True:
            with self.cluster.changed:
                history = self.cluster.history
                # the history is in resourceVersion order: only its tail is new (bisect, not a scan of it all)
                first = bisect.bisect_right(history, position, key=lambda entry: entry[0])
                due = [(rv, kind, obj) for rv, kind, key, obj in itertools.islice(history, first, None)
                       if self._wanted(key, obj)]
                if history:
                    position = max(position, history[-1][0])
                if not due:
                    if self.bookmarks and time.monotonic() >= bookmark_due:
                        bookmark_due = time.monotonic() + self.BOOKMARK_EVERY
                        lines = [self._bookmark(position)]
                    else:
                        left = deadline - time.monotonic()
                        if left <= 0 or self.cluster.stopped:
                            return
                        self.cluster.changed.wait(min(left, 0.5, max(0.01, bookmark_due - time.monotonic())))
                        continue
                else:
                    lines = [self._event(kind, obj) for _, kind, obj in due]
            yield from lines

    def _bookmark(self, version) -> bytes:
        """An object of the watched kind with nothing but its resourceVersion, as kube-apiserver sends."""
        obj = {"kind": "PartialObjectMetadata" if self.metadata_only else self.rt.kind,
               "apiVersion": "meta.k8s.io/v1" if self.metadata_only else self.rt.api_version,
               "metadata": {"resourceVersion": str(version)}}
        return json.dumps({"type": "BOOKMARK", "object": obj}, separators=(",", ":")).encode() + b"\n"


def svc_key():
    return ("apiregistration.k8s.io", "apiservices")


class _Listener(ThreadingHTTPServer):
    # Go's listeners take the system's backlog; with socketserver's default of 5, a client opening many
    # connections at once (kfin's parallel scan) lost SYNs and waited a second for each to be resent.
    request_queue_size = socket.SOMAXCONN
    daemon_threads = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.open_connections: dict = {}  # socket -> the thread serving it
        self.connections_lock = threading.Lock()

    def close_connections(self, wait: float = 2.0):
        """Hang up on every client and let their threads end, as a server that stops does (Go's Shutdown closes
        idle keep-alive connections): a thread left waiting for a client's next request would outlive the fake
        and free its memory whenever that client goes, in the middle of a later test."""
        with self.connections_lock:
            serving = dict(self.open_connections)
        for connection in serving:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        for thread in serving.values():
            thread.join(max(0.0, deadline - time.monotonic()))

    def handle_error(self, request, client_address):
        """A client that hangs up (kfin interrupted, a deadline passed, a watch shut down mid-stream: a TLS
        alert then) is no error of the server's: a real one says nothing, and a traceback here would land in
        the output of kfin run in-process, or of the bench."""
        import ssl
        import sys
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAPIServer
    protocol_version = "HTTP/1.1"
    # kube-apiserver (Go) sets TCP_NODELAY; without it the body waits on the headers' delayed ACK, 40 ms a request.
    disable_nagle_algorithm = True

    def setup(self):
        with self.server.connections_lock:
            self.server.open_connections[self.request] = threading.current_thread()
        super().setup()
        self._broken = False
        if hasattr(self.request, "do_handshake"):
            try:
                self.request.do_handshake()
            except OSError:  # the client did not trust us, or went away: nothing to serve
                self._broken = True

    def handle(self):
        if not self._broken:
            super().handle()

    def finish(self):
        try:
            super().finish()
        finally:
            with self.server.connections_lock:
                self.server.open_connections.pop(self.request, None)

    def log_message(self, *args):  # quiet: the request log is in fake.requests
        pass

    def _serve(self):
        if self.fake.latency:
            time.sleep(self.fake.latency)
        split = urlsplit(self.path)
        query = parse_qs(split.query)
        path = unquote(split.path)  # routed decoded, as Go's URL.Path: a%2Fb is two segments (capture 33 of causes)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        log = LoggedRequest(self.command, path, query, self.headers.get("Accept", ""),
                            self.headers.get("Content-Type", ""), "", raw_path=split.path,
                            agent=self.headers.get("User-Agent", ""))
        self.fake.requests.append(log)
        fault = self.fake.fault_for(self.command, path, query)
        if fault is not None:
            if fault.applied:
                try:
                    self.fake.handle(self.command, path, query, self.headers, body, log)
                except st.APIError:
                    pass
            if fault.delay:
                time.sleep(fault.delay)
            if fault.drop:
                log.status = -1
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if fault.body is not None:
                data = fault.body if isinstance(fault.body, bytes) else json.dumps(fault.body).encode()
                log.response_headers.update(fault.headers)
                self._send(fault.status or 200, fault.content_type, data, log, fault.trickle)
                return
            if fault.status:
                self._send(fault.status, "application/json", st.internal_error("injected fault").body
                           if fault.status >= 500 else st.failure(fault.status, "BadRequest", "injected fault").body, log)
                return
        try:
            code, content_type, answer = self.fake.handle(self.command, path, query, self.headers, body, log)
        except st.APIError as error:
            code, content_type, answer = error.code, error.content_type, error.body
            if getattr(error, "warnings", None):  # recorded before the refusal: sent with it (filters/warning.go)
                log.response_headers["Warning"] = list(error.warnings)
        except Exception as error:  # a bug in the fake: say so as the real server would, with a 500
            code, content_type, answer = 500, "application/json", st.internal_error(repr(error)).body
        if isinstance(answer, Watch):
            self._stream(answer, log)
            return
        self._send(code, content_type, answer, log)

    def _stream(self, watch: "Watch", log):
        """A watch: one JSON event per chunk, until its timeout or the client goes away."""
        log.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for line in watch.lines():
                self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True

    def _send(self, code, content_type, answer, log, trickle: float = 0.0):
        if isinstance(answer, bytes):
            data = answer
        elif isinstance(answer, str):
            data = answer.encode()
        else:
            with self.fake.cluster.lock:
                data = json.dumps(answer, separators=(",", ":")).encode()
        log.status, log.response_bytes = code, len(data)
        self.send_response(code)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in log.response_headers.items():
            for one in value if isinstance(value, list) else [value]:
                # Go's net/http writes a header's UTF-8 bytes as they are (a warning's "…", v1.36.2 on the real
                # tier); http.server encodes latin-1: the same bytes, said as latin-1
                self.send_header(name, str(one).encode().decode("latin-1"))
        if code != 304:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not trickle:
            self.wfile.write(data)
            return
        try:
            for index in range(len(data)):
                self.wfile.write(data[index:index + 1])
                self.wfile.flush()
                time.sleep(trickle)
        except OSError:  # the client gave up
            self.close_connection = True

    def _serve_counted(self):
        with self.fake._flight_lock:
            self.fake.in_flight += 1
            self.fake.most_in_flight = max(self.fake.most_in_flight, self.fake.in_flight)
        gate = self.fake.gate
        if gate is not None and gate.holds(self.command, self.path):
            gate.wait()
        try:
            self._serve()
        finally:
            with self.fake._flight_lock:
                self.fake.in_flight -= 1

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve_counted
