"""kfin explain's screen: one panel per finalizer, recent Warning Events, the blocking tree and the plan."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from kfin.core.explain.blocking import Chain
from kfin.core.explain.causes import Explanation
from kfin.core.explain.stuck import Inside
from kfin.core.read.facts import ClusterFacts
from kfin.model import JSON, parse_time
from kfin.render.steps import Line, print_lines, step_lines, wrapped
from kfin.render.terminal import NARROW_PANEL, Console, text
from kfin.util.durations import format_age
from kfin.util.text import printable

if TYPE_CHECKING:
    from rich.console import Console as RichConsole
    from rich.tree import Tree


STUCK_INSIDE_NAMED = 3  # objects stuck in a namespace named by kfin explain; the others are counted

VERDICT_STYLE = {
    "HOLDING": "bold red",
    "WAITING": "bold yellow",
    "STALLED": "bold dark_orange",
    "ORPHANED": "bold magenta",
    "UNKNOWN": "bold",
    "BLOCKED": "bold red",
}


def verdict_colour(verdict: str | None) -> str:
    """A verdict's colour in a picture or a page (#rrggbb): VERDICT_STYLE's colour as Rich exports a terminal's
    (its default theme), so that the graph and the report read like the VERDICT column."""
    from rich.style import Style
    from rich.terminal_theme import DEFAULT_TERMINAL_THEME

    colour = Style.parse(VERDICT_STYLE.get(verdict or "", "")).color
    return (colour.get_truecolor(DEFAULT_TERMINAL_THEME) if colour else DEFAULT_TERMINAL_THEME.foreground_color).hex


def explained(
    console: Console,
    found: Explanation,
    events: list[JSON] | None,
    chain: Chain | None,
    now: datetime,
    inside: Inside | None = None,
) -> None:
    """kfin explain's answer on a screen: the panels, the recent Warning Events, the blocking tree and the plan."""
    explanation_panels(console, found, inside=inside)
    if events:
        warning_events(console, events, now)
    if chain is not None:
        chain_and_plan(console, chain)


def document(
    found: Explanation,
    facts: ClusterFacts,
    events: list[JSON] | None,
    chain: Chain | None,
    complete: bool,
    inside: Inside | None = None,
) -> JSON:
    """kfin explain's answer as a document (-o json|yaml): the findings, the chain and plan, the Events, what is
    stuck in a Namespace not being deleted itself, and whether what could not be read leaves it whole."""
    answer = found.to_dict(facts)
    answer.update(chain.to_dict() if chain else {"chain": None, "plan": None})
    answer["events"] = events
    if inside is not None:
        answer["stuckInside"] = {
            "objects": [
                {"kind": o.type.kind, "apiVersion": o.type.api_version, "namespace": o.namespace, "name": o.name}
                for o in inside.objects
            ],
            "complete": inside.complete,
        }
    answer["complete"] = complete  # a failure unrelated to this object leaves the answer whole
    return answer


def explanation_panels(console: Console, explanation: Explanation, inside: Inside | None = None) -> None:
    """One panel per finalizer: what it is, who removes it, what holds it, the verdict, the fix and the risk.
    `inside`: what is stuck in a Namespace that is not being deleted itself."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    target = console.rich(piped_width=console.columns or 120)
    o = explanation.obj
    state = (
        f"Terminating for {format_age(explanation.terminating_seconds or 0)}" if o.terminating else "not being deleted"
    )
    target.print(Text.assemble((printable(o.ref), "bold"), f"  {state}"))
    if not o.terminating and explanation.findings:
        _live(explanation, target, inside)
        return
    if not explanation.findings:
        target.print("No finalizers: nothing holds it." if o.terminating else "No finalizers.")
        if inside is not None and (inside.objects or not inside.complete):
            target.print(Text(printable(_stuck_inside(o.name, inside))))
    for finding in explanation.findings:
        rows = (
            [
                ("Family", f"{finding.family}: protects {finding.protects}"),
                ("Removed by", finding.controller),
                ("Now", finding.condition),
            ]
            + [("", f"- {line}") for line in finding.evidence]
            + [("Safe fix", finding.fix), ("Risk if forced", finding.risk)]
        )
        if finding.infrastructure:  # the cost of forcing it, first: what outside the cluster it guards
            rows.insert(0, ("Guards", f"infrastructure outside the cluster: {finding.infrastructure}"))
        if finding.remove_command:
            rows.append(("Command", finding.remove_command))
        # a cause without a finalizer (a Pod's graceful deletion) is named by its family
        name = finding.finalizer or f"{finding.family} (no finalizer)"
        title = Text.assemble(
            (printable(name), "bold"), "  ", (finding.verdict.value, VERDICT_STYLE[finding.verdict.value])
        )
        if finding.location == "spec.finalizers":
            title.append("  (spec.finalizers)")
        if target.width < NARROW_PANEL:  # labels beside values would leave the values no room
            target.print(title)
            for label, value in rows:
                target.print(Text.assemble("  ", (f"{label}: " if label else "", "bold"), text(value)), overflow="fold")
            continue
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, value in rows:
            grid.add_row(label, text(value))
        target.print(Panel(grid, title=title, title_align="left", expand=True))


def _live(explanation: Explanation, target: RichConsole, inside: Inside | None = None) -> None:
    """A live object: its finalizers are what every such object carries, not alarms (no verdict, no risk); a
    Namespace's content may be stuck all the same (`inside`)."""
    from rich.text import Text

    o = explanation.obj
    if inside is not None and (inside.objects or not inside.complete):
        target.print(Text(printable(_stuck_inside(o.name, inside))))
        target.print("Its finalizers act only once it is deleted:")
    else:
        target.print("Nothing is stuck. Its finalizers act only once it is deleted:")
    for finding in explanation.findings:
        where = "  (spec.finalizers)" if finding.location == "spec.finalizers" else ""
        target.print(
            Text.assemble(
                "  ", (printable(finding.finalizer), "bold"), where, f": {finding.family}: protects {finding.protects}"
            )
        )
        target.print(Text(f"    removed by {finding.controller}"))
    kind = o.type.name_prefix
    where = f" -n {o.namespace}" if o.namespace else ""
    target.print(Text(printable(f"What deleting it would leave stuck: kfin preflight {kind} {o.name}{where}")))


