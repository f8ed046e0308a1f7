"""The graph `kfin graph` draws for a subject (a namespace, or one object's lineage): owners, and the
blocking chain of every Terminating object in it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from msgspec import Struct

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.resources import KindLookup
from kfin.core.explain import owners
from kfin.core.explain.blocking import follow, node_id
from kfin.core.explain.causes import blocker_line, explain_cached, main_finding
from kfin.core.explain.causes.ecosystem import Holding, holdings
from kfin.core.explain.causes.registry import Context, family
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.core.read.subject import facts_on_demand
from kfin.errors import NotFoundError, UsageError
from kfin.model import NAMESPACES, KubeObject

if TYPE_CHECKING:
    import networkx as nx


class SubjectGraph(Struct):
    graph: nx.DiGraph
    title: str
    focus: str | None  # the object's node; None for a namespace
    facts: Facts
    subject: KubeObject | None = None  # the object drawn; None for a namespace


def blocker_of(facts: Facts) -> Callable[[KubeObject], str]:
    return lambda obj: blocker_line(explain_cached(obj, facts))


def verdict_of(facts: Facts) -> Callable[[KubeObject], str | None]:
    """The verdict of a stuck object as `kfin stuck`'s VERDICT column gives it: its main finding's."""

    def verdict(obj: KubeObject) -> str | None:
        main = main_finding(explain_cached(obj, facts))
        return main.verdict.value if main else None

    return verdict


def bound_volumes(namespace: str, facts: Facts) -> list[KubeObject]:
    """The PersistentVolumes the namespace's claims are bound to: cluster-scoped, so not its content, yet
    what its claims hold (and what deleting them may delete: the reclaim policy)."""
    out = []
    for claim in facts.objects("", "persistentvolumeclaims", namespace, full=True) or []:
        name = (claim.raw.get("spec") or {}).get("volumeName")
        volume = facts.find("", "persistentvolumes", "", name, full=True) if name else None
        ref = ((volume.raw.get("spec") or {}).get("claimRef") or {}) if volume else {}
        if volume is not None and (ref.get("namespace"), ref.get("name")) == (namespace, claim.name):
            out.append(volume)
    return out


def add_volumes(graph: nx.DiGraph, volumes: list[KubeObject], facts: Facts) -> None:
    """Each volume and an edge from the claim bound to it (a volume held by its claim already has the chain's
    bound-claim edge the other way)."""
    for volume in volumes:
        ref = (volume.raw.get("spec") or {}).get("claimRef") or {}
        claim = facts.find("", "persistentvolumeclaims", ref.get("namespace", ""), ref.get("name", ""))
        if claim is None or node_id(volume) not in graph or node_id(claim) not in graph:
            continue
        if not graph.has_edge(node_id(volume), node_id(claim)):
            owners.add_volume_edge(graph, node_id(claim), node_id(volume))


def with_foreign_owners(objects: list[KubeObject], facts: Facts) -> list[KubeObject]:
    """Add owners that live in another namespace: the garbage collector ignores such references
    (treats the owner as absent), and the graph should say why rather than call them dangling."""
    present = {o.uid for o in objects}
    wanted: dict[tuple[str, str], set[str]] = {}
    for obj in objects:
        for ref in obj.owner_references:
            if ref.get("uid") not in present:
                wanted.setdefault((ref.get("apiVersion", ""), ref.get("kind", "")), set()).add(ref.get("uid", ""))
    extra: list[KubeObject] = []
    for (api_version, kind), uids in wanted.items():
        rtype = facts.type_of_kind(api_version, kind)
        if rtype is None or not rtype.namespaced:
            continue
        extra += [o for o in facts.objects(rtype.group, rtype.resource) or [] if o.uid in uids]
    return objects + extra


def with_blocking(graph: nx.DiGraph, objects: list[KubeObject], facts: Facts) -> nx.DiGraph:
    """The ownerReferences graph plus, for each Terminating object in it, its blocking chain."""
    drawn = set(graph.nodes)
    for obj in objects:
        if obj.terminating and node_id(obj) in drawn:
            obj = _whole(obj, facts)
            owners.add_blocking(graph, follow(obj, facts), facts.inventory.observed_at, verdict_of(facts))
            owners.add_holders(graph, obj, catalog_holders(obj, facts), facts.inventory.observed_at)
    return graph


def catalog_holders(obj: KubeObject, facts: Facts) -> list[Holding]:
    """What the catalog finalizers of `obj` will delete or need (those that hold it are chain links already)."""
    out: list[Holding] = []
    for finalizer in obj.finalizers:
        fam = family(finalizer, facts.catalog)
        if fam.entry is not None:
            ctx = Context(obj, finalizer, "metadata.finalizers", facts, fam)
            out += [h for h in holdings(ctx, fam.entry) or [] if h.effect != "holds"]
    return out


def build(scope: Scope, kind: str, name: str, owners_only: bool = False) -> SubjectGraph:
    """The graph of `namespace NAME` (every object in it, and their owners) or of one object (its owners up
    to the roots and its dependents down to the leaves)."""
    import networkx as nx  # 0.15 s to import: only for the commands that draw graphs

    facts = facts_on_demand(scope)
    rtype = KindLookup(facts.inventory.resources + builtin_resources()).find(kind)
    cluster_wide = facts.cluster_scoped()
    if (rtype.group, rtype.resource) == NAMESPACES:
        content = facts.everything(name)
        if content is None or cluster_wide is None:
            raise UsageError(f"the snapshot does not cover namespace {name}")
        namespace_obj = next(
            (o for o in cluster_wide if (o.type.group, o.type.resource) == NAMESPACES and o.name == name), None
        )
        if namespace_obj is None:
            raise NotFoundError(f'namespaces "{name}" not found')
        objects = with_foreign_owners(content + cluster_wide, facts)
        volumes = [] if owners_only else bound_volumes(name, facts)
        present = {node_id(o) for o in objects}
        objects += [v for v in volumes if node_id(v) not in present]
        full = owners.build(
            objects, facts.inventory.observed_at, facts.listed_kinds(), blocker_of(facts), verdict_of(facts)
        )
        inside = {n for n, d in full.nodes(data=True) if d.get("namespace") == name}
        inside |= {node_id(v) for v in volumes}
        if namespace_obj.terminating and not owners_only:  # its own blocking links: content, APIServices
            inside.add(node_id(namespace_obj))
        keep = set(inside)
        for n in inside:
            keep |= nx.ancestors(full, n) | set(full.successors(n))
        drawn = full.subgraph(keep).copy()
        if not owners_only:
            with_blocking(drawn, objects, facts)
            add_volumes(drawn, volumes, facts)
        return SubjectGraph(drawn, f"namespace {name}", None, facts)
    namespace = (
        (scope.namespace or (facts.inventory.namespace if scope.from_snapshot is None else None) or "default")
        if rtype.namespaced
        else None
    )
    in_scope = facts.everything(namespace) if namespace else facts.everything(None)
    if in_scope is None or cluster_wide is None:
        raise UsageError("the snapshot does not cover that object's namespace")
    objects = in_scope + (cluster_wide if namespace else [])
    match = [o for o in objects if o.type == rtype and o.name == name and (o.namespace or None) == namespace]
    if not match:
        where = f' in namespace "{namespace}"' if namespace else ""
        raise NotFoundError(f'{rtype.qualified} "{name}" not found{where}')
    objects = with_foreign_owners(objects, facts)
    full = owners.build(
        objects, facts.inventory.observed_at, facts.listed_kinds(), blocker_of(facts), verdict_of(facts)
    )
    focus = node_id(match[0])
    drawn = owners.lineage(full, focus)
    if not owners_only:  # and what it holds: the stuck objects whose blocking chain passes through it
        held = [node_id(o) for o in objects if o.terminating and node_id(o) != focus and holds(o, focus, facts)]
        drawn = full.subgraph(set(drawn.nodes) | {n for n in held if n in full}).copy()
    title = f"graph of {owners.label(full, focus)}"  # the tree's heading; the object itself is in the tree
    return SubjectGraph(drawn if owners_only else with_blocking(drawn, objects, facts), title, focus, facts, match[0])


def holds(obj: KubeObject, focus: str, facts: Facts) -> bool:
    """Whether `focus` is on the blocking chain of the stuck object `obj`."""
    return focus in follow(_whole(obj, facts), facts).graph


def _whole(obj: KubeObject, facts: Facts) -> KubeObject:
    """A namespace is drawn from its metadata; the cause that follows it needs it whole (its conditions)."""
    if (obj.type.group, obj.type.resource) == NAMESPACES:
        return facts.find("", "namespaces", "", obj.name, full=True) or obj
    return obj
