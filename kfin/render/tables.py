"""Tables: stuck objects, the audit log, the catalog (one block per row on a narrow terminal). kfin remove's
table is kfin.render.removal's: kfin stuck, which prints these, does without kfin.core.remove.plan."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kfin.core.explain.roots import RootCause
from kfin.core.explain.stuck import StuckObject
from kfin.core.read.catalog import CatalogEntry
from kfin.model import kind_display
from kfin.render import layout
from kfin.render.explanation import VERDICT_STYLE
from kfin.render.steps import action_lines
from kfin.render.terminal import Console, text
from kfin.util.durations import format_age
from kfin.util.text import printable

if TYPE_CHECKING:
    from rich.console import Console as RichConsole
    from rich.text import Text


def stuck_table(
    console: Console,
    rows: Sequence[StuckObject],
    wide: bool = False,
    show_context: bool = False,
    show_namespace: bool = True,
    out: RichConsole | None = None,
    no_headers: bool = False,
) -> None:
    """kfin stuck's table: oldest first, the blocker's family in colour.

    Laid out for the width: one line per object when it fits; else names whole and the finalizers and
    blocker wrapped between words; else the blocker on the lines below its object; else a block per object.
    """
    from rich.text import Text

    target = out or console.rich()  # `out`: a screen redrawn in place (kfin stuck --watch)
    identity = (["CONTEXT"] if show_context else []) + (["NAMESPACE"] if show_namespace else [])
    identity += ["KIND", "NAME", "TERMINATING", "VERDICT"]
    extra = ["APIVERSION", "UID", "OWNERS", "GRACE"] if wide else []
    cells: list[list[Text]] = []
    blockers: list[Text] = []
    for row in rows:
        o = row.obj
        family, _, rest = printable(row.blocker).partition(":")
        blockers.append(Text.assemble((family, "bold yellow"), ":" + rest) if rest else text(row.blocker))
        values = ([row.context] if show_context else []) + ([o.namespace or "-"] if show_namespace else [])
        values += [o.type.kind_display, o.name, format_age(row.terminating_seconds), row.verdict or "-"]
        if wide:
            grace = o.meta.get("deletionGracePeriodSeconds")
            values += [o.type.api_version, o.uid, str(len(o.owner_references)), "-" if grace is None else str(grace)]
        values.append(", ".join(row.finalizers) or "<none>")
        cells.append([text(v) for v in values])
        if row.verdict in VERDICT_STYLE:  # the column read first: whether it resolves by itself, in colour
            cells[-1][len(identity) - 1].stylize(VERDICT_STYLE[row.verdict])
    headers = identity + extra + ["FINALIZERS"]
    finalizers = len(headers) - 1
    width = target.width
    laid = layout.table(
        headers + ["BLOCKER"],
        [c + [b] for c, b in zip(cells, blockers, strict=True)],
        width,
        flexible=[finalizers, finalizers + 1],
        least={finalizers + 1: BLOCKER_LEAST},
    )
    if laid is not None:
        _print_lines(([] if no_headers else [laid[0]]) + [line for lines in laid[1] for line in lines], target)
        return
    # the blocker below its object, across the whole width; then the finalizers too
    room = width - len(BELOW)
    if room >= BLOCKER_LEAST:
        laid = layout.table(headers, cells, width, flexible=[finalizers])
        below = [[b] for b in blockers]
        if laid is None:
            laid = layout.table(headers[:-1], [c[:-1] for c in cells], width)
            below = [[c[-1], b] for c, b in zip(cells, blockers, strict=True)]
        if laid is not None:
            printed = [] if no_headers else [laid[0]]
            for lines, parts in zip(laid[1], below, strict=True):
                printed += lines
                printed += [Text(BELOW) + line for part in parts for line in layout.wrapped(part, room)]
            _print_lines(printed, target)
            return
    _blocks(headers + ["BLOCKER"], [c + [b] for c, b in zip(cells, blockers, strict=True)], target)


def root_causes_block(console: Console, causes: Sequence[RootCause], stuck: int, show_context: bool = False) -> None:
    """What kfin stuck leads with: each root cause once, what it holds and the step that frees it."""
    from rich.text import Text

    if not causes:
        return
    target = console.rich()
    width = target.width
    many = "s" if len(causes) != 1 else ""
    held = f"{stuck} stuck object{'s' if stuck != 1 else ''}"
    title = Text(f"{len(causes)} root cause{many} hold{'' if many else 's'} the {held} below:", style="bold")
    lines = layout.hanging(title, width, "")
    lines.append(Text(""))
    for number, cause in enumerate(causes, 1):
        if number > 1:
            lines.append(Text(""))
        where = f"[{cause.context}] " if show_context and cause.context else ""
        head = Text.assemble(f"{number}. ", (printable(where + cause.label), "bold"), " ")
        head.append_text(text(cause.verdict or "-"))
        if cause.verdict in VERDICT_STYLE:
            head.stylize(VERDICT_STYLE[cause.verdict], len(head) - len(cause.verdict))
        head.append_text(text(f": {cause.evidence}"))
        lines += layout.hanging(head, width, "", "   ")
        if cause.holds:  # a stuck object that is its own root cause holds nothing else
            holds = text(f"holds {len(cause.holds)}: " + ", ".join(r.obj.ref for r in cause.holds))
            lines += layout.hanging(holds, width, "   ", "     ")
        for action in cause.step.actions if cause.step is not None else ():  # each command whole, to paste
            lines += [Text(line, style=style) for line, style in action_lines(action, "   ", "   ", width)]
    lines.append(Text(""))
    _print_lines(lines, target)


BLOCKER_LEAST = 30  # narrower, a blocker of a dozen words takes more lines than it is worth
BELOW = "    "


def _print_lines(lines: list[Text], target: RichConsole) -> None:
    """Lines laid out already, printed as they are. In one go: rich's cost per print is a quarter of a millisecond
    (10,000 stuck objects are 30,000 lines or more on a terminal)."""
    from rich.text import Text

    if not lines:
        return
    if target.color_system is None:  # a pipe, or NO_COLOR: no style is drawn, so rich would print the plain text
        target.file.write("".join(line.plain + "\n" for line in lines))
        return
    target.print(Text("\n").join(lines), no_wrap=True, overflow="ignore", crop=False)


def _blocks(headers: list[str], rows: list[list[Text]], target: RichConsole) -> None:
    """A narrow terminal: one block per row, a line per column, wrapped between words with a hanging indent."""
    from rich.text import Text

    for number, cells in enumerate(rows):
        if number:
            target.print()
        for header, cell in zip(headers, cells, strict=True):
            label = f"{header}: "
            parts = layout.wrapped(cell, max(target.width - len(label), 10))
            _print_lines(
                [Text.assemble((header, "bold"), ": ", parts[0])] + [Text(" " * len(label)) + p for p in parts[1:]],
                target,
            )


def plain_table(
    console: Console,
    headers: list[str],
    rows: list[list[str]],
    out: RichConsole | None = None,
    no_headers: bool = False,
) -> None:
    """Headers and rows of cluster data, as kubectl prints a table; laid out for the width as kfin stuck's
    (cells wrapped between words, a block per row when even that does not fit)."""
    target = out or console.rich()
    cells = [[text(cell) for cell in row] for row in rows]
    laid = layout.table(headers, cells, target.width, flexible=range(len(headers)))
    if laid is None:
        _blocks(headers, cells, target)
        return
    _print_lines(([] if no_headers else [laid[0]]) + [line for lines in laid[1] for line in lines], target)


def audit_table(console: Console, records: Iterable[dict[str, Any]]) -> None:
    """kfin audit: a line per recorded change."""
    rows = []
    for r in records:
        o = r.get("object") or {}
        where = f"{o['namespace']}/" if o.get("namespace") else ""
        group = str(o.get("apiVersion") or "").rpartition("/")[0]  # a custom kind's group, as kfin names it elsewhere
        ref = f"{kind_display(str(o.get('kind', '?')), group)}/{where}{o.get('name', '?')}"
        rows.append(
            [
                r.get("time", "?"),
                r.get("context", ""),
                r.get("user", ""),
                ref,
                ",".join(r.get("removed") or []) or "-",
                ",".join(f"{k}={v}" for k, v in (r.get("verdicts") or {}).items()),
                "yes" if r.get("forced") else "no",
                r.get("result", "?"),
            ]
        )
    plain_table(console, ["TIME", "CONTEXT", "USER", "OBJECT", "REMOVED", "VERDICTS", "FORCED", "RESULT"], rows)


def catalog_table(console: Console, entries: Iterable[CatalogEntry]) -> None:
    """kfin catalog: an entry per line, with the finalizers it covers and where its controller runs."""
    rows = [
        [
            e.name,
            e.project,
            ", ".join(e.finalizers),
            e.controller.name,
            ", ".join(e.controller.namespaces) or "-",
            e.infrastructure or "-",
            e.checked_against or "-",
            Path(e.source).name,
        ]
        for e in entries
    ]
    # read by people, also in a pipe (| less): laid out for $COLUMNS or 120 there, cells wrapped between words;
    # -o json or yaml is the catalog for programs
    target = console.rich(piped_width=console.columns or 120)
    headers = [
        "NAME",
        "PROJECT",
        "FINALIZERS",
        "CONTROLLER",
        "NAMESPACES",
        "GUARDS OUTSIDE",
        "CHECKED AGAINST",
        "SOURCE",
    ]
    plain_table(console, headers, rows, target)


def catalog_entry_lines(console: Console, fields: Iterable[tuple[str, str]]) -> None:
    """kfin catalog NAME: one entry, a field per line (as kubectl describe), its values wrapped at the terminal."""
    shown = [(label, value) for label, value in fields if value]
    width = max(len(label) for label, _ in shown) + 2
    for label, value in shown:
        console.say(f"{label + ':':<{width}}{value}", hanging=width)
