"""What `kfin report` puts on one page: every stuck object of a scope, its explanation, its blocking chain
and plan, and the blocking graph of them all. The same answers as stuck, explain and graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Struct

from kfin.core.explain.causes import Explanation, explain_cached
from kfin.core.explain.fleet import find_all_contexts
from kfin.core.explain.owners import add_blocking
from kfin.core.explain.roots import RootCause, root_causes
from kfin.core.explain.stuck import StuckObject
from kfin.core.explain.subject_graph import verdict_of
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.model import Inventory

if TYPE_CHECKING:
    import networkx as nx


class ReportEntry(Struct):
    row: StuckObject  # its chain is row.chain
    explanation: Explanation


class Report(Struct):
    entries: list[ReportEntry]
    graph: nx.DiGraph  # the blocking chains of every stuck object, joined
    inventories: list[Inventory]
    roots: list[RootCause]  # each once, with the stuck objects it holds and the step that frees them


def build(scope: Scope) -> Report:
    import networkx as nx  # 0.15 s to import: only for the commands that draw graphs

    rows, sources = find_all_contexts(scope)
    facts_of: dict[str, Facts] = {f.inventory.context: f for f in sources}
    graph = nx.DiGraph()
    entries = []
    for row in rows:  # each row's chain was followed by the scan: drawn here, not followed again
        facts = facts_of.get(row.context, sources[0])
        if row.chain is not None:
            add_blocking(graph, row.chain, facts.inventory.observed_at, verdict_of(facts))
        entries.append(ReportEntry(row, explain_cached(row.obj, facts)))
    return Report(entries, graph, [f.inventory for f in sources], root_causes(rows))
