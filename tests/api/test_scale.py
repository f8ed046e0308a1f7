"""What keeps a scan of a large cluster small (issue 17): lean scans, thin objects, streamed files, and the
indexes that keep explanations from walking every object. Speed and memory themselves are measured in
bench/; these tests check that the answers stay the same."""

import io
import json
from pathlib import Path

import pytest

from kfin.api import inventory
from kfin.core.read.facts import Facts
from kfin.core.read.reader import Reader
from kfin.api.jsonstream import members
from kfin.api.connection import Kube, Target
from kfin.model import ThinObject
from kfin.core.explain.stuck import find_stuck
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin
from tests.paths import PROJECT

EXAMPLE = PROJECT / "examples" / "stuck-cluster.json"


def _configmap(name, namespace, **meta):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace, **meta},
            "data": {"secret-looking": "x" * 100}}


@pytest.fixture
def populated(fake, fake_kubeconfig):
    """An active namespace with a plain ConfigMap, one owned by it, a stuck one, and a stuck owner with a
    blocking dependent that has a dependent of its own; a Terminating namespace that still holds a plain
    ConfigMap (the namespace controller has not come to it yet)."""
    api = RawClient(fake.url, "admin-token")
    for ns in ("active", "leaving"):
        api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def owned_by(parent):
        return [{"apiVersion": "v1", "kind": "ConfigMap", "name": parent["metadata"]["name"],
                 "uid": parent["metadata"]["uid"], "blockOwnerDeletion": True}]
    path = "/api/v1/namespaces/active/configmaps"
    plain = api.create(path, _configmap("plain", "active"))
    api.create(path, _configmap("bystander", "active", ownerReferences=owned_by(plain)))
    owner = api.create(path, _configmap("owner", "active", finalizers=["example.com/hold"]))
    owned = api.create(path, _configmap("owned", "active", ownerReferences=owned_by(owner)))
    api.create(path, _configmap("grandchild", "active", ownerReferences=owned_by(owned)))
    api.create(path, _configmap("held", "active", finalizers=["example.com/hold"]))
    api.delete(f"{path}/held")
    api.delete(f"{path}/owner")
    api.create("/api/v1/namespaces/leaving/configmaps", _configmap("left", "leaving",
                                                                   finalizers=["example.com/hold"]))
    api.create("/api/v1/namespaces/leaving/configmaps", _configmap("plain", "leaving"))
    with fake.controllers_paused():
        api.delete("/api/v1/namespaces/leaving")
        yield Kube.connect(Target(str(fake_kubeconfig)))
    for held in (f"{path}/held", f"{path}/owner", "/api/v1/namespaces/leaving/configmaps/left"):
        api.json_patch(held, [{"op": "remove", "path": "/metadata/finalizers"}])


def _names(objects, namespace):
    return {o.name for o in objects if o.type.resource == "configmaps" and o.namespace == namespace}


def test_a_lean_scan_keeps_what_stuck_needs_and_counts_the_rest(populated):
    lean = inventory.live(populated, None, lean=True)
    whole = inventory.live(populated, None)
    # Terminating objects, and the dependents of Terminating owners (two deep) are kept; the plain ConfigMap
    # and the one owned by it (an owner edge that leads to nothing stuck) are only counted
    assert _names(lean.objects, "active") == {"owner", "owned", "grandchild", "held"}
    assert lean.dropped[("", "configmaps", "active")] >= 2  # plain, bystander (and kube-root-ca.crt)
    assert _names(lean.objects, "leaving") == _names(whole.objects, "leaving") >= {"left", "plain"}
    owned = next(o for o in lean.objects if o.name == "owned")
    held = next(o for o in lean.objects if o.name == "held")
    assert isinstance(owned, ThinObject) and not isinstance(held, ThinObject)
    assert owned.owner_uids(blocking=True) == next(o for o in whole.objects if o.name == "owned").owner_uids(True)
    facts = Facts(lean, Reader(populated))
    owner = facts.find("", "configmaps", "active", "owner")
    assert [o.name for o in facts.blocking_dependents(owner.uid)] == ["owned"]
    # the same report either way
    lean_rows = find_stuck(lean, facts=facts)
    whole_rows = find_stuck(whole, facts=Facts(whole, Reader(populated)))
    assert [(r.obj.ref, r.blocker) for r in lean_rows] == [(r.obj.ref, r.blocker) for r in whole_rows]
    assert {r.obj.ref for r in lean_rows} == {"ConfigMap/active/held", "ConfigMap/active/owner", "Namespace/leaving"}
    namespace = next(r for r in lean_rows if r.obj.ref == "Namespace/leaving")
    assert namespace.blocker.startswith("namespace: 4 objects remain")  # left, plain, kube-root-ca.crt, default SA


