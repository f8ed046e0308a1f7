"""Renderings of an owner graph: the tree screen (with chains and problems), and exports (JSON node-link,
DOT, Mermaid, GraphML)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from msgspec import Struct
from msgspec.structs import asdict

from kfin.core.explain.owners import blocking_chain, label, labels, problems, roots
from kfin.errors import UsageError
from kfin.model import JSON
from kfin.render.explanation import VERDICT_STYLE, verdict_colour
from kfin.render.layout import hanging, spans
from kfin.render.terminal import Console, markup_safe
from kfin.util.durations import format_age
from kfin.util.text import one_line, printable

if TYPE_CHECKING:
    import networkx as nx
    from rich.console import Console as RichConsole
    from rich.tree import Tree

# Above this many nodes even a terminal gets the plain tree: Rich lays out each line (~80 µs a node).
RICH_TREE_MAX = 2000


def _state(data: JSON) -> list[tuple[str, str]]:
    """(style, text) pieces after a node's label: missing, Terminating for how long, its finalizers."""
    parts = []
    if data.get("missing"):
        parts.append(("red", "missing"))
    if data.get("terminating"):
        age = data.get("terminatingSeconds")
        parts.append(("bold red", "Terminating" + (f" for {format_age(age)}" if age is not None else "")))
    if data.get("finalizers"):
        parts.append(("", "finalizers: " + ", ".join(data["finalizers"])))
    return parts


def walk(graph: nx.DiGraph, depth: int | None = None) -> list[tuple[int, bool, list[tuple[str, str]]]]:
    """The owner tree as lines: (level, last among its siblings, [(style, text)]), roots at level 1; a node
    under several owners is drawn once and referred to after. Iterative: an owner chain may be deep."""
    lines = []
    drawn: set[str] = set()
    named, succ, nodes = labels(graph), dict(graph.adjacency()), dict(graph.nodes(data=True))
    stack = [(root, None, 1, last) for root, last in _with_last(roots(graph, named))][::-1]
    while stack:
        node, edge, level, last = stack.pop()
        pieces = []
        if edge and edge.get("holder"):
            pieces.append(("yellow", f"{edge['holder']} ({edge['why']}) "))
        elif edge and edge.get("blocking"):
            words = waiting_words(edge)
            pieces.append(("bold red", f"⛔ {words[0]} " + "".join(f"({w}) " for w in words[1:])))
        elif edge and edge.get("problem"):
            pieces.append(("yellow", f"{edge['problem']} "))
        elif edge and edge.get("binds"):
            pieces.append(("dim", "bound to "))
        pieces.append(("", named[node]))
        for style, text in _state(nodes[node]):
            pieces += [("", "  "), (style, text)]
        if node in drawn:
            lines.append((level, last, pieces + [("dim", " (shown above)")]))
            continue
        drawn.add(node)
        lines.append((level, last, pieces))
        children = succ[node]
        if depth is not None and level >= depth:
            if children:
                lines.append((level + 1, True, [("dim", f"… {len(children)} more below (--depth)")]))
            continue
        if children:
            ordered = sorted(children.items(), key=lambda item: named[item[0]])
            stack += [(child, data, level + 1, last) for (child, data), last in _with_last(ordered)][::-1]
    return lines


def _with_last(items: Iterable[Any]) -> list[tuple[Any, bool]]:
    items = list(items)
    return [(item, at == len(items) - 1) for at, item in enumerate(items)]


def tree(graph: nx.DiGraph, depth: int | None = None, title: str = "") -> Tree:
    """A rich Tree of walk()'s lines (on a terminal: colours, and the terminal's width)."""
    from rich.tree import Tree

    top = Tree(markup_safe(title) if title else "owner graph", guide_style="dim")
    parents = [top]
    for level, _, pieces in walk(graph, depth):
        text = "".join(f"[{style}]{markup_safe(t)}[/]" if style else markup_safe(t) for style, t in pieces)
        del parents[level:]
        parents.append(parents[level - 1].add(text))
    return top


def plain_tree(graph: nx.DiGraph, depth: int | None = None, title: str = "") -> str:
    """The same tree as plain text with the same guides, built by joining strings: what a pipe or a large
    graph gets (Rich lays out each line as a renderable, about 80 µs a node; this about 3)."""
    out = [printable(title, one_line=True) if title else "owner graph"]
    open_levels: list[bool] = []  # per level above: whether a later sibling is still to come
    for level, last, pieces in walk(graph, depth):
        del open_levels[level - 1 :]
        guides = "".join("│   " if more else "    " for more in open_levels)
        out.append(guides + ("└── " if last else "├── ") + printable("".join(t for _, t in pieces), one_line=True))
        open_levels.append(not last)
    return "\n".join(out) + "\n"


