"""The blocking graph: from a stuck object, along what each cause waits on, down to the root causes;
and the ordered plan that removes them.

An edge X -> Y reads "X cannot go until Y is dealt with"; each carries its type (used-by-pod,
bound-claim, blocking-dependent, content, discovery-failure, controller, kubelet...), why, and, where
Y is a root cause, the least risky action that removes it. Y is an object, or an actor outside the
API (a controller that is gone, a node's kubelet, a cloud). Roots are what nothing further holds: a
Pod that still runs, an APIService without backend, an uninstalled operator. The plan takes the roots
deepest first, so that the controllers can then finish everything above them by themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msgspec import Struct, field

from kfin.core.explain.causes import Action, Verdict, blocker_line, explain_cached, main_finding
from kfin.core.explain.survival import Stuck, holds_next
from kfin.core.read.facts import ClusterFacts, Facts
from kfin.model import JSON, KubeObject

MAX_OBJECTS = 500  # a namespace with thousands of stuck objects: the plan stays readable, and says so


class Step(Struct):
    """One step of unblocking an object: its actions, the root cause it resolves, and why."""

    # what to do: a kfin remove or kubectl command, or an instruction for the operator; then its alternatives and
    # last resorts, each saying when (the causes' own words: kfin.core.explain.causes.registry.Action)
    actions: tuple[Action, ...]
    resolves: str  # the root cause it deals with
    why: str

    @property
    def cause(self) -> str:
        """The root cause it deals with, in a line: what it is and why it holds."""
        return self.why if self.why.startswith(self.resolves) else f"{self.resolves}: {self.why}"

    @property
    def by_kfin(self) -> bool:
        """A finalizer removal kfin can do; every other step is the operator's."""
        return (self.actions[0].command or "").startswith("kfin remove")

    def to_dict(self) -> JSON:
        return {
            **self.actions[0].to_dict(),
            "more": [action.to_dict() for action in self.actions[1:]],
            "resolves": self.resolves,
            "why": self.why,
            "type": "kfin" if self.by_kfin else "operator",
        }


class _Nodes(dict[str, dict[str, Any]]):
    """node -> attributes; called as graph.nodes(data=True) like networkx's node view."""

    def __call__(self, data: bool = False) -> Iterable[Any]:
        return self.items() if data else self.keys()


class Digraph:
    """The few operations of networkx.DiGraph a blocking chain uses, in insertion order like networkx:
    followed for every stuck object of a scan, it must not cost networkx's import (0.15 s) to a command
    that never draws a graph."""

    def __init__(self) -> None:
        self.nodes = _Nodes()
        self._out: dict[str, dict[str, JSON]] = {}
        self._in: dict[str, dict[str, JSON]] = {}

    def add_node(self, node: str, **data: Any) -> None:
        self.nodes.setdefault(node, {}).update(data)
        self._out.setdefault(node, {})
        self._in.setdefault(node, {})

    def add_edge(self, a: str, b: str, **data: Any) -> None:
        self.add_node(a)
        self.add_node(b)
        self._out[a].setdefault(b, {}).update(data)
        self._in[b][a] = self._out[a][b]

    def __contains__(self, node: object) -> bool:
        return node in self.nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def edges(self, data: bool = False) -> list[tuple[Any, ...]]:
        return [(a, b, d) if data else (a, b) for a, out in self._out.items() for b, d in out.items()]

    def out_edges(self, node: str, data: bool = False) -> list[tuple[Any, ...]]:
        return [(node, b, d) if data else (node, b) for b, d in self._out[node].items()]

    def in_edges(self, node: str, data: bool = False) -> list[tuple[Any, ...]]:
        return [(a, node, d) if data else (a, node) for a, d in self._in[node].items()]

    def out_degree(self, node: str) -> int:
        return len(self._out[node])

    def distances(self, start: str) -> dict[str, int]:
        """Every node reachable from `start` (itself included) and its distance (breadth first)."""
        depth, frontier = {start: 0}, [start]
        while frontier:
            following = []
            for node in frontier:
                for child in self._out[node]:
                    if child not in depth:
                        depth[child] = depth[node] + 1
                        following.append(child)
            frontier = following
        return depth