def test_owner_edges_pack_rows_and_give_back_the_dependents_of_what_is_deleted():
    from kfin.model import ResourceType
    from kfin.api.scan import OwnerEdges

    rtype = ResourceType("", "v1", "pods", "Pod", True)
    edges = OwnerEdges()
    for i in range(2500):  # three chunks
        assert edges.add(rtype, "ns", f"pod-{i}", f"uid-{i}", [f"uid-{i // 10}"] if i >= 10 else ["rs"], 1)
    assert not edges.add(rtype, "ns", "a/b", "uid-x", ["rs"], 1)  # cannot be packed: kept as an object
    assert not edges.add(rtype, "ns", "pod-y", "uid-y", ["a,b"], 1)
    assert not edges.add(rtype, "ns", "pod-z", "uid-z", ["rs", "a/b"], 3)
    assert not edges.add(rtype, "ns", "pod-w", "uid/w", ["rs"], 1)
    assert edges.add(rtype, "ns", "pod-two", "uid-two", ["uid-3", "uid-4"], 2)
    found = {o.name: o for o in edges.dependents_of({"uid-3"}, depth=2)}
    assert set(found) == {f"pod-{i}" for i in range(30, 40)} | {f"pod-{i}" for i in range(300, 400)} | {"pod-two"}
    assert found["pod-two"].owner_uids() == ["uid-3", "uid-4"] and found["pod-two"].owner_uids(blocking=True) == ["uid-4"]
    assert found["pod-31"].owner_uids(blocking=True) == ["uid-3"] and found["pod-31"].namespace == "ns"
    assert edges.dependents_of(set()) == []


def test_what_a_lean_scan_left_out_is_read_again_when_an_explanation_asks(populated):
    facts = Facts(inventory.live(populated, None, lean=True), Reader(populated))
    assert {o.name for o in facts.objects("", "configmaps", "active")} >= {"plain", "owner", "owned", "held"}
    assert facts.find("", "configmaps", "active", "plain") is not None
    assert [o.name for o in facts.blocking_dependents(facts.find("", "configmaps", "active", "owner").uid)] == ["owned"]
    # read again whole: the same objects, in place, not twice
    again = facts.objects("", "configmaps", "active", full=True)
    assert sorted(o.name for o in again) == sorted({o.name for o in again})
    assert len([o for o in facts.inventory.objects if o.name == "owned"]) == 1
    assert not isinstance(facts.find("", "configmaps", "active", "owned"), ThinObject)


def test_objects_grouped_by_type_are_indexed_as_asked_and_a_read_in_one_namespace_keeps_the_others(populated):
    """Informers hand their objects over by type, so that an answer indexes only the types it asks for. A read
    on demand replaces one type's objects in one namespace: those of every other namespace stay known."""
    def grouped():
        found = inventory.live(populated, None)
        by_type = {}
        for o in found.objects:
            by_type.setdefault((o.type.group, o.type.resource), []).append(o)
        found.by_type = by_type
        return found

    def names(objects):
        return sorted((o.namespace, o.name) for o in objects)

    plain = Facts(inventory.live(populated, None), Reader(populated))
    facts = Facts(grouped(), Reader(populated))
    for ns in ("active", "leaving", None):
        assert names(facts.objects("", "configmaps", ns)) == names(plain.objects("", "configmaps", ns))
    assert names(facts.objects("", "namespaces")) == names(plain.objects("", "namespaces"))

    before = names(plain.objects("", "configmaps", "leaving"))
    assert {("leaving", "left"), ("leaving", "plain")} <= set(before)
    facts = Facts(grouped(), Reader(populated))
    assert facts.objects("", "namespaces")  # one type indexed, ConfigMaps not yet
    read_whole = facts.objects("", "configmaps", "active", full=True)  # not kept whole: read from the server
    assert not any(isinstance(o, ThinObject) for o in read_whole) and facts.inventory.by_type is None
    assert names(facts.objects("", "configmaps", "leaving")) == before
    assert names(facts.objects("", "namespaces")) == names(plain.objects("", "namespaces"))


def test_stuck_reports_the_same_from_a_lean_scan_and_from_a_snapshot(populated, fake_kubeconfig, tmp_path):
    live = json.loads(kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(fake_kubeconfig)).stdout)
    kfin("snapshot", "-A", "-f", str(tmp_path / "snap.json"), "--kubeconfig", str(fake_kubeconfig))
    offline = json.loads(kfin("stuck", "--from-snapshot", str(tmp_path / "snap.json"), "-o", "json").stdout)
    assert [(i["kind"], i["namespace"], i["name"], i["blocker"]) for i in live["items"]] == \
        [(i["kind"], i["namespace"], i["name"], i["blocker"]) for i in offline["items"]]


def test_members_streams_arrays_across_any_chunk_boundary():
    document = {"apiVersion": "v1", "items": [{"n": i, "s": "é" * (i % 50)} for i in range(300)] + [123456789012],
                "kind": "List", "metadata": {"resourceVersion": ""}}
    for chunk in (1, 7, 4096):
        seen = {}
        for key, value in members(io.StringIO(json.dumps(document)), frozenset({"items"}), chunk=chunk):
            seen[key] = list(value) if key == "items" else value
        assert seen == document


