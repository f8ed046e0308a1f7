"""Scenario clusters: the same test runs on tests/fakeapi and, when one is given, on a real API server.

Backends, chosen by the environment:
- fakeapi (always): a fresh in-process fake per scenario.
- kubeconfig (KFIN_TEST_KUBECONFIG=PATH): the cluster that kubeconfig's current context names.
- envtest: a real control plane (etcd, kube-apiserver, kube-controller-manager: tests/control_plane.py) started
  on 127.0.0.1 for the test session, from KUBEBUILDER_ASSETS=DIR, else from ../shared/control-plane beside the
  checkout; KFIN_TEST_ENVTEST=0 leaves it out.

On a real server each scenario works in a namespace of its own with a random name, names its
cluster-scoped objects with the same random suffix, and removes all of it afterwards (finalizers its
objects still carry included), touching nothing else. Scenarios only wait through `eventually`, so a
real cluster's controllers have the time they need, while the fake answers at once.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import tempfile
import time
from pathlib import Path

from tests.control_plane import ENV_ASSETS, SHARED_CONTROL_PLANE
from tests.fakeapi.rawclient import RawClient

ENV_KUBECONFIG = "KFIN_TEST_KUBECONFIG"
ENV_ENVTEST = "KFIN_TEST_ENVTEST"  # "0": leave the real control plane out
# Why a scenario runs on tests/fakeapi only (@pytest.mark.fake_only): what a real control plane cannot be made to
# do on demand. kfin calls kube-controller-manager down once its lease is over a minute stale, and the real tier
# runs it without leader election (../shared/control-plane/README.md), as some clusters do: no lease at all.
KCM_DOWN = "kube-controller-manager down for minutes, its lease stale: the fake stops its controllers and ages the lease"


def envtest_absent() -> str:
    """Why the real control plane tier does not run, or "" when it does."""
    if os.environ.get(ENV_ENVTEST) == "0":
        return f"{ENV_ENVTEST}=0"
    if os.environ.get(ENV_ASSETS) or (SHARED_CONTROL_PLANE / "unpack.sh").exists():
        return ""
    return f"{SHARED_CONTROL_PLANE} not found and {ENV_ASSETS} not set"


def backends() -> list[str]:
    names = ["fakeapi"]
    if os.environ.get(ENV_KUBECONFIG):
        names.append("kubeconfig")
    if not envtest_absent():
        names.append("envtest")
    return names


def _kubeconfig_access(path: Path) -> tuple[str, str, dict]:
    """(server, token, tls options) of the current context: scenarios need a bearer token."""
    import yaml

    config = yaml.safe_load(path.read_text())
    current = config.get("current-context")
    context = next(c["context"] for c in config["contexts"] if c["name"] == current)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    token = user.get("token") or (Path(user["tokenFile"]).read_text().strip() if user.get("tokenFile") else None)
    if not token:
        raise RuntimeError(f"{ENV_KUBECONFIG}: the current context's user needs a bearer token (token or tokenFile)")
    tls = {"insecure": bool(cluster.get("insecure-skip-tls-verify"))}
    if cluster.get("certificate-authority"):
        tls["ca_file"] = cluster["certificate-authority"]
    elif cluster.get("certificate-authority-data"):
        import base64
        ca = Path(tempfile.mkstemp(suffix=".crt")[1])
        ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
        tls["ca_file"] = str(ca)
    return cluster["server"], token, tls


def until(condition, message: str, seconds: float = 60.0):
    """Wait for `condition()` on the fake too, for what a process of the test's own does (kfin run in a thread,
    kfin guard): `ScenarioCluster.eventually` does not wait on the fake, which settles at once by itself."""
    deadline = time.monotonic() + seconds
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        time.sleep(0.1)
    return value


class ScenarioCluster:
    """One scenario's view of a cluster: its namespace, an admin kubeconfig, and helpers to set the scene."""

    def __init__(self, backend: str, server: str, token: str, workdir: Path, fake=None, tls: dict | None = None,
                 has_controllers: bool = True):
        self.backend = backend
        self.fake = fake
        self.has_controllers = has_controllers
        self.properties_checked = False  # tests/properties.py: checked at its first reading command finding it stuck
        self.properties_seen = False
        self.suffix = secrets.token_hex(3)
        self.namespace = f"kfin-{self.suffix}"
        self.workdir = workdir
        self._tls = tls or {}
        self.server, self.token = server, token
        self.api = RawClient(server, token, self._tls.get("ca_file"), self._tls.get("insecure", False))
        self._cluster_scoped: list[str] = []  # paths to remove afterwards
        self._resources: dict[tuple, tuple] = {}
        self.kubeconfig = self.write_kubeconfig(workdir / "kubeconfig", token, "admin")
        self.api.create("/api/v1/namespaces", {"metadata": {"name": self.namespace}})
        if not self.eventually(lambda: self.api.exists(f"/api/v1/namespaces/{self.namespace}/serviceaccounts/default"),
                               timeout=30, raise_on_timeout=False):
            pass  # without a controller-manager no default ServiceAccount appears; scenarios make their own

    @property
    def is_fake(self) -> bool:
        return self.fake is not None

    def name(self, base: str) -> str:
        """A cluster-scoped name that cannot collide with anything outside this scenario."""
        return f"{base}-{self.suffix}"

    def write_kubeconfig(self, path: Path, token: str, user: str, namespace: str | None = None) -> Path:
        cluster = {"server": self.server}
        if self._tls.get("ca_file"):
            cluster["certificate-authority"] = self._tls["ca_file"]
        if self._tls.get("insecure"):
            cluster["insecure-skip-tls-verify"] = True
        config = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "scenario", "cluster": cluster}],
                  "users": [{"name": user, "user": {"token": token}}],
                  "contexts": [{"name": f"scenario-{user}", "context": {
                      "cluster": "scenario", "user": user, "namespace": namespace or self.namespace}}],
                  "current-context": f"scenario-{user}"}
        path.write_text(json.dumps(config, indent=1))
        return path

    # ----- objects ---------------------------------------------------------------------------------
    def resource_of(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) for a kind, from the server's discovery."""
        key = (api_version, kind)
        if key not in self._resources:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            for r in self.api.get(base)["resources"]:
                if "/" not in r["name"]:
                    self._resources[(api_version, r["kind"])] = (r["name"], r["namespaced"])
        return self._resources[key]

    def path(self, api_version: str, kind: str, name: str | None = None, namespace: str | None = None) -> str:
        plural, namespaced = self.resource_of(api_version, kind)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if namespaced:
            base += f"/namespaces/{namespace or self.namespace}"
        return f"{base}/{plural}" + (f"/{name}" if name else "")

    def path_of(self, obj: dict) -> str:
        meta = obj["metadata"]
        return self.path(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))

    def create(self, obj: dict) -> dict:
        obj = json.loads(json.dumps(obj))
        plural, namespaced = self.resource_of(obj["apiVersion"], obj["kind"])
        if namespaced:
            obj["metadata"].setdefault("namespace", self.namespace)
        created = self.api.create(self.path(obj["apiVersion"], obj["kind"], namespace=obj["metadata"].get("namespace")),
                                  obj)
        if not namespaced:
            self._cluster_scoped.append(self.path_of(created))
        return created

    def get(self, obj_or_path) -> dict | None:
        path = obj_or_path if isinstance(obj_or_path, str) else self.path_of(obj_or_path)
        code, answer = self.api.send("GET", path)
        return answer if code == 200 else None

    def delete(self, obj_or_path, propagation: str | None = None, grace: int | None = None):
        path = obj_or_path if isinstance(obj_or_path, str) else self.path_of(obj_or_path)
        code, answer = self.api.delete(path, propagation, grace)
        assert code in (200, 202), f"DELETE {path}: {code} {answer}"
        return answer

    def widget_crd(self) -> str:
        """A Widget CRD whose group carries the scenario's suffix, so that it cannot collide on a real
        cluster; returns the group once the API serves it."""
        group = f"{self.suffix}.example.com"
        self.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                     "metadata": {"name": f"widgets.{group}"},
                     "spec": {"group": group, "scope": "Namespaced",
                              "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                                        "shortNames": ["wd"]},
                              "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                                  "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
        self.eventually(lambda: self.api.send("GET", f"/apis/{group}/v1")[0] == 200, message="the CRD to serve")
        return group

    def namespace_held_by_widget(self) -> tuple[str, str]:
        """(group, namespace): a namespace being deleted whose Widget w1 keeps a finalizer of an operator
        that is not installed; returns once the namespace controller has marked the Widget deleted."""
        group = self.widget_crd()
        ns = self.name("doomed")
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                     "metadata": {"name": "w1", "namespace": ns, "finalizers": [f"{group}/cleanup"]}})
        self.delete(f"/api/v1/namespaces/{ns}")
        self.eventually(lambda: (self.get(f"/apis/{group}/v1/namespaces/{ns}/widgets/w1") or {})
                        .get("metadata", {}).get("deletionTimestamp"), message="the namespace controller")
        return group, ns

    def set_status(self, obj: dict, status: dict) -> dict:
        """Read, then PUT the status under the resourceVersion read; again on a conflict (kubectl's
        RetryOnConflict): kube-controller-manager writes a Node's or a Pod's status too."""
        for _ in range(10):
            current = self.get(obj)
            code, answer = self.api.send("PUT", self.path_of(current) + "/status", dict(current, status=status))
            if code != 409:
                break
        if code >= 300:
            raise AssertionError(f"PUT {self.path_of(current)}/status: {code} {answer}")
        return answer

    def strip_finalizers(self, obj_or_path):
        path = obj_or_path if isinstance(obj_or_path, str) else self.path_of(obj_or_path)
        self.api.merge_patch(path, {"metadata": {"finalizers": None}})

    def eventually(self, condition, timeout: float = 60, interval: float = 0.2, raise_on_timeout: bool = True,
                   message: str = "", external: bool = False):
        """Wait for `condition()` to be truthy; the fake settles at once, a real cluster within seconds. `external`:
        a process of the scenario's own acts (an operator), which takes its time on the fake too."""
        deadline = time.monotonic() + (0 if self.is_fake and self.has_controllers and not external else timeout)
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() >= deadline:
                if raise_on_timeout:
                    raise AssertionError(f"timed out waiting for {message or condition}")
                return value
            time.sleep(interval)

    def read_only_kubeconfig(self, rules: list | None = None, name: str = "reader") -> Path:
        """A kubeconfig for a ServiceAccount that may only do what `rules` allow (default: read everything).

        The rules are granted cluster-wide through a ClusterRole (reads) so that cluster-scoped lists work.
        """
        rules = rules or [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]
        rbac = "rbac.authorization.k8s.io/v1"
        sa = self.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
        role = self.create({"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": self.name(name)},
                            "rules": rules})
        self.create({"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": self.name(name)},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": role["metadata"]["name"]},
                     "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": self.namespace}]})
        token = self.api.create(self.path_of(sa) + "/token", {"apiVersion": "authentication.k8s.io/v1",
                                                              "kind": "TokenRequest", "spec": {}})["status"]["token"]
        return self.write_kubeconfig(self.workdir / f"kubeconfig-{name}", token, name)

    # ----- cleanup ---------------------------------------------------------------------------------
    def cleanup(self):
        """Start removing what the scenario made, without waiting for it to go (finish() waits): what can block
        deletions first, then our namespaces (each deleted, then its content's finalizers stripped and its Pods
        forced), then our cluster-scoped objects, whose own finalizers finish() strips only if their
        controllers do not finish in time. kube-controller-manager's namespace controller waits 5 s before it
        acts on a deleted namespace: a real tier that waited here would spend most of its time waiting."""
        if self.is_fake:
            return
        # What can block every deletion in the cluster goes first: a webhook configuration whose backend
        # is gone, or an admission policy, rejects the finalizer removals below (or puts the finalizers back); an
        # unavailable APIService stops namespace deletion.
        blocking = ("/validatingwebhookconfigurations/", "/mutatingwebhookconfigurations/", "/apiservices/",
                    "/validatingadmissionpolicybindings/", "/validatingadmissionpolicies/",
                    "/mutatingadmissionpolicybindings/", "/mutatingadmissionpolicies/")
        for path in [p for p in reversed(self._cluster_scoped) if any(b in p for b in blocking)]:
            self.api.delete(path)
        for namespace in self._namespaces():
            self._begin_namespace_deletion(namespace)
        for path in reversed(self._cluster_scoped):
            if not path.startswith("/api/v1/namespaces/"):
                self.api.delete(path)

    def finish(self, timeout: float = 60) -> list[str]:
        """Wait until what cleanup() started is gone, stripping the finalizers nothing else removes in time;
        returns the paths still there after that."""
        if self.is_fake:
            return []
        for namespace in self._namespaces():
            self._delete_namespace(namespace, timeout)
        for path in reversed(self._cluster_scoped):
            if not self.eventually(lambda: not self.api.exists(path), timeout=20, raise_on_timeout=False):
                self.strip_finalizers(path)
        left = [f"/api/v1/namespaces/{n}" for n in self._namespaces()] + list(self._cluster_scoped)
        return [path for path in left if self.eventually(lambda: not self.api.exists(path), timeout=10,
                                                         raise_on_timeout=False) is False]

    def _namespaces(self) -> list[str]:
        return [self.namespace] + [p.rsplit("/", 1)[1] for p in reversed(self._cluster_scoped)
                                   if p.startswith("/api/v1/namespaces/")]

    def _begin_namespace_deletion(self, namespace: str):
        """Delete a namespace of ours, then strip its content's finalizers and delete it (its Pods forced: no
        kubelet confirms them) once: nothing new can be created in a Terminating namespace. A ghost's namespace
        (forced through /finalize with content left) is created again first, since writes to its content answer
        404 until it exists."""
        ns_path = f"/api/v1/namespaces/{namespace}"
        if not self.api.exists(ns_path) and self._content_with_finalizers(namespace):
            self.api.send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": namespace}})
        self.api.delete(ns_path)
        self._strip_namespace_content(namespace, delete=True)

    def _delete_namespace(self, namespace: str, timeout: float = 60):
        """Wait for a namespace of ours to go, stripping what its content still holds meanwhile."""
        ns_path = f"/api/v1/namespaces/{namespace}"
        self._begin_namespace_deletion(namespace)
        deadline = time.monotonic() + timeout
        while self.api.exists(ns_path) and time.monotonic() < deadline:
            self._strip_namespace_content(namespace)
            time.sleep(0.2)
        self._strip_namespace_content(namespace)

    def _content_with_finalizers(self, namespace: str) -> bool:
        return any(item["metadata"].get("finalizers") for _, item, _ in stored_items(self.api, namespace))

    def _strip_namespace_content(self, namespace: str, delete: bool = False):
        """Remove the finalizers our own objects still carry, so that our namespace can go; `delete`: delete
        each of them too, at once, rather than 5 s later with the namespace controller (a workload of ours must
        not be found by the next scenario's kfin, which looks for controllers in every namespace)."""
        strip_items(self.api, stored_items(self.api, namespace), delete)


