"""Tables: stuck objects, planned removals, the audit log (one block per row on a narrow terminal)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kfin.core.catalog import CatalogEntry
from kfin.core.removal import Plan
from kfin.core.stuck import StuckObject
from kfin.render.terminal import NARROW_TABLE, console, print_table, text
from kfin.util.durations import format_age
from kfin.util.text import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


def stuck_table(
    rows: Sequence[StuckObject], wide: bool = False, show_context: bool = False, out: Console | None = None
) -> None:
    """kfin stuck's table: oldest first, the blocker's family in colour."""
    from rich.table import Table
    from rich.text import Text

    target = out or console()
    headers = (["CONTEXT"] if show_context else []) + [
        "NAMESPACE",
        "KIND",
        "NAME",
        "TERMINATING FOR",
        "FINALIZERS",
        "BLOCKER",
    ]
    if wide:
        headers += ["APIVERSION", "UID", "OWNERS", "GRACE"]
    lines: list[list[Text]] = []
    for row in rows:
        o = row.obj
        family, _, rest = printable(row.blocker).partition(":")
        cells = ([row.context] if show_context else []) + [
            o.namespace or "-",
            o.type.kind_display,
            o.name,
            format_age(row.terminating_seconds),
            ",".join(row.finalizers) or "<none>",
            Text.assemble((family, "bold yellow"), ":" + rest) if rest else text(row.blocker),
        ]
        if wide:
            grace = o.meta.get("deletionGracePeriodSeconds")
            cells += [o.type.api_version, o.uid, str(len(o.owner_references)), "-" if grace is None else str(grace)]
        lines.append([c if isinstance(c, Text) else text(c) for c in cells])
    if target.width < NARROW_TABLE:
        _blocks(headers, lines, target)
        return
    table = Table(box=None, header_style="bold", pad_edge=False, show_edge=False, expand=False)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row_cells in lines:
        table.add_row(*row_cells)
    print_table(table, target)


def _blocks(headers: list[str], rows: list[list[Text]], target: Console) -> None:
    """A narrow terminal: one block per row, a line per column, wrapped at the terminal's edge."""
    from rich.text import Text

    for number, cells in enumerate(rows):
        if number:
            target.print()
        for header, cell in zip(headers, cells, strict=True):
            target.print(Text.assemble((header, "bold"), ": ", cell), overflow="fold")


def plain_table(headers: list[str], rows: list[list[str]], out: Console | None = None) -> None:
    """Headers and rows of cluster data, as kubectl prints a table."""
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False, show_edge=False)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*[text(cell) for cell in row])
    print_table(table, out)


def removal_table(plans: Iterable[Plan], out: Console | None = None) -> None:
    """kfin remove --all-stuck's plan: a line per finalizer, with its verdict and what kfin will do."""
    rows = []
    for p in plans:
        o = p.obj
        if p.refused:
            rows.append([o.namespace or "-", o.type.kind_display, o.name, "-", "-", f"refused: {p.refused}"])
            continue
        for c in p.choices:
            action = (f"refused: {c.refused}" if c.refused else "remove") if c.selected else "keep"
            rows.append(
                [o.namespace or "-", o.type.kind_display, o.name, c.finding.finalizer, c.finding.verdict.value, action]
            )
    plain_table(["NAMESPACE", "KIND", "NAME", "FINALIZER", "VERDICT", "ACTION"], rows, out)


def audit_table(records: Iterable[dict[str, Any]], out: Console | None = None) -> None:
    """kfin audit: a line per recorded change."""
    rows = []
    for r in records:
        o = r.get("object") or {}
        where = f"{o['namespace']}/" if o.get("namespace") else ""
        ref = f"{o.get('kind', '?')}/{where}{o.get('name', '?')}"
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
    plain_table(["TIME", "CONTEXT", "USER", "OBJECT", "REMOVED", "VERDICTS", "FORCED", "RESULT"], rows, out)


def catalog_table(entries: Iterable[CatalogEntry], out: Console | None = None) -> None:
    """kfin catalog: an entry per line, with the finalizers it covers and where its controller runs."""
    rows = [
        [
            e.name,
            e.project,
            ",".join(e.finalizers),
            e.controller.name,
            ",".join(e.controller.namespaces) or "-",
            Path(e.source).name,
        ]
        for e in entries
    ]
    plain_table(["NAME", "PROJECT", "FINALIZERS", "CONTROLLER", "NAMESPACES", "SOURCE"], rows, out)
