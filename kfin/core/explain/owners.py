"""The owner/dependent graph of ownerReferences (networkx), and what blocks what in it.

Nodes are objects by uid (owners that do not exist get a `missing:` node); edges go from owner to
dependent. Everything here works on plain KubeObjects, from a live cluster or a snapshot alike.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from msgspec import Struct

from kfin.core.explain.blocking import Chain, node_id
from kfin.model import JSON, KubeObject

if TYPE_CHECKING:
    import networkx as nx

    from kfin.core.explain.causes.ecosystem import Holding

FOREGROUND = "foregroundDeletion"


class Problem(Struct, frozen=True):
    kind: str  # dangling, cross-namespace, namespaced-owner, cycle, several-controllers
    node: str
    message: str


def build(
    objects: list[KubeObject],
    observed_at: datetime | None = None,
    listed_kinds: set[tuple[str, str]] | None = None,
    blocker: Callable[[KubeObject], str] | None = None,
    verdict: Callable[[KubeObject], str | None] | None = None,
) -> nx.DiGraph:
    """`listed_kinds` ({(group, kind)}): kinds read completely; an absent owner of another kind is
    reported as unverified rather than dangling (kfin could not look for it). `blocker(obj)` gives the
    one-line blocker of each Terminating object (kfin stuck's), `verdict(obj)` its verdict (its VERDICT)."""
    import networkx as nx  # 0.15 s to import: only for the commands that draw graphs

    graph = nx.DiGraph()
    by_uid = {o.uid: o for o in objects if o.uid}
    for obj in objects:
        stuck = obj.terminating
        graph.add_node(
            node_id(obj),
            **_object_attributes(
                obj,
                observed_at,
                blocker(obj) if blocker and stuck else None,
                verdict(obj) if verdict and stuck else None,
            ),
        )
    for obj in objects:
        for ref in obj.owner_references:
            uid = ref.get("uid", "")
            owner = by_uid.get(uid)
            problem = ""
            if owner is None:
                owner_id = f"missing:{uid}"
                if owner_id not in graph:
                    graph.add_node(
                        owner_id,
                        kind=ref.get("kind", ""),
                        group=ref.get("apiVersion", "").rpartition("/")[0],
                        apiVersion=ref.get("apiVersion", ""),
                        namespace=obj.namespace,
                        name=ref.get("name", ""),
                        uid=uid,
                        missing=True,
                        terminating=False,
                        finalizers=[],
                        terminatingSeconds=None,
                        namespaced=None,
                        blocker=None,
                        verdict=None,
                    )
                group = ref.get("apiVersion", "").rpartition("/")[0]
                verified = listed_kinds is None or (group, ref.get("kind", "")) in listed_kinds
                problem = "dangling" if verified else "unverified"
            else:
                owner_id = node_id(owner)
                if owner.type.namespaced and owner.namespace != obj.namespace:
                    problem = "cross-namespace" if obj.namespace else "namespaced-owner"
            owner_terminating = owner is not None and owner.terminating and FOREGROUND in owner.finalizers
            blocking = bool(ref.get("blockOwnerDeletion")) and owner_terminating and not problem
            graph.add_edge(
                owner_id,
                node_id(obj),
                controller=bool(ref.get("controller")),
                blockOwnerDeletion=bool(ref.get("blockOwnerDeletion")),
                blocking=blocking,
                problem=problem,
                ownership=True,
                cause=None,
            )
    return graph


def _object_attributes(
    obj: KubeObject, observed_at: datetime | None, blocker: str | None, verdict: str | None = None
) -> JSON:
    """A graph node's attributes for an object read from the cluster."""
    since = obj.deletion_requested_at
    return {
        "kind": obj.type.kind,
        "group": obj.type.group,
        "apiVersion": obj.type.api_version,
        "namespace": obj.namespace,
        "name": obj.name,
        "uid": obj.uid,
        "missing": False,
        "terminating": obj.terminating,
        "finalizers": obj.finalizers + obj.spec_finalizers,
        "terminatingSeconds": int((observed_at - since).total_seconds()) if since and observed_at else None,
        "namespaced": obj.type.namespaced,
        "blocker": blocker,
        "verdict": verdict,
    }


def _object_node(
    graph: nx.DiGraph,
    obj: KubeObject,
    observed_at: datetime | None,
    verdict: Callable[[KubeObject], str | None] | None = None,
) -> str:
    node = node_id(obj)
    if node not in graph:
        shown = verdict(obj) if verdict is not None and obj.terminating else None
        graph.add_node(node, **_object_attributes(obj, observed_at, None, shown))
    return node


def _add_unread_node(
    graph: nx.DiGraph, node: str, kind: str, name: str, namespace: str = "", missing: bool = False
) -> None:
    """A node for something kfin did not read as an object (a controller, a kubelet, a holder known by its
    description): left out of the ownerReferences graph."""
    graph.add_node(
        node,
        kind=kind,
        group="",
        apiVersion="",
        namespace=namespace,
        name=name,
        uid="",
        missing=missing,
        terminating=False,
        finalizers=[],
        terminatingSeconds=None,
        namespaced=None,
        blocker=None,
        verdict=None,
        actor=True,
    )


def add_blocking(
    graph: nx.DiGraph,
    chain: Chain,
    observed_at: datetime | None = None,
    verdict: Callable[[KubeObject], str | None] | None = None,
) -> None:
    """Add a blocking chain's edges (kfin.core.explain.blocking): "cannot go until", labelled by type. An ownership
    edge that is also a blocking one keeps its place and gains the type; actors outside the API (a
    controller, a kubelet) become nodes of kind Actor. Each node says what holds it: its blocker when
    it is being deleted, else why it is a root cause; `verdict(obj)`: the verdict of each stuck object."""
    ids = {}
    for node, data in chain.graph.nodes(data=True):
        if data.get("actor"):
            ids[node] = f"actor:{data['label']}"
            _add_unread_node(graph, ids[node], "Actor", data["label"])
        else:
            ids[node] = _object_node(graph, data["object"], observed_at, verdict)
        attrs = graph.nodes[ids[node]]
        if attrs.get("verdict") is None and verdict is not None and data.get("stuck"):
            attrs["verdict"] = verdict(data["object"])
        if attrs.get("blocker") is None:
            if data.get("stuck"):
                attrs["blocker"] = data["line"]
            elif node in chain.roots:
                into = [d["why"] for _, _, d in chain.graph.in_edges(node, data=True)]
                attrs["blocker"] = "root cause: " + (into[0] if into else data["line"])
    for a, b, data in chain.graph.edges(data=True):
        source, target = ids[a], ids[b]
        if graph.has_edge(source, target):  # the verdict of the finding the link is of: what kind of root it ends at
            graph.edges[source, target].update(cause=data["type"], why=data["why"], verdict=data["verdict"])
        else:
            graph.add_edge(
                source,
                target,
                controller=False,
                blockOwnerDeletion=False,
                blocking=True,
                problem="",
                ownership=False,
                cause=data["type"],
                why=data["why"],
                verdict=data["verdict"],
            )


def add_volume_edge(graph: nx.DiGraph, claim: str, volume: str) -> None:
    """A claim and the PersistentVolume bound to it: not ownership (the volume outlives the claim under the
    Retain policy), drawn so that a namespace's graph shows the disks its claims hold."""
    graph.add_edge(
        claim,
        volume,
        controller=False,
        blockOwnerDeletion=False,
        blocking=False,
        problem="",
        ownership=False,
        binds=True,
        cause=None,
    )


def add_holders(graph: nx.DiGraph, obj: KubeObject, holders: list[Holding], observed_at: datetime | None) -> None:
    """Add what a catalog finalizer of `obj` will delete when its controller runs (cleans-up) or needs
    (requires): not blocking edges (nothing there is stuck), drawn so that a user sees what forcing it leaves
    behind. One not read (in a namespace kfin did not list) is drawn from its description."""
    source = _object_node(graph, obj, observed_at)
    for holder in holders:
        if holder.target is not None:
            node = _object_node(graph, holder.target, observed_at)
        else:
            node = f"holder:{holder.text}"
            kind, _, rest = holder.text.partition(" ")
            namespace, _, name = rest.rpartition("/")
            if rest:
                _add_unread_node(graph, node, kind, name, namespace, holder.missing)
            else:
                _add_unread_node(graph, node, "Holder", holder.text, missing=holder.missing)
        if not graph.has_edge(source, node):
            graph.add_edge(
                source,
                node,
                controller=False,
                blockOwnerDeletion=False,
                blocking=False,
                problem="",
                ownership=False,
                holder=holder.effect,
                why=holder.meaning,
            )


def problems(graph: nx.DiGraph) -> list[Problem]:
    import networkx as nx  # 0.15 s to import: only for the commands that draw graphs

    out = []
    graph = owners_only(graph)
    controllers: dict[str, list[str]] = {}
    edges = ((owner, dependent, data) for owner, children in graph.adjacency() for dependent, data in children.items())
    for owner, dependent, data in edges:
        if data["controller"]:
            controllers.setdefault(dependent, []).append(owner)
        if not data["problem"]:
            continue
        o, ref = graph.nodes[owner], label(graph, dependent)
        if data["problem"] == "dangling":
            out.append(
                Problem(
                    "dangling",
                    dependent,
                    f"{ref} names owner {o['kind']}/{o['name']} (uid {o['uid']}), "
                    "which does not exist: the garbage collector will delete it",
                )
            )
        elif data["problem"] == "unverified":
            out.append(
                Problem(
                    "unverified",
                    dependent,
                    f"{ref} names owner {o['kind']}/{o['name']}, which kfin "
                    "could not look for (that kind was not read)",
                )
            )
        elif data["problem"] == "cross-namespace":
            out.append(
                Problem(
                    "cross-namespace",
                    dependent,
                    f"{ref} names owner {label(graph, owner)} in another "
                    "namespace: invalid, the garbage collector treats it as "
                    "absent",
                )
            )
        elif data["problem"] == "namespaced-owner":
            out.append(
                Problem(
                    "namespaced-owner",
                    dependent,
                    f"cluster-scoped {ref} names namespaced owner "
                    f"{label(graph, owner)}: unresolvable, never "
                    "garbage-collected",
                )
            )
    several_owned = {n for n, owners in controllers.items() if len(owners) > 1}
    for node in (n for n in graph.nodes if n in several_owned):  # in node order, as before
        several = controllers[node]
        out.append(
            Problem(
                "several-controllers",
                node,
                f"{label(graph, node)} has {len(several)} controller "
                "owners: " + ", ".join(label(graph, c) for c in several),
            )
        )
    for cycle in nx.simple_cycles(graph.subgraph(_on_cycles(graph))):
        out.append(
            Problem("cycle", cycle[0], "ownership cycle: " + " -> ".join(label(graph, n) for n in cycle + cycle[:1]))
        )
    return out


def _on_cycles(graph: nx.DiGraph) -> set[str]:
    """Nodes on a cycle or below one: what a topological peel (Kahn's) cannot remove. Ownership graphs
    are almost always forests, so this is usually empty, and finding cycles costs one pass instead of a
    search of the whole graph."""
    succ = dict(graph.adjacency())
    owners = dict.fromkeys(succ, 0)
    for children in succ.values():
        for child in children:
            owners[child] += 1
    queue = [n for n, count in owners.items() if count == 0]
    while queue:
        for child in succ[queue.pop()]:
            owners[child] -= 1
            if owners[child] == 0:
                queue.append(child)
    return {n for n, count in owners.items() if count > 0}


def owners_only(graph: nx.DiGraph) -> nx.DiGraph:
    """The ownerReferences graph alone, without blocking edges and actors."""
    import networkx as nx  # 0.15 s to import: only for the commands that draw graphs

    if all(data.get("ownership", True) for _, _, data in graph.edges(data=True)) and not any(
        data.get("actor") for _, data in graph.nodes(data=True)
    ):
        return graph
    view = nx.DiGraph()
    view.add_nodes_from((n, d) for n, d in graph.nodes(data=True) if not d.get("actor"))
    view.add_edges_from((a, b, d) for a, b, d in graph.edges(data=True) if d.get("ownership", True))
    return view


def label(graph: nx.DiGraph, node: str) -> str:
    return _label_of(graph.nodes[node])


def _label_of(d: JSON) -> str:
    kind = f"{d['kind']}.{d['group']}" if d.get("group") else d["kind"]
    return f"{kind}/{d['namespace'] + '/' if d.get('namespace') else ''}{d['name']}"


def blocking_chain(graph: nx.DiGraph, node: str) -> list[str]:
    """What must go before `node` can: its blocking dependents, depth first, deepest first."""
    order, seen = [], {node}

    def visit(current: str) -> None:
        for _, dependent, data in graph.out_edges(current, data=True):
            if data["blocking"] and dependent not in seen:
                seen.add(dependent)
                visit(dependent)
                order.append(dependent)

    visit(node)
    return order


def lineage(graph: nx.DiGraph, node: str) -> nx.DiGraph:
    """All owners up to the roots and all dependents down to the leaves."""
    import networkx as nx  # 0.15 s to import: only for the commands that draw graphs

    keep = {node} | nx.ancestors(graph, node) | nx.descendants(graph, node)
    return graph.subgraph(keep).copy()


def restrict(graph: nx.DiGraph, kinds: set[str] | None = None, only_stuck: bool = False) -> nx.DiGraph:
    """Keep the nodes asked for and their owners, so that every kept node stays under its roots."""
    import networkx as nx  # 0.15 s to import: only for the commands that draw graphs

    keep = set(graph.nodes)
    if kinds:
        keep = {n for n in keep if graph.nodes[n]["kind"].lower() in kinds}
    if only_stuck:
        stuck = {n for n in keep if graph.nodes[n]["terminating"]}
        keep = stuck | {d for n in stuck for d in blocking_chain(graph, n)}
    closed = set(keep)
    for n in keep:
        closed |= nx.ancestors(graph, n)
    return graph.subgraph(closed).copy()


def labels(graph: nx.DiGraph) -> dict[str, str]:
    """label() of every node, computed once (a large graph's renderings sort by it)."""
    return {node: _label_of(d) for node, d in graph.nodes(data=True)}


def roots(graph: nx.DiGraph, named: dict[str, str] | None = None) -> list[str]:
    """Nodes without owners, then one node of each ownership cycle not reachable from them."""
    named = named if named is not None else labels(graph)
    succ = dict(graph.adjacency())  # the adjacency dicts themselves: networkx's views cost a call per lookup
    owned = {child for children in succ.values() for child in children}
    found = sorted((n for n in graph if n not in owned), key=named.__getitem__)
    reached: set[str] = set()

    def reach(start: str) -> None:
        stack = [start]
        while stack:
            node = stack.pop()
            if node not in reached:
                reached.add(node)
                stack.extend(succ[node])

    for n in found:
        reach(n)
    for n in sorted((n for n in graph if n not in reached), key=named.__getitem__):
        if n not in reached:  # only cycles are left: sort those, not the whole graph
            found.append(n)
            reach(n)
    return found