def stored_items(api: RawClient, namespace: str | None) -> list[tuple[str, dict, str]]:
    """(path, object, resource) of what is stored in `namespace` (listed even when the namespace is gone), or, for
    None, in every namespace: each namespaced type listed once across the cluster."""
    found = []
    groups = [("v1", "/api/v1")] + [(v["groupVersion"], f"/apis/{v['groupVersion']}")
                                    for g in api.get("/apis")["groups"] for v in g["versions"][:1]]
    for _, base in groups:
        code, listing = api.send("GET", base)
        if code != 200:
            continue
        for r in listing["resources"]:
            if "/" in r["name"] or not r["namespaced"] or "list" not in r["verbs"]:
                continue
            where = f"{base}/namespaces/{namespace}" if namespace is not None else base
            code, items = api.send("GET", f"{where}/{r['name']}")
            for item in (items or {}).get("items") or [] if code == 200 else []:
                meta = item["metadata"]
                found.append((f"{base}/namespaces/{meta['namespace']}/{r['name']}/{meta['name']}", item, r["name"]))
    return found


def strip_items(api: RawClient, items: list[tuple[str, dict, str]], delete: bool = False) -> None:
    """Strip the finalizers of `items` (stored_items') and force their Pods (ours name nodes that do not exist: no
    kubelet will confirm); `delete`: delete the others too."""
    for path, item, resource in items:
        if item["metadata"].get("finalizers"):
            api.merge_patch(path, {"metadata": {"finalizers": None}})
        if resource == "pods":
            api.delete(path, grace=0)
        elif delete:
            api.delete(path)