def chains(graph: nx.DiGraph) -> list[tuple[str, list[str]]]:
    """For each Terminating object that waits on blocking dependents: the ordered list that must go first."""
    out = []
    terminating = [n for n, data in graph.nodes(data=True) if data.get("terminating")]
    for node in sorted(terminating, key=lambda n: label(graph, n)):  # sort the few, not the whole graph
        chain = blocking_chain(graph, node)
        if chain:
            out.append((node, chain))
    return out


def _scalar_graph(graph: nx.DiGraph) -> nx.DiGraph:
    """GraphML holds scalars only: lists become comma-separated text, None an empty string."""
    import networkx as nx  # 0.15 s to import: only for the commands that draw graphs

    flat = nx.DiGraph()
    for node, data in graph.nodes(data=True):
        flat.add_node(
            _xml_safe(node),
            **{k: _xml_safe(",".join(v) if isinstance(v, list) else "" if v is None else v) for k, v in data.items()},
        )
    for a, b, data in graph.edges(data=True):
        flat.add_edge(_xml_safe(a), _xml_safe(b), **{k: _xml_safe("" if v is None else v) for k, v in data.items()})
    return flat


def to_json(graph: nx.DiGraph) -> str:
    """networkx's node-link document (directed, multigraph, graph, nodes, edges), with problems and
    chains, one node or edge per line. Elements are encoded as they are, their id (or source and target)
    spliced in front, instead of copying every attribute dict first (networkx.node_link_data), and by
    json's compact encoder, which is C, where its indenting one is Python (about 40 µs a node)."""
    encode = json.JSONEncoder(default=str, separators=(", ", ": ")).encode

    def spliced(head: str, attributes: JSON) -> str:
        rest = encode(attributes)
        return "    {" + head + (", " + rest[1:] if len(rest) > 2 else "}")

    nodes = [spliced(f'"id": {encode(n)}', d) for n, d in graph.nodes(data=True)]
    edges = [
        spliced(f'"source": {encode(a)}, "target": {encode(b)}', d)
        for a, children in graph.adjacency()
        for b, d in children.items()
    ]
    extra = {
        "problems": [asdict(p) for p in problems(graph)],
        "chains": [{"object": node, "mustGoFirst": chain} for node, chain in chains(graph)],
    }
    members = ['  "directed": true', '  "multigraph": false', f'  "graph": {encode(graph.graph)}']
    for key, lines in (("nodes", nodes), ("edges", edges)) + tuple(
        (k, ["    " + encode(v) for v in values]) for k, values in extra.items()
    ):
        members.append(f'  "{key}": [\n' + ",\n".join(lines) + "\n  ]" if lines else f'  "{key}": []')
    return "{\n" + ",\n".join(members) + "\n}\n"


def to_graphml(graph: nx.DiGraph) -> str:
    import networkx as nx  # 0.15 s to import: only for the commands that draw graphs

    return "\n".join(nx.generate_graphml(_scalar_graph(graph))) + "\n"


def _xml_safe(value: Any) -> Any:
    """Cluster text fit for XML 1.0 (which has no way to write most control characters) and for a terminal
    that shows the file: control characters as \\xNN, like every other output."""
    return printable(value, one_line=True) if isinstance(value, str) else value


def dot_quote(*lines: str) -> str:
    """A DOT string of one or more lines: each escaped, joined by DOT's line break (never a literal `\\n`)."""
    return '"' + "\\n".join(printable(t, one_line=True).replace("\\", "\\\\").replace('"', '\\"') for t in lines) + '"'


def root_causes(graph: nx.DiGraph) -> set[str]:
    """Where blocking chains end: a node something waits for that waits for nothing itself."""
    into = {b for _, b, d in graph.edges(data=True) if d.get("blocking")}
    waits = {a for a, _, d in graph.edges(data=True) if d.get("blocking")}
    return into - waits


