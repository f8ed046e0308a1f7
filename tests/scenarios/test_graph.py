"""kfin graph on a cluster: owner chains, blocking edges, problems, and every export readable by its tool."""

import json
import re

import networkx as nx
import pydot
import pytest

from tests.runner import kfin


def cm(name, **meta):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}


def owned_by(obj, controller=True, block=True):
    return [{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
             "uid": obj["metadata"]["uid"], "controller": controller, "blockOwnerDeletion": block}]


def ownership_chain(cluster):
    """Widget web -> ConfigMap web-1 -> Secret web-1-a: three kinds, three levels, and nothing a real
    cluster's controllers would rewrite (a Deployment's controller makes ReplicaSets of its own and
    releases Pods whose labels do not match)."""
    group = cluster.widget_crd()
    widget = cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "web"}})
    config = cluster.create(cm("web-1", ownerReferences=owned_by(widget)))
    secret = cluster.create({"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "web-1-a", "ownerReferences": owned_by(config)}, "type": "Opaque", "data": {"k": "dg=="}})
    return group, widget, config, secret


def graph_json(cluster, *args):
    result = kfin("graph", *args, "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "-o", "json")
    assert result.code in (0, 8), result.stderr
    data = json.loads(result.stdout)
    return nx.node_link_graph(data, edges="edges"), data


def labels(graph):
    return {f"{d['kind']}/{d['name']}" for _, d in graph.nodes(data=True)}


def test_an_ownership_chain_is_drawn_from_its_root(cluster):
    group, *_ = ownership_chain(cluster)
    result = kfin("graph", f"widgets.{group}", "web", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    at = {name: next(i for i, line in enumerate(lines) if line.split()[-1].endswith(name))
          for name in ("/web", "/web-1", "/web-1-a")}
    assert at["/web"] < at["/web-1"] < at["/web-1-a"], result.stdout
    indent = lambda i: len(lines[i]) - len(lines[i].lstrip("│ ├└─"))  # noqa: E731
    assert indent(at["/web"]) < indent(at["/web-1"]) < indent(at["/web-1-a"])
    lineage, _ = graph_json(cluster, "secret/web-1-a")
    assert labels(lineage) == {"Widget/web", "ConfigMap/web-1", "Secret/web-1-a"}


def test_a_custom_resource_owning_configmaps(cluster):
    group = cluster.widget_crd()
    widget = cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}})
    for i in range(2):
        cluster.create(cm(f"w1-config-{i}", ownerReferences=owned_by(widget)))
    graph, _ = graph_json(cluster, f"widgets.{group}", "w1")
    assert labels(graph) == {"Widget/w1", "ConfigMap/w1-config-0", "ConfigMap/w1-config-1"}
    whole, _ = graph_json(cluster, "namespace", cluster.namespace)
    assert {"Widget/w1", "ConfigMap/w1-config-0"} <= labels(whole)


@pytest.mark.controllers
def test_foreground_deletion_blocked_by_a_dependent_with_a_finalizer(cluster):
    owner = cluster.create(cm("owner"))
    cluster.create(cm("dependent", finalizers=["example.com/block"], ownerReferences=owned_by(owner)))
    cluster.delete(owner, propagation="Foreground")
    cluster.eventually(lambda: (cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/dependent") or {})
                       .get("metadata", {}).get("deletionTimestamp"))
    graph, data = graph_json(cluster, "cm", "owner")
    [(a, b, edge)] = [(a, b, e) for a, b, e in graph.edges(data=True) if e["ownership"]]
    assert graph.nodes[a]["name"] == "owner" and graph.nodes[b]["name"] == "dependent" and edge["blocking"] is True
    assert edge["cause"] == "blocking-dependent"
    [(c, actor, link)] = [(a, b, e) for a, b, e in graph.edges(data=True) if not e["ownership"]]
    assert c == b and graph.nodes[actor]["kind"] == "Actor" and link["cause"] == "controller"
    assert graph.nodes[actor]["name"] == "the controller of example.com"
    assert sorted(data["chains"], key=lambda c: len(c["mustGoFirst"])) == [
        {"object": b, "mustGoFirst": [actor]}, {"object": a, "mustGoFirst": [actor, b]}]
    tree = kfin("graph", "cm/owner", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace).stdout
    assert "⛔ waits for ConfigMap/" in tree and f"Before ConfigMap/{cluster.namespace}/owner can go" in tree
    assert "⛔ waits for (controller) Actor/the controller of example.com" in tree
    assert "custom: example.com/block" in tree
    owners = kfin("graph", "cm/owner", "--owners-only", "--kubeconfig", str(cluster.kubeconfig), "-n",
                  cluster.namespace, "-o", "json")
    assert len(json.loads(owners.stdout)["edges"]) == 1


@pytest.mark.controllers
def test_dangling_and_cross_namespace_owners_are_reported(cluster):
    other = cluster.name("other")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    elsewhere = cluster.create(cm("owner", namespace=other))
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost",
                                                                   "uid": "00000000-0000-0000-0000-000000000001"}}
    # Finalizers keep both visible after the garbage collector deletes them for their absent owners.
    cluster.create(cm("dangling", finalizers=["example.com/keep"], ownerReferences=owned_by(ghost, block=False)))
    cluster.create(cm("crossed", finalizers=["example.com/keep"], ownerReferences=owned_by(elsewhere, block=False)))
    _, data = graph_json(cluster, "namespace", cluster.namespace)
    kinds = {(p["kind"], p["message"].split(" ")[0]) for p in data["problems"]}
    assert ("dangling", f"ConfigMap/{cluster.namespace}/dangling") in kinds
    assert ("cross-namespace", f"ConfigMap/{cluster.namespace}/crossed") in kinds
    cluster.delete(f"/api/v1/namespaces/{other}")