# an annotation written on a namespace of ours while it is deleted: the update event has the namespace controller
# look at it again within 5 s (its grace period) rather than after its failure backoff, which grows to minutes
# while a scenario keeps the namespace from going on purpose
NUDGE = "test.kfin.dev/nudge"


def finish_together(scenarios: list[ScenarioCluster], timeout: float = 60) -> list[str]:
    """finish() for every scenario of one real control plane at once (their cleanup() has begun): each namespaced
    type listed once across the cluster per round instead of once per namespace, our objects' finalizers stripped
    and our Pods forced (no kubelet confirms them), each namespace still there nudged, until all have gone; then
    the cluster-scoped objects, whose finalizers are stripped if their controllers do not finish in time. Returns
    the paths still there after that."""
    real = [scenario for scenario in scenarios if not scenario.is_fake]
    if not real:
        return []
    api = real[0].api
    ours = {namespace for scenario in real for namespace in scenario._namespaces()}
    deadline = time.monotonic() + timeout
    for round_number in itertools.count(1):
        listed = api.get("/api/v1/namespaces")["items"]
        present = {n["metadata"]["name"] for n in listed} & ours
        stored = [entry for entry in stored_items(api, None) if entry[1]["metadata"]["namespace"] in ours]
        ghosts = {item["metadata"]["namespace"] for _, item, _ in stored} - present
        for namespace in ghosts:  # content of a namespace forced through /finalize: its namespace made again, so
            # that the namespace controller deletes the content (with finalizers or without) as it deletes it again
            api.send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": namespace}})
            api.delete(f"/api/v1/namespaces/{namespace}")
            present.add(namespace)
        if not present or time.monotonic() >= deadline:
            break
        strip_items(api, stored)
        for namespace in present:
            nudge = {"metadata": {"annotations": {NUDGE: str(round_number)}}}
            api.merge_patch(f"/api/v1/namespaces/{namespace}", nudge)
        time.sleep(1)
    cluster_scoped = [path for scenario in real for path in reversed(scenario._cluster_scoped)
                      if not path.startswith("/api/v1/namespaces/")]
    waiting = set(cluster_scoped)
    deadline = time.monotonic() + 20
    while waiting and time.monotonic() < deadline:
        waiting = {path for path in waiting if api.exists(path)}
        if waiting:
            time.sleep(0.5)
    for path in waiting:
        real[0].strip_finalizers(path)
    left = [f"/api/v1/namespaces/{n}" for n in sorted(ours)] + cluster_scoped
    return [path for path in left if real[0].eventually(lambda: not api.exists(path), timeout=10,
                                                        raise_on_timeout=False) is False]