class Chain(Struct):
    """What blocks an object, followed to its root causes in the blocking graph, with the steps that unblock it."""

    graph: Digraph
    start: str
    roots: list[str]
    steps: list[Step] = field(default_factory=list)
    afterwards: list[str] = field(default_factory=list)
    truncated: bool = False
    depth: dict[str, int] = field(default_factory=dict)  # node -> distance from the start

    def label(self, node: str) -> str:
        label: str = self.graph.nodes[node]["label"]
        return label

    def root_causes(self) -> list[JSON]:
        """`rootCauses[]` of kfin stuck's report."""
        out = []
        for root in self.roots:
            data = self.graph.nodes[root]
            into = [d for _, _, d in self.graph.in_edges(root, data=True)]
            out.append(
                {
                    "type": into[0]["type"] if into else "waiting",
                    "object": None if data.get("actor") else data["label"],
                    "actor": data["label"] if data.get("actor") else None,
                    "evidence": into[0]["why"] if into else data.get("line"),
                    "verdict": into[0]["verdict"] if into else data.get("verdict"),
                }
            )
        return out

    def to_dict(self) -> JSON:
        """`chain` and `plan` of kfin explain's report."""
        edges = [
            {
                "from": self.label(a),
                "to": self.label(b),
                "type": d["type"],
                "why": d["why"],
                "verdict": d["verdict"],
                "finalizer": d["finalizer"] or None,
            }
            for a, b, d in self.graph.edges(data=True)
        ]
        return {
            "chain": {"edges": edges, "rootCauses": self.root_causes(), "truncated": self.truncated},
            "plan": {"steps": [s.to_dict() for s in self.steps], "afterwards": self.afterwards},
        }


def node_id(obj: KubeObject) -> str:
    """An object's node in every graph kfin draws (blocking chains and owner graphs alike): its uid, or
    where it has none (a snapshot may omit it) its type, namespace and name."""
    return obj.uid or f"{obj.type.qualified}/{obj.namespace}/{obj.name}"


def follow(obj: KubeObject, facts: ClusterFacts, ahead: bool = False) -> Chain:
    """The blocking graph below `obj`, its root causes and the plan; `ahead`: also what will hold a Terminating
    namespace next, once what holds it now is dealt with (explain's question; a scan does not ask it)."""
    graph = Digraph()
    start = node_id(obj)
    queue, seen, truncated = [obj], {start}, False
    while queue:
        current = queue.pop(0)
        here = node_id(current)
        explanation = explain_cached(current, facts)
        verdicts = {f.verdict.value for f in explanation.findings}
        main = main_finding(explanation)
        graph.add_node(
            here,
            label=current.ref,
            stuck=current.terminating,
            object=current,
            line=blocker_line(explanation) if current.terminating else "not being deleted",
            verdict=next(iter(sorted(verdicts)), None),
            # what to do where nothing deeper says it: waiting is the answer only where progress is expected
            fix=main.fix if main is not None and main.verdict != Verdict.WAITING else None,
        )
        for finding in explanation.findings:
            for link in finding.links:
                if link.target is not None:
                    there = node_id(link.target)
                    if there not in graph:
                        graph.add_node(
                            there,
                            label=link.target.ref,
                            stuck=link.target.terminating,
                            object=link.target,
                            line="not being deleted",
                            verdict=None,
                        )
                    if link.target.terminating and there not in seen:
                        if len(seen) >= MAX_OBJECTS:
                            truncated = True
                        else:
                            seen.add(there)
                            queue.append(link.target)
                else:
                    there = f"actor:{link.actor}"
                    graph.add_node(there, label=link.actor, actor=True, stuck=False, line=link.why, verdict=None)
                graph.add_edge(
                    here,
                    there,
                    type=link.kind,
                    why=link.why,
                    step=link.step,
                    fallback=link.fallback,
                    verdict=finding.verdict.value,
                    finalizer=finding.finalizer,
                )
    depth = graph.distances(start)
    reachable = set(depth)
    roots = [n for n in reachable if graph.out_degree(n) == 0]
    roots.sort(key=lambda n: (-depth.get(n, 0), graph.nodes[n]["label"]))
    chain = Chain(graph, start, roots, truncated=truncated, depth=depth)
    chain.steps = _steps(chain)
    # what will hold a namespace next: explain's question, not every scan's
    later = holds_next(facts, obj) if ahead and _terminating_namespace(obj) and isinstance(facts, Facts) else []
    chain.afterwards = _afterwards(chain, reachable, facts, later)
    chain.steps += _next_steps(chain, later)
    return chain


def _terminating_namespace(obj: KubeObject) -> bool:
    return (obj.type.group, obj.type.resource) == ("", "namespaces") and obj.terminating


