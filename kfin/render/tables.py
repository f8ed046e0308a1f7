"""Rendering of plain results: JSON and YAML dumps (tables live with their commands' renderers)."""

from __future__ import annotations

import json
import os
import sys

from kfin.util.text import printable


def dump(data, fmt: str, stream=None) -> None:
    stream = stream or sys.stdout
    if fmt == "json":
        stream.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    elif fmt == "yaml":
        import yaml
        stream.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    else:
        raise ValueError(f"unknown format {fmt}")


# Below these widths a table or a panel folds every cell to a few characters: a plain layout reads better.
NARROW_TABLE = 80
NARROW_PANEL = 60
MIN_WIDTH = 30  # narrower, every word would be broken: lines this long still wrap on the smallest terminal


def text(value):
    """Cluster data for rich: a Text, so that `[link=...]` or `[bold]` in a name stays literal, with
    control characters shown, never sent."""
    from rich.text import Text
    return Text(printable(value))


def markup_safe(value) -> str:
    """Cluster data inside a markup string: escaped, control characters shown."""
    from rich.markup import escape
    return escape(printable(value))


def columns_setting() -> int | None:
    """$COLUMNS when it is a usable width, else None (COLUMNS=abc or 0 is ignored, as a shell would)."""
    value = os.environ.get("COLUMNS", "").strip()
    return int(value) if value.isdigit() and 0 < int(value) < 100_000 else None


def console(stderr: bool = False, piped_width: int = 100_000):
    """A rich Console: colour and the terminal's width on a terminal (NO_COLOR honoured), plain when
    piped, and as wide as `piped_width` there (tables: unwrapped lines, like kubectl's output)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        import shutil
        width = columns_setting() or shutil.get_terminal_size((100, 25)).columns
        return Console(file=stream, highlight=False, width=max(width, MIN_WIDTH))
    return Console(file=stream, highlight=False, width=max(piped_width, MIN_WIDTH), no_color=True, color_system=None)


def stuck_table(rows, wide: bool = False, show_context: bool = False, out=None) -> None:
    from rich.table import Table
    from rich.text import Text

    from kfin.util.durations import format_age

    target = out or console()
    headers = (["CONTEXT"] if show_context else []) + ["NAMESPACE", "KIND", "NAME", "TERMINATING FOR",
                                                         "FINALIZERS", "BLOCKER"]
    if wide:
        headers += ["APIVERSION", "UID", "OWNERS", "GRACE"]
    lines = []
    for row in rows:
        o = row.obj
        family, _, rest = printable(row.blocker).partition(":")
        cells = ([row.context] if show_context else []) + [
            o.namespace or "-", o.type.kind_display, o.name, format_age(row.terminating_seconds),
            ",".join(row.finalizers) or "<none>", Text.assemble((family, "bold yellow"), ":" + rest) if rest
            else text(row.blocker)]
        if wide:
            grace = o.meta.get("deletionGracePeriodSeconds")
            cells += [o.type.api_version, o.uid, str(len(o.owner_references)), "-" if grace is None else str(grace)]
        lines.append([c if isinstance(c, Text) else text(c) for c in cells])
    if target.width < NARROW_TABLE:
        return _blocks(headers, lines, target)
    table = Table(box=None, header_style="bold", pad_edge=False, show_edge=False, expand=False)
    for header in headers:
        table.add_column(header, overflow="fold")
    for cells in lines:
        table.add_row(*cells)
    print_table(table, target)


def _blocks(headers: list[str], rows: list[list], target) -> None:
    """A narrow terminal: one block per row, a line per column, wrapped at the terminal's edge."""
    from rich.text import Text

    for number, cells in enumerate(rows):
        if number:
            target.print()
        for header, cell in zip(headers, cells):
            target.print(Text.assemble((header, "bold"), ": ", cell), overflow="fold")


def print_table(table, out=None) -> None:
    """Print a rich table; off a terminal, without the padding rich leaves at line ends."""
    target = out or console()
    if target.is_terminal:
        target.print(table)
        return
    with target.capture() as captured:
        target.print(table)
    target.file.write("\n".join(line.rstrip() for line in captured.get().splitlines()) + "\n")


VERDICT_STYLE = {"HOLDING": "bold red", "WAITING": "bold yellow", "ORPHANED": "bold magenta", "UNKNOWN": "bold",
                 "BLOCKED": "bold red"}


