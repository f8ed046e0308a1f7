"""Requests that do not wait on each other's answers go out together: against a cluster across a network each
round trip costs its latency (bench/RESULTS.md, the fleet 20 ms away). Each test holds the requests at a
barrier that opens only when all of them are in flight at once: sent one after another, it breaks."""

import threading
from pathlib import Path

from kfin.api import discovery, inventory
from kfin.api.connection import Kube
from kfin.api.target import Target
from kfin.core.explain import stuck
from kfin.core.explain.causes.registry import explain_cached
from kfin.core.read.facts import Facts
from kfin.core.read.reader import Reader
from kfin.core.explain.stuck import find_stuck, stuck_in
from tests.api.test_scale import populated  # noqa: F401 (a fixture)
from tests.paths import PROJECT

EXAMPLE = PROJECT / "examples" / "stuck-cluster.json"


def hold_discovery(monkeypatch, barrier):
    """Discovery's three requests each wait at `barrier` before they go out."""
    groups, aggregated = Kube.api_groups, Kube.aggregated_discovery

    def held_groups(self):
        barrier.wait()
        return groups(self)

    def held_aggregated(self, path, etag):
        barrier.wait()
        return aggregated(self, path, etag)

    monkeypatch.setattr(Kube, "api_groups", held_groups)
    monkeypatch.setattr(Kube, "aggregated_discovery", held_aggregated)


def test_discovery_asks_for_its_three_documents_at_once(fake, fake_kubeconfig, monkeypatch):
    """The groups (legacy /apis) and both aggregated documents: one round trip for every command, not three."""
    hold_discovery(monkeypatch, threading.Barrier(3, timeout=5))
    types, failures = discovery.discover(Kube.connect(Target(str(fake_kubeconfig))), refresh=True)
    assert ("", "configmaps") in {(t.group, t.resource) for t in types} and failures == []


def test_a_lean_scan_asks_for_the_namespaces_with_discovery(fake, fake_kubeconfig, monkeypatch):
    """A lean scan needs the Namespaces before its other lists (which namespaces are Terminating decides what it
    keeps): they go out with discovery's three documents, not a round trip after them."""
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"metadata": {"name": "going", "finalizers": ["example.com/hold"]}})
    api.delete("/api/v1/namespaces/going")
    barrier = threading.Barrier(4, timeout=5)
    pages = Kube.list_pages

    def held_pages(self, path, *args, **kwargs):
        if path == "/api/v1/namespaces":
            barrier.wait()
        return pages(self, path, *args, **kwargs)

    kube = Kube.connect(Target(str(fake_kubeconfig)))
    try:
        hold_discovery(monkeypatch, barrier)
        monkeypatch.setattr(Kube, "list_pages", held_pages)
        lean = inventory.live(kube, None, lean=True, refresh=True)
        monkeypatch.undo()
        whole = inventory.live(kube, None, refresh=True)
        namespaces = sorted(o.name for o in lean.objects if (o.type.group, o.type.resource) == ("", "namespaces"))
        assert "going" in namespaces and namespaces == sorted(
            o.name for o in whole.objects if (o.type.group, o.type.resource) == ("", "namespaces")
        )
        listed = next(r for r in lean.resources if r.resource == "namespaces")
        assert all(o.type is listed for o in lean.objects if o.type.resource == "namespaces")  # as discovered
        assert lean.failures == []
        assert len([r for r in fake.requests if r.method == "GET" and r.path == "/api/v1/namespaces"]) == 2  # once each
    finally:
        api.json_patch("/api/v1/namespaces/going", [{"op": "remove", "path": "/metadata/finalizers"}])


def test_namespaces_read_early_count_only_as_discovery_describes_them(fake, fake_kubeconfig, monkeypatch):
    """Read early as a type discovery does not list (here: a made-up version, which answers 404), the early read
    is dropped, failure included, and the Namespaces discovery lists are read as any other type."""
    from kfin.model import ResourceType

    monkeypatch.setattr(inventory, "EARLY_NAMESPACES", ResourceType("", "v9", "namespaces", "Namespace", False))
    kube = Kube.connect(Target(str(fake_kubeconfig)))
    lean = inventory.live(kube, None, lean=True, refresh=True)
    assert lean.failures == []
    assert "default" in {o.name for o in lean.objects if o.type.resource == "namespaces"}
    assert any(r.path == "/api/v9/namespaces" for r in fake.requests)


def test_the_contexts_of_a_fleet_are_explained_side_by_side(monkeypatch):
    """What explanations read of one context then waits beside another's, not after it."""
    barrier = threading.Barrier(2, timeout=5)

    def explained(inventory, filters, facts):
        barrier.wait()
        return find_stuck(inventory, filters, facts)

    sources = [Facts(inventory.load(str(EXAMPLE))) for _ in range(2)]
    alone = stuck_in(sources[:1])
    monkeypatch.setattr(stuck, "find_stuck", explained)
    rows = stuck_in(sources)
    assert len(rows) == 2 * len(alone) > 0