def root_summary(chain: Chain) -> str | None:
    """The root cause in a few words, when it lies deeper than what holds the object directly."""
    deep = [r for r in chain.roots if chain.depth.get(r, 0) >= 2]
    if not deep:
        return None
    more = len(chain.roots) - 1
    return f"root cause: {chain.label(deep[0])}" + (f" (+{more} more)" if more else "")


def _steps(chain: Chain) -> list[Step]:
    graph, steps, done = chain.graph, [], set()
    for root in chain.roots:
        into = [d for _, _, d in graph.in_edges(root, data=True)]
        actions: tuple[Action, ...] = next((d["step"] for d in into if d.get("step")), ())
        if actions:  # every object's last resort, not only the first one's
            actions += tuple(dict.fromkeys(d["fallback"] for d in into if d.get("fallback")))
        data = graph.nodes[root]
        if not actions:
            if root == chain.start and not data["stuck"]:
                continue
            if data.get("fix") and data["stuck"]:
                actions = (Action(None, note=data["fix"]),)
            elif data["stuck"] or data.get("actor"):
                actions = (Action(None, note=f"wait: {data['line']}"),)
            else:
                actions = (Action(None, note=f"deal with {data['label']}"),)
        if actions in done:
            continue
        done.add(actions)
        why = into[0]["why"] if into else data["line"]
        steps.append(Step(actions, data["label"], why))
    return steps


def _afterwards(chain: Chain, reachable: set[str], facts: ClusterFacts, later: list[Stuck]) -> list[str]:
    """What the controllers then do by themselves: every stuck object above the roots, deepest first; for the
    namespace explained, what will hold it `later`."""
    graph, depth, out = chain.graph, chain.depth, []
    above = [n for n in reachable if n not in chain.roots and graph.nodes[n].get("stuck")]
    for node in sorted(above, key=lambda n: (-depth.get(n, 0), graph.nodes[n]["label"])):
        obj: KubeObject = graph.nodes[node]["object"]
        text = f"{obj.ref} goes by itself"
        if obj.type.resource == "persistentvolumeclaims":
            text += ": its volume is released"
        elif obj.type.resource == "persistentvolumes":
            full = facts.find("", "persistentvolumes", "", obj.name, full=True) or obj
            policy = (full.raw.get("spec") or {}).get("persistentVolumeReclaimPolicy")
            if policy == "Delete":
                text += ": reclaim policy Delete, so its disk is deleted with it, data included"
            elif policy:
                text += f": reclaim policy {policy}, so the disk and its data stay, to be cleaned up by hand"
        elif obj.type.resource == "namespaces":
            text += ": the namespace controller deletes the rest of its content, then the namespace"
            if later and node == chain.start:
                text = (
                    f"the namespace controller deletes the rest of {obj.ref}'s content, its Pods first; then "
                    + "; ".join(
                        f"{s.obj.ref} ({s.finalizer or 'its deletion'}) would hold it: {s.reason}" for s in later
                    )
                )
        out.append(text)
    return out


def _next_steps(chain: Chain, later: list[Stuck]) -> list[Step]:
    """What to do, before it holds, about what will hold a Terminating namespace once its current blockers are
    dealt with (kfin.core.explain.survival.holds_next), after the steps for what holds it now."""
    steps, done = [], {s.actions for s in chain.steps}
    for stuck in later:
        actions = stuck.actions or (Action(None, note=f"deal with {stuck.obj.ref}"),)
        if actions not in done:
            done.add(actions)
            steps.append(Step(actions, stuck.obj.ref, f"next, it would hold the namespace: {stuck.reason}"))
    return steps


def joined(chains: Iterable[Chain]) -> Chain:
    """The blocking chains of several stuck objects of one cluster as one graph: each root cause once, with the
    step that frees it (made from every link into it, so every object's last resort is named), for a scan's
    root causes (kfin.core.explain.roots)."""
    graph, roots, depth = Digraph(), [], {}  # type: tuple[Digraph, list[str], dict[str, int]]
    known: set[str] = set()
    for chain in chains:
        for node, data in chain.graph.nodes(data=True):
            graph.add_node(node, **data)
        for a, b, data in chain.graph.edges(data=True):
            graph.add_edge(a, b, **data)
        roots += [r for r in chain.roots if r not in known]
        known.update(chain.roots)  # a set beside the list: a scan can have as many roots as objects
        for node, distance in chain.depth.items():
            depth[node] = max(depth.get(node, 0), distance)
    chain = Chain(graph, "", roots, depth=depth)
    chain.steps = _steps(chain)
    return chain