def _stuck_inside(namespace: str, inside: Inside) -> str:
    """What is stuck in a namespace not being deleted: how many, the first few, and the command that lists them."""
    command = f"kfin stuck -n {namespace}"
    count = len(inside.objects)
    if not count:
        return f"Whether anything in it is stuck kfin could not read in full: {command}"
    shown = ", ".join(f"{o.type.kind_display}/{o.name}" for o in inside.objects[:STUCK_INSIDE_NAMED])
    more = f" and {count - STUCK_INSIDE_NAMED} more" if count > STUCK_INSIDE_NAMED else ""
    at_least = "" if inside.complete else "at least "
    objects = f"{at_least}{count} object{'s' if count > 1 else ''} in it {'are' if count > 1 else 'is'} stuck"
    return f"{objects[0].upper()}{objects[1:]}: {shown}{more} (what holds each: {command})"


def warning_events(console: Console, events: list[JSON], now: datetime) -> None:
    """The object's recent Warning Events, newest first: what its controllers reported."""
    from rich.text import Text

    target = console.rich(piped_width=console.columns or 120)
    target.print(Text("Recent warnings", style="bold"))
    for event in events:
        when = parse_time(event.get("lastTimestamp") or event.get("eventTime"))
        age = format_age((now - when).total_seconds()) + " ago" if when else "at an unknown time"
        count = event.get("count") or 1
        target.print(
            Text.assemble(
                f"  {age}",
                f" ({count}x)" if count > 1 else "",
                "  ",
                (printable(event.get("reason") or ""), "yellow"),
                ": ",
                text(event.get("message") or ""),
            ),
            overflow="fold",
        )


def chain_and_plan(console: Console, chain: Chain) -> None:
    """The blocking graph below the object as a tree (root causes marked), then the plan, in order."""
    from rich.text import Text
    from rich.tree import Tree

    target = console.rich(piped_width=console.columns or 120)
    graph = chain.graph
    if not chain.steps and graph.out_degree(chain.start) == 0:
        return
    tree = Tree(Text("Why it is stuck", style="bold"), guide_style="dim")
    drawn: set[str] = set()

    def add(parent: Tree, node: str, edge: JSON | None) -> None:
        data = graph.nodes[node]
        label = Text()
        if edge:
            label.append(printable(edge["type"]), style="yellow")
            label.append(f": {printable(edge['why'])} → ")
        label.append(printable(data["label"]), style="bold")
        if node in chain.roots:
            label.append("  ◀ root cause", style="bold red")
        if node in drawn:
            parent.add(label + Text(" (shown above)", style="dim"))
            return
        drawn.add(node)
        branch = parent.add(label)
        for _, child, child_edge in sorted(graph.out_edges(node, data=True), key=lambda e: graph.nodes[e[1]]["label"]):
            add(branch, child, child_edge)

    add(tree, chain.start, None)
    target.print()
    target.print(tree)
    if chain.truncated:
        target.print(Text(f"(only the first {len(graph)} objects were followed)", style="dim"))
    # each command alone on its line, never wrapped, so that it pastes whole; kfin's words wrap around it
    lines: list[Line] = []
    if chain.steps:
        lines += [("", ""), ("Plan, in order (kfin runs only `kfin remove`; the other steps are yours):", "bold")]
        for number, step in enumerate(chain.steps, 1):
            lines += step_lines(number, step.actions, target.width)
            lines += wrapped(f"root cause: {step.cause}", "     ", "     ", target.width, "dim")
    if chain.afterwards:
        lines.append(("Then, by themselves:", "bold"))
        for line in chain.afterwards:
            lines += wrapped(line, "  - ", "    ", target.width)
    print_lines(lines, target)