class RootLook(Struct, frozen=True):
    """How a kind of root cause is drawn: what it is (the node's last line says it), a shape, a fill."""

    name: str
    shape: str  # Graphviz's
    drawn: str  # the shape, in the legend's words
    fill: str
    mermaid: tuple[str, str]  # Mermaid's node brackets: its shape
    dashed: bool = False  # drawn like a missing owner: not there


# Root causes by what they are, each drawn its own way: a Pod that runs and mounts a claim is not a dead node.
ROOT_LOOKS = {
    "node-down": RootLook("node down", "box3d", "3-D box", "#f4cccc", ("[[", "]]")),
    "api-unavailable": RootLook("API unavailable", "component", "component", "#fce5cd", ("{{", "}}")),
    "controller-absent": RootLook("controller absent", "box", "dashed box", "#e6d0ec", ("[/", "/]"), dashed=True),
    "controller": RootLook("controller should act", "cds", "arrow", "#fff2cc", ("[\\", "/]")),
    "cloud": RootLook("cloud", "tab", "tab", "#cfe2f3", (">", "]")),
    "pod-in-use": RootLook("Pod in use", "note", "folded corner", "#d9ead3", ("([", "])")),
    "rejected": RootLook("write rejected", "hexagon", "hexagon", "#f9cb9c", ("[/", "\\]")),
    "gone": RootLook("gone", "box", "grey box", "#d9d9d9", ("[(", ")]")),
    "other": RootLook("root cause", "box", "box", "#eeeeee", ("[", "]")),
}
ROOT_KIND_OF_LINK = {
    # a lost node's (kfin.core.explain.causes.pods.kubelet_alive): a live one's is a controller link
    "kubelet": "node-down",
    "discovery-failure": "api-unavailable",
    "conversion-failure": "api-unavailable",
    "cloud": "cloud",
    "used-by-pod": "pod-in-use",
    "reserved-for": "pod-in-use",
    "member-pod": "pod-in-use",
    "webhook": "rejected",
    "admission-policy": "rejected",
    "forbidden": "rejected",
    "ghost": "gone",
    "unreadable-storage": "gone",
}


def root_kind(graph: nx.DiGraph, node: str) -> str:
    """What a root cause is (a key of ROOT_LOOKS), from the links into it: their type, and for a controller
    whether the finding proved it absent (ORPHANED) or only waits for it."""
    into = [d for _, _, d in graph.in_edges(node, data=True) if d.get("blocking")]
    for data in into:
        cause = data.get("cause")
        if cause == "kubelet" and graph.nodes[node].get("kind") not in ("Node", "Actor"):
            continue
        if cause in ROOT_KIND_OF_LINK:
            if ROOT_KIND_OF_LINK[cause] == "pod-in-use" and graph.nodes[node].get("kind") != "Pod":
                continue
            return ROOT_KIND_OF_LINK[cause]
        if cause == "controller":
            return "controller-absent" if data.get("verdict") in ("ORPHANED", "STALLED") else "controller"
    return "other"


def root_line(kind: str) -> str:
    look = ROOT_LOOKS[kind]
    return "root cause" if kind == "other" else f"root cause: {look.name}"


def heading(what: str, context: str | None, observed: datetime | None) -> JSON:
    """The graph's title (graph.graph): what is drawn, from which kube context, as of when."""
    return {
        "title": what,
        "context": context or None,
        "observedAt": observed.strftime("%Y-%m-%dT%H:%M:%SZ") if observed else None,
    }


def title_line(graph: nx.DiGraph) -> str | None:
    """`namespace shop, context prod-eu, observed 2026-11-23 02:05:01 UTC`: what a picture is of."""
    return title_of(graph.graph)


def title_of(info: JSON) -> str | None:
    """title_line of a heading() without a graph (kfin preflight's teardown draws its own DOT)."""
    if not info.get("title"):
        return None
    parts = [info["title"]]
    if info.get("context"):
        parts.append(f"context {info['context']}")
    if info.get("observedAt"):
        parts.append("observed " + info["observedAt"].replace("T", " ").replace("Z", " UTC"))
    return printable(", ".join(parts), one_line=True)


def state_line(data: JSON) -> str | None:
    """`HOLDING, Terminating for 3d`: a Terminating object's verdict and how long it has been deleted."""
    if not data.get("terminating"):
        return None
    age = data.get("terminatingSeconds")
    state = "Terminating" + (f" for {format_age(age)}" if age is not None else "")
    return f"{data['verdict']}, {state}" if data.get("verdict") else state


