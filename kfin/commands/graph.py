"""`kfin graph namespace NAME` and `kfin graph KIND NAME`: the thin layer over kfin.core.owners."""

from __future__ import annotations

import sys
from datetime import datetime, timezone

from kfin.errors import ExitCode, NotFoundError, UsageError
from kfin.core.facts import Facts
from kfin.model import Inventory
from kfin.commands.flags import Options
from kfin.util.text import warn_failures

FORMATS = ("tree", "json", "dot", "mermaid", "graphml")


def _facts(options: Options, from_snapshot: str | None, refresh: bool) -> Facts:
    if from_snapshot:
        from kfin.api import inventory
        return Facts(inventory.load(from_snapshot))
    from kfin.api.discovery import discover
    from kfin.api.connection import Kube

    kube = Kube.connect(options.target())
    resources, failures = discover(kube, refresh)
    inv = Inventory(resources, [], list(failures), datetime.now(timezone.utc), kube.context, kube.server,
                    kube.namespace)
    return Facts(inv, kube, scanned=False)


# Above this many nodes even a terminal gets the plain tree: Rich lays out each line (~80 µs a node).
RICH_TREE_MAX = 2000


def _blocker(facts: Facts):
    from kfin.core.causes import blocker_line, explain_cached
    return lambda obj: blocker_line(explain_cached(obj, facts))


def _with_foreign_owners(objects: list, facts: Facts) -> list:
    """Add owners that live in another namespace: the garbage collector ignores such references
    (treats the owner as absent), and the graph should say why rather than call them dangling."""
    present = {o.uid for o in objects}
    wanted: dict[tuple[str, str], set[str]] = {}
    for obj in objects:
        for ref in obj.owner_references:
            if ref.get("uid") not in present:
                wanted.setdefault((ref.get("apiVersion", ""), ref.get("kind", "")), set()).add(ref.get("uid"))
    extra = []
    for (api_version, kind), uids in wanted.items():
        rtype = facts.type_of_kind(api_version, kind)
        if rtype is None or not rtype.namespaced:
            continue
        extra += [o for o in facts.objects(rtype.group, rtype.resource) or [] if o.uid in uids]
    return objects + extra


def parse_target(target: list[str]) -> tuple[str, str]:
    from kfin.names import check_kind, check_name

    if len(target) == 1 and "/" in target[0]:
        kind, _, name = target[0].partition("/")
    elif len(target) == 2:
        kind, name = target
    else:
        raise UsageError("kfin graph needs KIND NAME, KIND/NAME or namespace NAME")
    return check_kind(kind), check_name(name)


def with_blocking(graph, objects: list, facts: Facts):
    """The ownerReferences graph plus, for each Terminating object in it, its blocking chain."""
    from kfin.core import owners as g
    from kfin.core.blocking import follow

    from kfin.api.scan import NAMESPACES

    drawn = set(graph.nodes)
    for obj in objects:
        if obj.terminating and g.node_id(obj) in drawn:
            if (obj.type.group, obj.type.resource) == NAMESPACES:  # drawn from metadata: its cause needs it whole
                obj = facts.find("", "namespaces", "", obj.name, full=True) or obj
            g.add_blocking(graph, follow(obj, facts), facts.inventory.observed_at)
    return graph