@pytest.mark.parametrize("text", ['{"items": [1, 2', '{"items": [1,, 2]}', '{"a": 1} {}', '[1]', '{"a" 1}'])
def test_members_refuses_what_is_not_one_json_object(text):
    with pytest.raises(ValueError):
        for key, value in members(io.StringIO(text), frozenset({"items"}), chunk=2):
            list(value) if key == "items" else value


def test_a_kubectl_list_is_read_item_by_item_with_its_kind_after_the_items(tmp_path):
    """kubectl sorts keys: `kind` comes after `items`. Plain objects are kept thin, the rest as before."""
    items = [_configmap(f"cm-{i}", "apps") for i in range(50)]
    items.append(_configmap("held", "apps", finalizers=["example.com/hold"], deletionTimestamp="2026-01-01T00:00:00Z"))
    items.append({"kind": "Pod", "metadata": {"name": "web", "namespace": "apps"},
                  "spec": {"nodeName": "n1", "containers": [{"name": "c", "env": [{"name": "PASSWORD", "value": "x"}]}]}})
    path = tmp_path / "list.json"
    path.write_text(json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {}}, sort_keys=True))
    loaded = inventory.load(str(path))
    assert len(loaded.objects) == 52
    assert sum(isinstance(o, ThinObject) for o in loaded.objects) == 50
    pod = next(o for o in loaded.objects if o.name == "web")
    assert pod.raw["spec"] == {"nodeName": "n1"} and "PASSWORD" not in json.dumps(pod.raw)
    result = kfin("stuck", "--from-snapshot", str(path), "-o", "json")
    assert [i["name"] for i in json.loads(result.stdout)["items"]] == ["held"]
    path.write_text(json.dumps({"apiVersion": "v1", "items": [{"metadata": {"name": "x"}}], "kind": "ConfigMapList"}))
    assert [o.type.kind for o in inventory.load(str(path)).objects] == ["ConfigMap"]  # its kind from the List's


def test_the_plain_tree_reads_as_the_rich_tree_of_the_same_graph():
    """A pipe or a large graph gets plain_tree (strings joined); a terminal gets Rich's: the same text."""
    from rich.console import Console

    from kfin.core.explain import owners as g
    from kfin.render import graph as rg

    facts = Facts(inventory.load(str(EXAMPLE)))
    objects = facts.everything(None)
    owners = g.build(objects, facts.inventory.observed_at, facts.listed_kinds(), lambda o: "")
    for depth in (None, 2):
        out = io.StringIO()
        Console(file=out, width=300, no_color=True, color_system=None, highlight=False).print(
            rg.tree(owners, depth, "owner graph"))
        rich_text = "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"
        assert rg.plain_tree(owners, depth, "owner graph") == rich_text
        assert rich_text.count("\n") > 10


def test_what_causes_declare_they_read_is_fetched_once_before_explaining(populated, fake):
    from collections import Counter

    from kfin.core.read.catalog import Catalog
    from kfin.core.explain.causes import reads_for

    lean = inventory.live(populated, None, lean=True)
    held = next(o for o in lean.objects if o.name == "held")
    wanted = reads_for(held, Catalog())
    assert {("rbac.authorization.k8s.io", "roles", "active", True), ("rbac.authorization.k8s.io", "clusterroles", None, True),
            ("admissionregistration.k8s.io", "validatingwebhookconfigurations", None, True),
            ("apiextensions.k8s.io", "customresourcedefinitions", None, False)} <= wanted  # CRDs: names only
    facts = Facts(lean, Reader(populated))
    fake.requests.clear()
    find_stuck(lean, facts=facts)
    reads = Counter(r.path.split("?")[0] for r in fake.requests if r.method == "GET")
    assert reads["/apis/rbac.authorization.k8s.io/v1/namespaces/active/roles"] == 1
    assert reads["/apis/rbac.authorization.k8s.io/v1/clusterroles"] == 1
    assert all(count == 1 for path, count in reads.items() if "/events" not in path), reads


def test_a_kfin_snapshot_loads_the_same_whatever_the_order_of_its_keys(tmp_path):
    """kfin writes `resources` before `objects`, so objects are kept as they are read; a file written by
    something else, with `objects` first, is read too (its objects then wait for the types)."""
    document = json.loads(EXAMPLE.read_text())
    reordered = dict(sorted(document.items(), key=lambda kv: kv[0] != "objects"))
    assert list(reordered)[0] == "objects"
    (tmp_path / "reordered.json").write_text(json.dumps(reordered))
    first, second = inventory.load(str(EXAMPLE)), inventory.load(str(tmp_path / "reordered.json"))
    assert [(o.ref, o.raw) for o in first.objects] == [(o.ref, o.raw) for o in second.objects]
    assert first.resources == second.resources and len(first.objects) == len(document["objects"])