def explanation_panels(explanation, out=None) -> None:
    """One panel per finalizer: what it is, who removes it, what holds it, the verdict, the fix and the risk."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    from kfin.util.durations import format_age

    target = out or console(piped_width=columns_setting() or 120)
    o = explanation.obj
    state = (f"Terminating for {format_age(explanation.terminating_seconds)}" if o.terminating
             else "not being deleted")
    target.print(Text.assemble((printable(o.ref), "bold"), f"  {state}"))
    if not explanation.findings:
        target.print("No finalizers: nothing holds it." if o.terminating else "No finalizers.")
    for finding in explanation.findings:
        rows = [("Family", f"{finding.family}: protects {finding.protects}"), ("Removed by", finding.controller),
                ("Now", finding.condition)] + [("", f"- {line}") for line in finding.evidence] + [
                ("Safe fix", finding.fix), ("Risk if forced", finding.risk)]
        if finding.remove_command:
            rows.append(("Command", finding.remove_command))
        title = Text.assemble((printable(finding.finalizer), "bold"), "  ",
                              (finding.verdict.value, VERDICT_STYLE[finding.verdict.value]))
        if finding.field == "spec.finalizers":
            title.append("  (spec.finalizers)")
        if target.width < NARROW_PANEL:  # labels beside values would leave the values no room
            target.print(title)
            for label, value in rows:
                target.print(Text.assemble("  ", (f"{label}: " if label else "", "bold"), text(value)),
                             overflow="fold")
            continue
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, value in rows:
            grid.add_row(label, text(value))
        target.print(Panel(grid, title=title, title_align="left", expand=True))


def warning_events(events: list[dict], now, out=None) -> None:
    """The object's recent Warning Events, newest first: what its controllers reported."""
    from rich.text import Text

    from kfin.util.durations import format_age
    from kfin.model import parse_time

    target = out or console(piped_width=columns_setting() or 120)
    target.print(Text("Recent warnings", style="bold"))
    for event in events:
        when = parse_time(event.get("lastTimestamp") or event.get("eventTime"))
        age = format_age((now - when).total_seconds()) + " ago" if when else "at an unknown time"
        count = event.get("count") or 1
        target.print(Text.assemble(f"  {age}", f" ({count}x)" if count > 1 else "", "  ",
                                   (printable(event.get("reason") or ""), "yellow"), ": ",
                                   text(event.get("message") or "")), overflow="fold")


def chain_and_plan(chain, out=None) -> None:
    """The blocking graph below the object as a tree (root causes marked), then the plan, in order."""
    from rich.table import Table
    from rich.text import Text
    from rich.tree import Tree

    target = out or console(piped_width=columns_setting() or 120)
    graph = chain.graph
    if not chain.steps and graph.out_degree(chain.start) == 0:
        return
    tree = Tree(Text("Why it is stuck", style="bold"), guide_style="dim")
    drawn: set = set()

    def add(parent, node: str, edge: dict | None):
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
    if chain.steps:
        target.print()
        target.print(Text("Plan, in order (kfin runs only `kfin remove`; the other steps are yours):", style="bold"))
        steps = Table.grid(padding=(0, 1))
        steps.add_column(justify="right", no_wrap=True)
        steps.add_column(overflow="fold")
        for number, step in enumerate(chain.steps, 1):
            cause = step.why if step.why.startswith(step.resolves) else f"{step.resolves}: {step.why}"
            steps.add_row(f"  {number}.", Text.assemble(text(step.action), "\n", (f"root cause: {printable(cause)}",
                                                                                  "dim")))
        target.print(steps)
    if chain.afterwards:
        target.print(Text("Then, by themselves:", style="bold"))
        afterwards = Table.grid(padding=(0, 1))
        afterwards.add_column(no_wrap=True)
        afterwards.add_column(overflow="fold")
        for line in chain.afterwards:
            afterwards.add_row("  -", text(line))
        target.print(afterwards)


def _plain_table(headers: list[str], rows: list[list[str]], out=None) -> None:
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False, show_edge=False)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*[text(cell) for cell in row])
    print_table(table, out)


def removal_table(plans, out=None) -> None:
    rows = []
    for p in plans:
        o = p.obj
        if p.refused:
            rows.append([o.namespace or "-", o.type.kind_display, o.name, "-", "-", f"refused: {p.refused}"])
            continue
        for c in p.choices:
            action = (f"refused: {c.refused}" if c.refused else "remove") if c.selected else "keep"
            rows.append([o.namespace or "-", o.type.kind_display, o.name, c.finding.finalizer,
                         c.finding.verdict.value, action])
    _plain_table(["NAMESPACE", "KIND", "NAME", "FINALIZER", "VERDICT", "ACTION"], rows, out)


def audit_table(records, out=None) -> None:
    rows = []
    for r in records:
        o = r.get("object") or {}
        ref = f"{o.get('kind', '?')}/{o.get('namespace') + '/' if o.get('namespace') else ''}{o.get('name', '?')}"
        rows.append([r.get("time", "?"), r.get("context", ""), r.get("user", ""), ref,
                     ",".join(r.get("removed") or []) or "-",
                     ",".join(f"{k}={v}" for k, v in (r.get("verdicts") or {}).items()),
                     "yes" if r.get("forced") else "no", r.get("result", "?")])
    _plain_table(["TIME", "CONTEXT", "USER", "OBJECT", "REMOVED", "VERDICTS", "FORCED", "RESULT"], rows, out)