def build_graph(options: Options, target: list[str], from_snapshot: str | None, refresh: bool,
                owners_only: bool = False):
    """(graph, title, the focused node or None, facts)."""
    from kfin.core import owners as g
    from kfin.api.builtin_kinds import builtin_resources
    from kfin.api.resources import Catalog

    kind, name = parse_target(target)
    facts = _facts(options, from_snapshot, refresh)
    rtype = Catalog(facts.inventory.resources + builtin_resources()).find(kind)
    cluster_wide = facts.cluster_scoped()
    if (rtype.group, rtype.resource) == ("", "namespaces"):
        content = facts.everything(name)
        if content is None or cluster_wide is None:
            raise UsageError(f"the snapshot does not cover namespace {name}")
        if not any(o.name == name for o in cluster_wide if o.type.resource == "namespaces" and o.type.group == ""):
            raise NotFoundError(f'namespaces "{name}" not found')
        objects = _with_foreign_owners(content + cluster_wide, facts)
        full = g.build(objects, facts.inventory.observed_at, facts.listed_kinds(), _blocker(facts))
        inside = {n for n, d in full.nodes(data=True) if d.get("namespace") == name}
        namespace_obj = next(o for o in cluster_wide if o.type.resource == "namespaces" and o.type.group == ""
                             and o.name == name)
        if namespace_obj.terminating and not owners_only:  # its own blocking links: content, APIServices
            inside.add(g.node_id(namespace_obj))
        keep = set(inside)
        for n in inside:
            keep |= g.nx.ancestors(full, n) | set(full.successors(n))
        drawn = full.subgraph(keep).copy()
        return (drawn if owners_only else with_blocking(drawn, objects, facts)), f"namespace {name}", None, facts
    namespace = (options.namespace or (facts.inventory.namespace if from_snapshot is None else None)
                 or "default") if rtype.namespaced else None
    scope = facts.everything(namespace) if namespace else facts.everything(None)
    if scope is None or cluster_wide is None:
        raise UsageError("the snapshot does not cover that object's namespace")
    objects = scope + (cluster_wide if namespace else [])
    match = [o for o in objects if o.type == rtype and o.name == name and (o.namespace or None) == namespace]
    if not match:
        where = f' in namespace "{namespace}"' if namespace else ""
        raise NotFoundError(f'{rtype.qualified} "{name}" not found{where}')
    objects = _with_foreign_owners(objects, facts)
    full = g.build(objects, facts.inventory.observed_at, facts.listed_kinds(), _blocker(facts))
    focus = g.node_id(match[0])
    drawn = g.lineage(full, focus)
    return (drawn if owners_only else with_blocking(drawn, objects, facts)), g.label(full, focus), focus, facts


def graph(options: Options, *, target: list[str], depth: int | None, kinds: list[str], only_stuck: bool,
          from_snapshot: str | None, refresh: bool, owners_only: bool = False) -> int:
    from kfin.core import owners as g
    from kfin.render import graph as rg
    from kfin.api.builtin_kinds import builtin_resources
    from kfin.names import check_kind
    from kfin.render.tables import console, markup_safe
    from kfin.api.resources import Catalog

    fmt = options.output or "tree"
    if fmt not in FORMATS:
        raise UsageError(f'--output "{fmt}" is not supported here (use one of: {", ".join(FORMATS)})')
    for text in kinds:
        check_kind(text)
    owners, title, focus, facts = build_graph(options, target, from_snapshot, refresh, owners_only)
    if kinds:
        catalog = Catalog(facts.inventory.resources + builtin_resources())
        kinds = {catalog.find(k).kind.lower() for k in kinds}
    owners = g.restrict(owners, set(kinds) if kinds else None, only_stuck)
    warn_failures(facts.inventory.failures)
    if fmt == "json":
        sys.stdout.write(rg.to_json(owners))
    elif fmt == "dot":
        sys.stdout.write(rg.to_dot(owners))
    elif fmt == "mermaid":
        sys.stdout.write(rg.to_mermaid(owners))
    elif fmt == "graphml":
        sys.stdout.write(rg.to_graphml(owners))
    else:
        out = console(piped_width=200)
        if sys.stdout.isatty() and owners.number_of_nodes() <= RICH_TREE_MAX:
            out.print(rg.tree(owners, depth, title))
        else:
            sys.stdout.write(rg.plain_tree(owners, depth, title))
        _print_chains(owners, focus, out)
        found = g.problems(owners)
        if found:
            out.print("\n[bold]Problems[/]")
            for problem in found:
                out.print(f"  [yellow]{markup_safe(problem.kind)}[/]: {markup_safe(problem.message)}",
                          highlight=False)
    return ExitCode.PARTIAL if facts.inventory.failures else ExitCode.OK


def _print_chains(owners, focus, out) -> None:
    from kfin.core import owners as g
    from kfin.render import graph as rg
    from kfin.render.tables import markup_safe

    chains = [(n, c) for n, c in rg.chains(owners) if focus is None or n == focus]
    for node, chain in chains:
        out.print(f"\n[bold]Before {markup_safe(g.label(owners, node))} can go[/], in order:")
        for number, dependent in enumerate(chain, 1):
            why = owners.nodes[dependent].get("blocker") or "not deleted yet"
            out.print(f"  {number}. {markup_safe(g.label(owners, dependent))}: {markup_safe(why)}")