def tint(colour: str, share: float = 0.15) -> str:
    """`colour` mixed into white: a fill that keeps black text readable."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(255 - (255 - c) * share):02x}" for c in rgb)


def _edge_kind(data: JSON) -> str:
    if data.get("blocking"):
        return "blocking"
    for kind in ("holder", "binds", "problem"):
        if data.get(kind):
            return kind
    return "owns"


WAITS_FOR = "waits for"  # a blocking edge A -> B, in every picture and the tree: A waits for B, as the legend says


def waiting_words(data: JSON) -> list[str]:
    """A blocking edge's label, read from its source to its target: `waits for`, then its link's type when it has
    one (`kubelet`), a line of its own (Mermaid's link text takes no parentheses)."""
    cause = data.get("cause")
    return [WAITS_FOR] if cause in (None, "blocking-dependent") else [WAITS_FOR, str(cause)]


def _edge_text(data: JSON) -> list[str]:
    kind = _edge_kind(data)
    if kind == "blocking":
        return waiting_words(data)
    text = {"holder": data.get("holder"), "binds": "bound to", "problem": data.get("problem")}.get(kind)
    return [text] if text else []


FONT = 'fontname="Helvetica"'
LEGEND_EDGES = {  # kind of edge: (attributes of its sample line in the legend, what it reads)
    "owns": ('BORDER="1" COLOR="black"', "owns"),
    "blocking": ('BORDER="2" COLOR="red"', WAITS_FOR),
    "holder": ('BORDER="1" STYLE="dotted"', "cleans up / requires"),
    "binds": ('BORDER="1" COLOR="gray40" STYLE="dashed"', "bound to"),
    "problem": ('BORDER="1" COLOR="orange" STYLE="dashed"', "owner problem"),
}


def _legend(graph: nx.DiGraph, roots: dict[str, str]) -> list[str]:
    """The legend: one small table of what the graph shows, nothing else."""
    edges = {_edge_kind(d) for _, _, d in graph.edges(data=True)}
    rows = [edge_row(sample, meaning) for kind, (sample, meaning) in LEGEND_EDGES.items() if kind in edges]
    shown = {d.get("verdict") or "?" for _, d in graph.nodes(data=True) if d.get("terminating")}
    rows += verdict_rows(shown, "Terminating,<BR/>by verdict")
    for kind in [k for k in ROOT_LOOKS if k in roots.values()]:
        look = ROOT_LOOKS[kind]
        dashed = ' STYLE="dashed"' if look.dashed else ""
        rows.append(
            f'<TR><TD BORDER="2" BGCOLOR="{look.fill}"{dashed}></TD><TD ALIGN="LEFT">{root_line(kind)}</TD></TR>'
        )
    if any(d.get("missing") for _, d in graph.nodes(data=True)):
        rows.append('<TR><TD BORDER="1" STYLE="dashed"></TD><TD ALIGN="LEFT">missing</TD></TR>')
    return legend_block(rows)


def edge_row(sample: str, meaning: str) -> str:
    """A legend row: a sample line (LEGEND_EDGES' attributes), what it reads."""
    return f'<TR><TD SIDES="B" {sample} WIDTH="30"></TD><TD ALIGN="LEFT">{meaning}</TD></TR>'


def verdict_rows(shown: set[str], meaning: str) -> list[str]:
    """Legend rows of the verdicts shown ("?": none), in VERDICT_STYLE's order, in their colours."""
    verdicts = [v for v in VERDICT_STYLE if v in shown] + (["?"] if "?" in shown else [])
    rows = []
    for at, verdict in enumerate(verdicts):
        colour = verdict_colour(None if verdict == "?" else verdict)
        cell = f'<TD ROWSPAN="{len(verdicts)}" ALIGN="LEFT" BALIGN="LEFT">{meaning}</TD>'
        rows.append(
            f'<TR><TD BORDER="2" COLOR="{colour}" BGCOLOR="{tint(colour)}" STYLE="rounded">{verdict}</TD>'
            f"{cell if at == 0 else ''}</TR>"
        )
    return rows


def legend_block(rows: list[str]) -> list[str]:
    """The legend's DOT: a small table headed `legend`, in an invisible cluster declared first."""
    table = (
        '<TABLE BORDER="1" COLOR="gray" CELLBORDER="0" CELLSPACING="2" CELLPADDING="2">'
        '<TR><TD COLSPAN="2" ALIGN="LEFT"><B>legend</B></TD></TR>' + "".join(rows)
    )
    return [
        "  subgraph cluster_legend {",  # declared first: Graphviz draws it below the graph (its last rank order)
        '    style="invis"; label="";',
        f"    legend [shape=plaintext, {FONT}, fontsize=11, label=<{table}</TABLE>>];",
        "  }",
    ]


LABEL_WIDTH = 30  # characters: a long name is broken after a `/` or `,` (kind / namespace/name), as tables do


def label_lines(line: str) -> list[str]:
    """A node label's line broken to LABEL_WIDTH, after a `/` or `,` where it can."""
    return [line[a:b] for a, b in spans(line, LABEL_WIDTH)]


def _node_dot(graph: nx.DiGraph, node: str, data: JSON, roots: dict[str, str]) -> str:
    text = label_lines(label(graph, node)) + (
        label_lines(", ".join(data["finalizers"])) if data.get("finalizers") else []
    )
    state = state_line(data)
    style = ["rounded"]
    attrs = []
    if state:
        text.append(state)
        colour = verdict_colour(data.get("verdict"))
        style.append("filled")
        attrs += [f'color="{colour}"', f'fillcolor="{tint(colour)}"', "penwidth=2"]
    if node in roots:
        look = ROOT_LOOKS[roots[node]]
        text.append(root_line(roots[node]))
        style = ["filled", "bold"] + (["dashed"] if look.dashed else [])
        attrs = [a for a in attrs if not a.startswith("fillcolor")]
        attrs += [f"shape={look.shape}", f'fillcolor="{look.fill}"', "peripheries=2"]
    if data.get("missing"):
        style.append("dashed")
    attrs.append(f'style="{",".join(style)}"')
    return f"  {dot_quote(node)} [label={dot_quote(*text)}, {', '.join(attrs)}];"


def to_dot(graph: nx.DiGraph) -> str:
    """Graphviz's DOT: a title (what, which context, when), each stuck object coloured by its verdict with its
    age, each root cause drawn as what it is, and a small legend of what appears."""
    roots = {node: root_kind(graph, node) for node in root_causes(graph)}
    title = title_line(graph)
    lines = [
        "digraph owners {",
        "  rankdir=LR; ranksep=0.3;",
        *([f'  labelloc="t"; fontsize=14; {FONT}; label={dot_quote(title)};'] if title else []),
        f"  node [shape=box, {FONT}, fontsize=11];",
        f"  edge [{FONT}, fontsize=11];",
        *(_legend(graph, roots) if graph.number_of_nodes() else []),
    ]
    for node, data in sorted(graph.nodes(data=True)):
        lines.append(_node_dot(graph, node, data, roots))
    for a, b, data in sorted(graph.edges(data=True)):
        kind, words = _edge_kind(data), _edge_text(data)
        attrs = {
            "blocking": ['color="red"', "penwidth=2"],
            "holder": ['style="dotted"'],
            "binds": ['style="dashed"', 'color="gray40"'],
            "problem": ['style="dashed"', 'color="orange"'],
            "owns": [],
        }[kind] + ([f"label={dot_quote(*words)}"] if words else [])
        lines.append(f"  {dot_quote(a)} -> {dot_quote(b)}{' [' + ', '.join(attrs) + ']' if attrs else ''};")
    lines.append("}")
    return "\n".join(lines) + "\n"


# Mermaid's defaults (mermaid.js.org/config/schema-docs/config.html): beyond them renderers refuse the diagram.
MERMAID_MAX_TEXT, MERMAID_MAX_EDGES = 50_000, 500


def mermaid_too_large(text: str, graph: nx.DiGraph) -> str | None:
    """Why renderers with Mermaid's default limits will refuse this diagram, or None."""
    edges = graph.number_of_edges()
    if len(text) <= MERMAID_MAX_TEXT and edges <= MERMAID_MAX_EDGES:
        return None
    return (
        f"the Mermaid diagram has {len(text)} characters and {edges} edges: renderers with Mermaid's default limits "
        f"({MERMAID_MAX_TEXT} characters, {MERMAID_MAX_EDGES} edges) refuse it; narrow it (--only-stuck, --kind, "
        "--depth) or use -o dot"
    )


def _mermaid_text(*lines: str) -> str:
    return "<br/>".join(printable(t, one_line=True).replace('"', "#quot;") for t in lines)


def to_mermaid(graph: nx.DiGraph) -> str:
    """Mermaid: the same marks as the DOT (title, verdict colours and ages, root causes by what they are)."""
    ids = {node: f"n{i}" for i, node in enumerate(sorted(graph.nodes))}
    roots = {node: root_kind(graph, node) for node in root_causes(graph)}
    title = title_line(graph)
    lines = [f"---\ntitle: {json.dumps(title)}\n---"] if title else []
    lines += [
        "graph LR",
        "  %% A --> B: A owns B. A ==> B (red): A is Terminating and waits for B. A stuck object is coloured by its",
        "  %% verdict; a root cause is drawn by what it is (its last line says it). A -.-> B: what an operator's",
        "  %% finalizer on A cleans up or requires, or the volume a claim is bound to.",
    ]
    classes: dict[str, list[str]] = {}
    for node in sorted(graph.nodes):
        data = graph.nodes[node]
        text = [label(graph, node)] + ([", ".join(data["finalizers"])] if data.get("finalizers") else [])
        state = state_line(data)
        if state:
            text.append(state)
            classes.setdefault(f"verdict_{data.get('verdict') or 'none'}", []).append(ids[node])
        opening, closing = "[", "]"
        if node in roots:
            text.append(root_line(roots[node]))
            opening, closing = ROOT_LOOKS[roots[node]].mermaid
            classes.setdefault(f"root_{roots[node].replace('-', '_')}", []).append(ids[node])
        if data.get("missing"):
            classes.setdefault("missing", []).append(ids[node])
        lines.append(f'  {ids[node]}{opening}"{_mermaid_text(*text)}"{closing}')
    waiting = []  # Mermaid numbers edges as they are declared: linkStyle draws these red, as the DOT does
    for number, (a, b, data) in enumerate(sorted(graph.edges(data=True))):
        kind, words = _edge_kind(data), _edge_text(data)
        arrow = {"blocking": "==>", "owns": "-->"}.get(kind, "-.->")
        shown = f"|{_mermaid_text(*words)}|" if words else ""
        lines.append(f"  {ids[a]} {arrow}{shown} {ids[b]}")
        if kind == "blocking":
            waiting.append(str(number))
    if waiting:
        lines.append(f"  linkStyle {','.join(waiting)} stroke:#f00,stroke-width:2px;")
    for name in sorted(classes):
        if name.startswith("verdict_"):
            colour = verdict_colour(None if name == "verdict_none" else name.removeprefix("verdict_"))
            lines.append(f"  classDef {name} fill:{tint(colour)},stroke:{colour},stroke-width:2px;")
        elif name.startswith("root_"):
            look = ROOT_LOOKS[name.removeprefix("root_").replace("_", "-")]
            dashed = ",stroke-dasharray: 5 5" if look.dashed else ""
            lines.append(f"  classDef {name} fill:{look.fill},stroke:#333,stroke-width:4px{dashed};")
        else:
            lines.append("  classDef missing stroke-dasharray: 5 5;")
        lines.append(f"  class {','.join(classes[name])} {name};")
    return "\n".join(lines) + "\n"


PICTURES = ("svg", "png")
DOT_TIMEOUT_SECONDS = 120  # Graphviz lays out thousands of nodes in seconds; beyond, something is wrong


def picture(graph: nx.DiGraph, fmt: str) -> bytes:
    """The graph drawn by Graphviz's `dot` (its DOT, legend included) as SVG or PNG."""
    return draw(to_dot(graph), fmt)


def check_picture(fmt: str, example: str, terminal: bool) -> str:
    """Graphviz's `dot` for a picture of `fmt`, and a place to write it (never a PNG to a terminal: `example` says
    how; `terminal`: whether stdout is one): asked before a command reads anything, so that it fails at once rather
    than after the scan."""
    if fmt == "png" and terminal:
        raise UsageError(f"-o png writes an image: redirect it to a file ({example})")
    dot = shutil.which("dot")
    if dot is None:
        raise UsageError(
            f"-o {fmt} draws with Graphviz's dot, which is not installed (Debian and Ubuntu: apt install graphviz; "
            "Fedora: dnf install graphviz; macOS: brew install graphviz); -o dot writes what it would draw"
        )
    return dot


def draw(text: str, fmt: str, example: str = "kfin ... -o png > picture.png", terminal: bool = False) -> bytes:
    """DOT drawn by Graphviz's `dot` as SVG or PNG; without it, one error naming the package."""
    dot = check_picture(fmt, example, terminal)
    try:
        done = subprocess.run([dot, f"-T{fmt}"], input=text.encode(), capture_output=True, timeout=DOT_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise UsageError(f"Graphviz's dot did not finish within {DOT_TIMEOUT_SECONDS} s: narrow the graph") from None
    if done.returncode != 0:
        said = one_line(done.stderr.decode(errors="replace"))[:300]
        raise UsageError(f"Graphviz's dot failed ({done.returncode}): {said}")
    return done.stdout


def write_picture(console: Console, text: str, fmt: str, example: str) -> None:
    """DOT drawn as `fmt` to stdout: SVG as text, PNG as bytes, never to a terminal (`example` says how)."""
    image = draw(text, fmt, example, console.stdout_isatty)
    if fmt == "svg":  # text: it goes wherever stdout goes
        console.write(image.decode())
    else:
        console.stdout.flush()
        console.stdout.buffer.write(image)


def export(graph: nx.DiGraph, fmt: str) -> str:
    """The graph in an export format (json, dot, mermaid, graphml)."""
    return {"json": to_json, "dot": to_dot, "mermaid": to_mermaid, "graphml": to_graphml}[fmt](graph)


def tree_screen(console: Console, graph: nx.DiGraph, depth: int | None, title: str, focus: str | None) -> None:
    """The tree (Rich's on a terminal, plain text in a pipe or for a large graph), then what must go first
    for each Terminating object, then the graph's problems."""
    out = console.rich(piped_width=200)
    if console.stdout_isatty and graph.number_of_nodes() <= RICH_TREE_MAX:
        out.print(tree(graph, depth, title))
    else:
        console.write(plain_tree(graph, depth, title))
    print_chains(graph, focus, out)
    found = problems(graph)
    if found:
        out.print("\n[bold]Problems[/]")
        for problem in found:
            out.print(f"  [yellow]{markup_safe(problem.kind)}[/]: {markup_safe(problem.message)}", highlight=False)


def print_chains(graph: nx.DiGraph, focus: str | None, out: RichConsole) -> None:
    """For the focus: what must go before it, in order; without one, each root cause once with the Terminating
    objects it holds (every object's own list would repeat the same few causes)."""
    if focus is None:
        print_roots(graph, out)
        return
    for node, chain in chains(graph):
        if node != focus:
            continue
        out.print(f"\n[bold]Before {markup_safe(label(graph, node))} can go[/], in order:")
        for number, dependent in enumerate(chain, 1):
            why = graph.nodes[dependent].get("blocker") or "not deleted yet"
            out.print(f"  {number}. {markup_safe(label(graph, dependent))}: {markup_safe(why)}")


def held_by(graph: nx.DiGraph) -> list[tuple[str, list[str]]]:
    """Each root cause and the Terminating objects whose blocking chains end there, most held first."""
    roots = root_causes(graph)
    held: dict[str, list[str]] = {root: [] for root in roots}
    stuck = (n for n, data in graph.nodes(data=True) if data.get("terminating"))
    for node in sorted(stuck, key=lambda n: label(graph, n)):
        seen, frontier = {node}, [node]
        while frontier:
            for _, b, data in graph.out_edges(frontier.pop(), data=True):
                if data.get("blocking") and b not in seen:
                    seen.add(b)
                    frontier.append(b)
        for root in (seen - {node}) & roots:  # a root cause never holds itself
            held[root].append(node)
    return sorted(held.items(), key=lambda pair: (-len(pair[1]), label(graph, pair[0])))


def print_roots(graph: nx.DiGraph, out: RichConsole) -> None:
    """Each root cause once: what it is, why it holds, and the Terminating objects it holds."""
    from rich.text import Text

    found = held_by(graph)
    if not found:
        return
    out.print(f"\n[bold]Root causes[/] ({len(found)}):")
    lines: list[Text] = []
    for root, held in found:
        why = (graph.nodes[root].get("blocker") or "not deleted yet").removeprefix("root cause: ")
        lines += hanging(Text(printable(f"{label(graph, root)}: {why}")), out.width, "  ", "    ")
        if held:
            names = ", ".join(label(graph, n) for n in held)
            lines += hanging(Text(printable(f"holds {len(held)}: {names}")), out.width, "    ", "      ")
    for line in lines:
        out.print(line, no_wrap=True, overflow="ignore", crop=False)
