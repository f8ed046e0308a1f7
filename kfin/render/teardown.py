"""kfin preflight -f / helm on a terminal: the teardown step by step in the tool's order, what each step deletes and
leaves stuck (and why, a race said as such), then the safe order as commands to paste; and as a picture (-o dot,
svg, png)."""

from __future__ import annotations

import html
from collections import Counter

from kfin.core.explain.survival import Stuck
from kfin.core.predict.helm import KEEP
from kfin.core.predict.teardown import Caused, Deletion, Teardown
from kfin.model import JSON
from kfin.render.explanation import verdict_colour
from kfin.render.graph import FONT, dot_quote, edge_row, label_lines, legend_block, tint, title_of, verdict_rows
from kfin.render.layout import spans
from kfin.render.preflight import doubt
from kfin.render.steps import print_plan
from kfin.render.tables import plain_table
from kfin.render.terminal import Console
from kfin.util.text import printable


def teardown_report(console: Console, result: Teardown) -> None:
    missing = sum(d.obj is None for d in result.steps)
    console.say(f"{result.tool}: {len(result.steps)} DELETE{'s' if len(result.steps) != 1 else ''} in this order")
    if result.tool.startswith("helm"):
        console.say("(a run of objects of one kind is deleted concurrently: its batch; Helm waits for none to be gone)")
    else:
        console.say("(one after the other; kubectl waits for them to be gone only after the last)")
    if missing:
        were = "is" if missing == 1 else "are"
        console.say(f"{missing} of them {were} not in the cluster (not found): nothing to delete there.")
    for hook in result.hooks:
        events = ", ".join(e for e in hook["events"] if e.endswith("-delete"))
        console.say(
            f"Hook {hook['kind']} {hook['name']} ({events}) runs "
            + ("before the first DELETE" if "pre-delete" in events else "after the last DELETE")
            + ": kfin does not run it; whatever it cleans up is not predicted here."
        )
        if hook.get("wouldHaveTo"):
            console.say(f"  For nothing to be left stuck: {hook['wouldHaveTo']}.")
    for m in result.kept:
        policy = m.annotations.get("helm.sh/resource-policy")
        console.say(
            f"Kept (helm.sh/resource-policy: {policy}): {m.kind}/{m.namespace + '/' if m.namespace else ''}{m.name}"
        )
    for crd in result.chart_crds:
        console.say(f"Never deleted by Helm: the chart's {crd} (its CRDs and their custom resources stay)")
    if result.unknown:
        console.say(f"kfin could not read {', '.join(result.unknown)}: what is there is not predicted.", err=True)
    sizes = Counter(d.batch for d in result.steps)  # counted once: per step, 100,000 steps took minutes
    plain_table(
        console,
        ["STEP", "KIND", "NAMESPACE", "NAME", "DELETES", "LEAVES STUCK"],
        [_row(d, sizes[d.batch] > 1) for d in result.steps],
    )
    console.say("")
    stuck = [(d, s) for d in result.steps for s in d.stuck + d.rejected]
    if stuck:
        console.say(f"{len(stuck)} would be left Terminating or not deleted:")
        plain_table(
            console,
            ["STEP", "NAMESPACE", "KIND", "NAME", "FINALIZER", "VERDICT", "WHY"],
            [
                [
                    str(d.number),
                    s.obj.namespace or "-",
                    s.obj.type.kind_display,
                    s.obj.name,
                    s.finalizer or "-",
                    ("REJECTED" if s in d.rejected else s.verdict) + doubt(s),
                    s.reason,
                ]
                for d, s in stuck
            ],
        )
    if result.orphaned:
        console.say(f"{len(result.orphaned)} left in place without the controller that removes its finalizer:")
        plain_table(
            console,
            ["NAMESPACE", "KIND", "NAME", "FINALIZER", "WHY"],
            [
                [s.obj.namespace or "-", s.obj.type.kind_display, s.obj.name, s.finalizer, s.reason]
                for s in result.orphaned
            ],
        )
    if result.clean:
        console.say("Nothing would be left stuck: the teardown should complete by itself.")
    console.say("")
    console.say("Safe order (kfin preflight deletes nothing; the steps are yours):")
    print_plan(console, result.plan)  # each command alone on its line, never wrapped, so that it pastes whole


def _row(d: Deletion, shared_batch: bool) -> list[str]:
    m = d.manifest
    step = f"{d.number}" + (f" (batch {d.batch})" if d.batch and shared_batch else "")
    if d.obj is None:
        deletes = "not found"
    elif d.note:
        deletes = d.note.replace("already deleted with ", "already, with ")
    elif d.rejected:
        deletes = "rejected: stays"
    else:
        deletes = "itself" + (f" and {len(d.cascade)} more" if d.cascade else "")
    leaves = ", ".join(dict.fromkeys(s.obj.name for s in d.stuck)) or "-"
    return [step, m.kind, (d.obj.namespace if d.obj else m.namespace) or "-", m.name, deletes, leaves]