def test_a_cycle_is_reported(cluster):
    a = cluster.create(cm("a"))
    b = cluster.create(cm("b", ownerReferences=owned_by(a, block=False)))
    cluster.api.merge_patch(cluster.path_of(a), {"metadata": {"ownerReferences": owned_by(b, block=False)}})
    graph, data = graph_json(cluster, "namespace", cluster.namespace)
    assert "cycle" in {p["kind"] for p in data["problems"]}
    tree = kfin("graph", "namespace", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig)).stdout
    assert "ConfigMap/" in tree and "cycle" in tree


def test_several_controllers_are_reported_from_a_file(tmp_path):
    """An API server refuses a second controller owner (test_cluster_rules); a file can still hold one."""
    owners = [{"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": f"{n}-uid", "controller": True}
              for n in ("a", "c")]
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": "x", "uid": f"{n}-uid"}}
             for n in ("a", "c")]
    items.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "twice", "namespace": "x", "uid": "twice-uid", "ownerReferences": owners}})
    items.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "uid": "x-uid"}})
    (tmp_path / "list.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    result = kfin("graph", "namespace", "x", "--from-snapshot", str(tmp_path / "list.json"), "-o", "json")
    assert result.code == 0, result.stderr
    assert "several-controllers" in {p["kind"] for p in json.loads(result.stdout)["problems"]}


def test_every_export_parses_with_its_own_tool_and_holds_the_same_graph(cluster):
    ownership_chain(cluster)
    base = ("graph", "namespace", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig))
    from_json = nx.node_link_graph(json.loads(kfin(*base, "-o", "json").stdout), edges="edges")
    nodes, edges = set(from_json.nodes), set(from_json.edges)
    assert len(edges) == 2
    from_graphml = nx.parse_graphml(kfin(*base, "-o", "graphml").stdout)
    assert set(from_graphml.nodes) == nodes and set(from_graphml.edges) == edges
    [dot] = pydot.graph_from_dot_data(kfin(*base, "-o", "dot").stdout)
    dot_nodes = {n.get_name().strip('"') for n in dot.get_nodes() if n.get_name() not in ("node", "edge", "graph")}
    dot_edges = {(e.get_source().strip('"'), e.get_destination().strip('"')) for e in dot.get_edges()}
    assert dot_nodes == nodes and dot_edges == edges
    mermaid = kfin(*base, "-o", "mermaid").stdout
    drawn = [line for line in mermaid.splitlines() if not line.lstrip().startswith("%%")]  # comments: the legend
    # issue 41: titled (what, context, when) in Mermaid's front matter, then the diagram
    assert re.match(r'---\ntitle: "namespace [^"\n]+, context [^"\n]+, observed [^"\n]+ UTC"\n---\ngraph LR\n', mermaid)
    assert sum(line.count("-->") for line in drawn) == 2


def test_the_graph_of_a_snapshot_equals_the_live_graph(cluster):
    ownership_chain(cluster)
    snap = cluster.workdir / "snap.json"
    kfin("snapshot", "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig), "-f", str(snap))
    live = json.loads(kfin("graph", "namespace", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig),
                           "-o", "json").stdout)
    offline = json.loads(kfin("graph", "namespace", cluster.namespace, "--from-snapshot", str(snap),
                              "-o", "json").stdout)
    strip = lambda g: ({n["id"]: {k: v for k, v in n.items() if k != "terminatingSeconds"} for n in g["nodes"]},  # noqa
                       sorted((e["source"], e["target"]) for e in g["edges"]))
    assert strip(offline) == strip(live)


def test_depth_kind_and_only_stuck_keep_large_namespaces_readable(cluster):
    ownership_chain(cluster)
    base = ("graph", "namespace", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig))
    shallow = kfin(*base, "--depth", "1").stdout
    assert "Widget." in shallow and "/web-1" not in shallow and "more below (--depth)" in shallow
    secrets = nx.node_link_graph(json.loads(kfin(*base, "--kind", "secret", "-o", "json").stdout), edges="edges")
    assert labels(secrets) == {"Widget/web", "ConfigMap/web-1", "Secret/web-1-a"}  # secrets and their owners
    assert json.loads(kfin(*base, "--only-stuck", "-o", "json").stdout)["nodes"] == []


def test_a_namespace_graph_holds_the_volumes_its_claims_are_bound_to(cluster):
    """Issue 41: a claim's PersistentVolume is cluster-scoped, not the namespace's content, yet it is what the claim
    holds (and what deleting the claim may delete): read live, it is drawn beside its claim."""
    pv = cluster.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": cluster.name("pv")},
                         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                  "persistentVolumeReclaimPolicy": "Retain", "storageClassName": cluster.name("manual"),
                                  "hostPath": {"path": "/tmp/kfin"},
                                  "claimRef": {"namespace": cluster.namespace, "name": "data"}}})
    cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                             "storageClassName": cluster.name("manual"), "volumeName": pv["metadata"]["name"]}})
    base = ("graph", "namespace", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig))
    graph = json.loads(kfin(*base, "-o", "json").stdout)
    names = {n["id"]: f"{n['kind']}/{n['name']}" for n in graph["nodes"]}
    assert f"PersistentVolume/{pv['metadata']['name']}" in names.values()
    assert [(names[e["source"]], names[e["target"]]) for e in graph["edges"] if e.get("binds")] == [
        ("PersistentVolumeClaim/data", f"PersistentVolume/{pv['metadata']['name']}")]
    assert f"bound to PersistentVolume/{pv['metadata']['name']}" in kfin(*base).stdout