def node_a_budget_stops(cluster) -> dict:
    """A Node with Karpenter's termination finalizer, Pod db-0 on it covered by PodDisruptionBudget db with
    maxUnavailable 0 (no disruption allowed, whatever the Pods' health: the disruption controller computes 0 on
    a real cluster, the fake gets it written), and the free Pod web-0."""
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": cluster.name("karp"), "finalizers": ["karpenter.sh/termination"]}})
    for name, app in (("db-0", "db"), ("web-0", "web")):
        cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
                        "spec": {"nodeName": node["metadata"]["name"],
                                 "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    budget = cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
                             "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "db"}}}})
    if cluster.is_fake:
        cluster.set_status(budget, {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 1,
                                    "expectedPods": 1, "observedGeneration": 1})
    cluster.eventually(lambda: (cluster.get(budget).get("status") or {}).get("disruptionsAllowed") == 0,
                       message="the budget to allow no disruption")
    return node


def unavailable_apiservice(cluster) -> tuple[str, str]:
    """(name, group version) of an APIService whose Service does not exist, once it reports unavailable. On a real
    control plane it stops every namespace deletion while it exists: its group is suffixed, and the cluster's
    cleanup (which runs when the test fails too) deletes it before anything else."""
    group = f"{cluster.suffix}.metrics.example.com"
    service = cluster.create({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                              "metadata": {"name": f"v1beta1.{group}"},
                              "spec": {"group": group, "version": "v1beta1", "groupPriorityMinimum": 100,
                                       "versionPriority": 100, "insecureSkipTLSVerify": True,
                                       "service": {"namespace": cluster.namespace, "name": "missing", "port": 443}}})
    cluster.eventually(lambda: any(c.get("type") == "Available" and c.get("status") == "False"
                                   for c in (cluster.get(service).get("status") or {}).get("conditions") or []),
                       message="the APIService to be unavailable")
    return service["metadata"]["name"], f"{group}/v1beta1"


def namespace_behind_an_unavailable_apiservice(cluster) -> tuple[str, str, str]:
    """(namespace, APIService, group version): a namespace deleted while an unavailable APIService stops the
    namespace controller at discovery, once the controller says so."""
    name, group_version = unavailable_apiservice(cluster)
    ns = cluster.name("team")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: any(c.get("type") == "NamespaceDeletionDiscoveryFailure" and c.get("status") == "True"
                                   for c in (cluster.get(f"/api/v1/namespaces/{ns}") or {}).get("status", {})
                                   .get("conditions") or []), message="the namespace controller to stop")
    return ns, name, group_version


def service_webhook(name: str, namespace: str, rule: dict) -> dict:
    """A ValidatingWebhookConfiguration failing closed, backed by Service `checker` of `namespace`, for one rule and
    only that namespace's requests (neither tier can call a Service's backend: it rejects whatever it matches)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{"name": "check.kfin.test", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                      "failurePolicy": "Fail", "timeoutSeconds": 2,
                      "clientConfig": {"service": {"namespace": namespace, "name": "checker", "path": "/validate",
                                                   "port": 443}},
                      "rules": [rule],
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}]}


def served_by(cluster, namespace: str, pod: str | None = None) -> dict:
    """The EndpointSlice of Service `checker` saying it is served (by Pod `pod` of the namespace, when named), as
    it would be in a cluster with an EndpointSlice controller."""
    endpoint: dict = {"addresses": ["10.0.0.9"], "conditions": {"ready": True}}
    if pod:
        endpoint["targetRef"] = {"kind": "Pod", "namespace": namespace, "name": pod}
    return cluster.create({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
                           "metadata": {"name": "checker-1", "namespace": namespace,
                                        "labels": {"kubernetes.io/service-name": "checker"}},
                           "endpoints": [endpoint], "ports": [{"port": 8443, "protocol": "TCP"}]})