# The picture's lines (kfin.render.graph's legend rows): the tool's order, what strands or rejects (a race dashed),
# what a CRD or namespace waits for.
TEARDOWN_EDGES = {
    "then": ('BORDER="1" COLOR="gray60"', "then (the tool's order)"),
    "certain": ('BORDER="2" COLOR="red"', "its deletion strands / rejects"),
    "race": ('BORDER="2" COLOR="red" STYLE="dashed"', "strands, a race"),
    "waits": ('BORDER="1" COLOR="red" STYLE="dotted"', "waits for"),
    "hook": ('BORDER="1" COLOR="gray40" STYLE="dotted"', "a delete hook runs<BR/>(kfin does not run it)"),
}
EDGE_ATTRIBUTES = {
    "then": 'color="gray60"',
    "certain": 'color="red", penwidth=2',
    "race": 'color="red", penwidth=2, style="dashed"',
    "waits": 'color="red", style="dotted"',
    "hook": 'color="gray40", style="dotted"',
}
# what the uninstall does not delete (kept objects, the chart's crds/) and its delete hooks: drawn apart, in gray
ASIDE = 'style="rounded,dotted", color="gray40", fontcolor="gray30"'
REASON_WIDTH = 40  # characters of an edge's reason on a line


def teardown_dot(result: Teardown, heading: JSON) -> str:
    """Graphviz's DOT of the teardown: each step's object a node (its step, what it leaves stuck, in the verdict's
    colour; not found: dashed), the tool's order between them, an edge from the step whose deletion strands or
    rejects an object to it (the reason on it), what a CRD or namespace waits for, and the safe order last."""
    node_of: dict[str, str] = {}  # uid -> node id: an object is one node, whichever steps name it
    names: dict[str, list[str]] = {}
    marks: dict[str, list[tuple[str, Stuck]]] = {}  # node -> (what it is left as, the entry)
    missing: set[str] = set()
    sizes = Counter(d.batch for d in result.steps)
    shared = {batch for batch, size in sizes.items() if batch and size > 1}
    for d in result.steps:
        node = f"step {d.number}"
        if d.obj is not None:
            node_of.setdefault(d.obj.uid, node)
        head = f"step {d.number}" + (f" (batch {d.batch})" if d.batch in shared else "")
        names[node] = [head, *label_lines(d.ref), *_reason_lines(_what(d))]
        if d.obj is None:
            missing.add(node)
    cascaded = {o.uid: d.number for d in result.steps for o in d.cascade}
    left = [(s, 0) for s in result.orphaned] + [(s, d.number) for d in result.steps for s in d.stuck + d.rejected]
    for s, _ in left:  # what a cascade deletes is drawn when it is left stuck
        if s.obj.uid not in node_of:
            node_of[s.obj.uid] = s.obj.uid
            at = cascaded.get(s.obj.uid)
            head = f"deleted with step {at}" if at else "left in place (stuck once deleted)"
            names[s.obj.uid] = [head, *label_lines(s.obj.ref)]
    edges: dict[tuple[str, str, str], list[str]] = {}  # (from, to, kind) -> the reasons
    for s, number in left:
        target = node_of[s.obj.uid]
        marks.setdefault(target, []).append((_mark(s), s))
        if not number:
            continue
        source = f"step {s.by}" if isinstance(s, Caused) and s.by else f"step {number}"
        if isinstance(s, Caused) and s.waits_for:
            for held in s.waits_for:
                edges.setdefault((target, node_of.get(held.uid, held.uid), "waits"), [])
        elif source != target:
            reasons = edges.setdefault((source, target, "certain" if s.certain else "race"), [])
            if s.reason not in reasons:
                reasons.append(s.reason)
        else:
            names[target] += label_lines(s.reason)
    title = title_of(heading)
    lines = [
        "digraph teardown {",
        "  rankdir=LR; ranksep=0.4;",
        *([f'  labelloc="t"; fontsize=14; {FONT}; label={dot_quote(title)};'] if title else []),
        f"  node [shape=box, {FONT}, fontsize=11];",
        f"  edge [{FONT}, fontsize=10];",
        *_legend(result, marks, edges, missing),
    ]
    for node, text in names.items():
        lines.append(_node(node, text, marks.get(node, []), node in missing))
    for before, after in zip(result.steps, result.steps[1:], strict=False):
        step, then = dot_quote(f"step {before.number}"), dot_quote(f"step {after.number}")
        lines.append(f"  {step} -> {then} [{EDGE_ATTRIBUTES['then']}];")
    for (source, target, kind), reasons in edges.items():
        label = [line for reason in reasons for line in _reason_lines(reason)]
        attrs = EDGE_ATTRIBUTES[kind] + (f", label={dot_quote(*label)}" if label else "")
        lines.append(f"  {dot_quote(source)} -> {dot_quote(target)} [{attrs}];")
    lines += _aside(result)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _aside(result: Teardown) -> list[str]:
    """Helm's uninstall besides its DELETEs: the objects it keeps (helm.sh/resource-policy) and the chart's crds/,
    never deleted, in a box of their own; each delete hook, run before the first DELETE (pre-delete) or after the
    last (post-delete), an edge to or from that step."""
    lines: list[str] = []
    kept = [
        (
            f"kept {m.kind}/{m.namespace}/{m.name}",
            [
                f"kept (helm.sh/resource-policy: {m.annotations.get(KEEP)})",
                *label_lines(f"{m.kind}/{m.namespace + '/' if m.namespace else ''}{m.name}"),
            ],
        )
        for m in result.kept
    ] + [(f"crds/ {crd}", ["never deleted (the chart's crds/)", *label_lines(crd)]) for crd in result.chart_crds]
    if kept:
        lines += [
            "  subgraph cluster_not_deleted {",
            f'    label="not deleted by the uninstall"; style="dashed"; color="gray60"; {FONT}; fontsize=10;',
        ]
        lines += [f"    {dot_quote(node)} [label={dot_quote(*text)}, {ASIDE}];" for node, text in kept]
        lines.append("  }")
    if not result.steps:
        return lines
    first, last = dot_quote(f"step {result.steps[0].number}"), dot_quote(f"step {result.steps[-1].number}")
    for hook in result.hooks:
        events = [e for e in hook.get("events") or [] if e in ("pre-delete", "post-delete")]
        node = dot_quote(f"hook {hook.get('kind')}/{hook.get('name')}")
        text = [f"{', '.join(events)} hook", *label_lines(f"{hook.get('kind')}/{hook.get('name')}"), "not run by kfin"]
        lines.append(f"  {node} [label={dot_quote(*text)}, {ASIDE}];")
        if "pre-delete" in events:
            lines.append(f"  {node} -> {first} [{EDGE_ATTRIBUTES['hook']}];")
        if "post-delete" in events:
            lines.append(f"  {last} -> {node} [{EDGE_ATTRIBUTES['hook']}];")
    return lines