def test_the_workloads_where_a_field_manager_is_looked_for_are_read_at_once(populated, fake, monkeypatch):  # noqa: F811
    """Deployments, StatefulSets and DaemonSets everywhere, when RBAC names no controller of a finalizer whose
    field manager is known: one round trip, not three."""
    lean = inventory.live(populated, None, lean=True)
    facts = Facts(lean, Reader(populated))
    barrier = threading.Barrier(3, timeout=5)
    fetch = facts.reader.fetch

    def fetched(rtype, namespace, full):
        if rtype.group == "apps":
            barrier.wait()
        return fetch(rtype, namespace, full)

    monkeypatch.setattr(facts.reader, "fetch", fetched)
    fake.requests.clear()
    find_stuck(lean, facts=facts)
    read = [r.path for r in fake.requests if r.path.startswith("/apis/apps/")]
    assert sorted(read) == ["/apis/apps/v1/daemonsets", "/apis/apps/v1/deployments", "/apis/apps/v1/statefulsets"]


def test_what_runs_as_the_service_accounts_rbac_names_is_read_at_once(populated, fake, monkeypatch):  # noqa: F811
    """Issue 47: RBAC grants update on a stuck object's type to a ServiceAccount: its namespace's Pods,
    Deployments and StatefulSets (is the controller running?) are read in one round trip, not three (they were
    read one after another, the last requests of a scan on a real server)."""
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "operators"}})
    api.create(f"{rbac}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cm-operator"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "update", "patch"]}]})
    api.create(f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "cm-operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm-operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "cm-operator", "namespace": "operators"}]})
    try:
        lean = inventory.live(populated, None, lean=True, refresh=True)
        facts = Facts(lean, Reader(populated))
        barrier = threading.Barrier(3, timeout=5)
        fetch = facts.reader.fetch

        def fetched(rtype, namespace, full):
            if namespace == "operators":
                barrier.wait()
            return fetch(rtype, namespace, full)

        monkeypatch.setattr(facts.reader, "fetch", fetched)
        fake.requests.clear()
        rows = find_stuck(lean, facts=facts)
        evidence = [line for row in rows for f in explain_cached(row.obj, facts).findings for line in f.evidence]
        assert any("to ServiceAccount operators/cm-operator" in line for line in evidence), evidence
        read = sorted(r.path for r in fake.requests if "/namespaces/operators/" in r.path)
        assert read == ["/api/v1/namespaces/operators/pods", "/apis/apps/v1/namespaces/operators/deployments",
                        "/apis/apps/v1/namespaces/operators/statefulsets"]
    finally:
        api.delete(f"{rbac}/clusterrolebindings/cm-operator")
        api.delete(f"{rbac}/clusterroles/cm-operator")


def test_a_lean_scan_keeps_the_crds_that_explanations_ask_about(fake, fake_kubeconfig):
    """Whether a stuck custom resource's CRD is still there comes from the scan's own list of CRDs (kept thin
    however many there are): explaining reads no CRD list again."""
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    for plural in ("widgets", "gadgets"):  # one with a stuck object, one without
        api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": plural[:-1].title()},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    path = "/apis/example.com/v1/namespaces/default/widgets"
    api.create(path, {"apiVersion": "example.com/v1", "kind": "Widget",
                      "metadata": {"name": "w1", "finalizers": ["example.com/cleanup"]}})
    api.delete(f"{path}/w1")
    try:
        kube = Kube.connect(Target(str(fake_kubeconfig)))
        lean = inventory.live(kube, None, lean=True, refresh=True)
        fake.requests.clear()
        facts = Facts(lean, Reader(kube))
        rows = find_stuck(lean, facts=facts)
        assert [r.obj.name for r in rows] == ["w1"]
        evidence = [line for f in explain_cached(rows[0].obj, facts).findings for line in f.evidence]
        assert "CustomResourceDefinition widgets.example.com exists" in evidence
        assert not [r for r in fake.requests if "customresourcedefinitions" in r.path]
    finally:
        api.json_patch(f"{path}/w1", [{"op": "remove", "path": "/metadata/finalizers"}])


def test_the_workloads_of_a_field_manager_are_looked_for_once_per_manager(populated, monkeypatch):  # noqa: F811
    """The stuck objects of one operator name the same field manager: its workloads are looked for once, not
    once per object (every Deployment, StatefulSet and DaemonSet of the cluster, walked at each answer)."""
    from kfin.core.explain.causes import custom

    lean = inventory.live(populated, None, lean=True)
    facts = Facts(lean, Reader(populated))
    walked, objects = [], facts.objects

    def spied(group, resource, namespace=None, *, full=False):
        if (group, resource) == ("apps", "deployments"):
            walked.append(namespace)
        return objects(group, resource, namespace, full=full)

    monkeypatch.setattr(facts, "objects", spied)
    rows = find_stuck(lean, facts=facts)
    managers = {(r.obj.raw.get(custom.MANAGERS) or {}).get("example.com/hold") for r in rows} - {None}
    assert len(rows) >= 3 and len(managers) == 1 and len(walked) == len(managers)