def _what(d: Deletion) -> str:
    if d.obj is None:
        return "not found: nothing to delete"
    if d.note:
        return d.note
    if d.rejected:
        return "DELETE rejected: it stays"
    return "deletes it" + (f" and {len(d.cascade)} more" if d.cascade else "")


def _mark(s: Stuck) -> str:
    """What an object is left as: its verdict to be (a race or a may said so), then the finalizer on a line of its
    own."""
    what = "REJECTED" if not s.finalizer and s.verdict == "BLOCKED" else s.verdict
    return f"{what}{doubt(s)}" + (f"\n{s.finalizer}" if s.finalizer else "")


def _reason_lines(reason: str) -> list[str]:
    return [reason[a:b].strip() for a, b in spans(reason, REASON_WIDTH)]


def _node(node: str, text: list[str], marks: list[tuple[str, Stuck]], missing: bool) -> str:
    style, attrs = ["rounded"], []
    shown = list(dict.fromkeys(mark for mark, _ in marks))
    if marks:
        colour = verdict_colour(marks[0][1].verdict)
        style.append("filled")
        attrs += [f'color="{colour}"', f'fillcolor="{tint(colour)}"', "penwidth=2"]
    if missing:
        style.append("dashed")
        attrs.append('fontcolor="gray40"')
    attrs.append(f'style="{",".join(style)}"')
    lines = text + [line for mark in shown for part in mark.split("\n") for line in label_lines(part)]
    return f"  {dot_quote(node)} [label={dot_quote(*lines)}, {', '.join(attrs)}];"


def _legend(
    result: Teardown,
    marks: dict[str, list[tuple[str, Stuck]]],
    edges: dict[tuple[str, str, str], list[str]],
    missing: set[str],
) -> list[str]:
    """What the picture shows, then the safe order (its commands, numbered)."""
    kinds = {kind for _, _, kind in edges} | ({"then"} if len(result.steps) > 1 else set())
    kinds |= {"hook"} if result.hooks and result.steps else set()
    rows = [edge_row(*TEARDOWN_EDGES[k]) for k in TEARDOWN_EDGES if k in kinds]
    rows += verdict_rows({s.verdict for found in marks.values() for _, s in found}, "left stuck,<BR/>by verdict")
    if missing:
        rows.append('<TR><TD BORDER="1" STYLE="dashed"></TD><TD ALIGN="LEFT">not found</TD></TR>')
    if result.kept or result.chart_crds:
        rows.append('<TR><TD BORDER="1" STYLE="dotted"></TD><TD ALIGN="LEFT">not deleted (kept, crds/)</TD></TR>')
    rows.append('<TR><TD COLSPAN="2" ALIGN="LEFT"><B>safe order</B></TD></TR>')
    for number, step in enumerate(result.plan, 1):
        action = step.actions[0]  # a command as it is pasted; an instruction (no command) in its words, wrapped
        said = [action.command] if action.command else [action.text[a:b].strip() for a, b in spans(action.text, 60)]
        text = '<BR ALIGN="LEFT"/>'.join(html.escape(printable(line, one_line=True)) for line in said)
        rows.append(f'<TR><TD ALIGN="RIGHT" VALIGN="TOP">{number}.</TD><TD ALIGN="LEFT" BALIGN="LEFT">{text}</TD></TR>')
    return legend_block(rows)
