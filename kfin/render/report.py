"""`kfin report -o html`: one self-contained page for an incident ticket. No script, no network: the graph is
Graphviz's SVG inline (a text tree without Graphviz), every piece of cluster data escaped as HTML."""

from __future__ import annotations

import html
import re
import shutil
from datetime import UTC, datetime

from kfin import __version__
from kfin.core.explain.causes import Action
from kfin.core.explain.report import Report, ReportEntry
from kfin.core.explain.roots import RootCause
from kfin.render.explanation import VERDICT_STYLE, verdict_colour
from kfin.render.graph import heading, picture, plain_tree
from kfin.util.durations import format_age
from kfin.util.text import printable

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:80em;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left;
vertical-align:top}th{background:#f4f4f4}code,pre{font:13px ui-monospace,monospace}pre{background:#f8f8f8;
padding:.5em;overflow:auto}.graph{overflow-x:auto}.graph svg{max-width:100%;height:auto}.warn{color:#a60}
""" + "".join(f".{verdict}{{color:{verdict_colour(verdict)}}}" for verdict in VERDICT_STYLE)


def _e(value: object) -> str:
    """Cluster data in HTML: control characters shown, markup escaped."""
    return html.escape(printable(value))


def _verdict(value: str | None) -> str:
    shown = value or "-"
    return f'<span class="{_e(shown)}">{_e(shown)}</span>'


SMALLEST_TEXT_PX = 11  # the graph shrinks to fit the page, never below this (it scrolls sideways instead)


def _graph(report: Report, title: str) -> str:
    if report.graph.number_of_nodes() == 0:
        return "<p>Nothing is stuck: no blocking graph.</p>"
    if shutil.which("dot"):
        inventories = report.inventories
        report.graph.graph.update(
            heading(
                title.removeprefix("Stuck in Terminating: "),
                ", ".join(inv.context for inv in inventories if inv.context),
                inventories[0].observed_at if inventories else None,
            )
        )
        svg = picture(report.graph, "svg").decode()
        svg = re.sub(r"^.*?(<svg\b)", r"\1", svg, count=1, flags=re.S)  # no XML prolog or DOCTYPE inline
        return f'<div class="graph" id="graph">{_readable(svg)}</div>'
    return f'<pre id="graph">{_e(plain_tree(report.graph))}</pre><p>(Install Graphviz to draw it.)</p>'


def _readable(svg: str) -> str:
    """Graphviz's SVG with a least width: scaled to the page's width, its smallest text stays SMALLEST_TEXT_PX."""
    width = re.search(r'<svg width="([\d.]+)pt"', svg)
    sizes = [float(size) for size in re.findall(r'<text [^>]*font-size="([\d.]+)"', svg)]
    if width is None or not sizes:
        return svg
    # width and font sizes are both in points: the ratio is the page's pixels at the least scale
    least = float(width.group(1)) * SMALLEST_TEXT_PX / min(sizes)
    return svg.replace("<svg ", f'<svg style="min-width:{least:.0f}px" ', 1)


def _action(action: Action) -> str:
    """One action of a plan's step: its command in a block of its own, to copy whole, its condition and note below
    (an action outside kubectl is its note)."""
    if action.command is None:
        return f"{_e(action.text)}<br>"
    lines = [f"<b>when:</b> {_e(action.when)}"] if action.when else []
    lines += [f"<b>note:</b> {_e(action.note)}"] if action.note else []
    return f'<pre class="command"><code>{_e(action.command)}</code></pre>' + "".join(f"{line}<br>" for line in lines)


def _entry(number: int, entry: ReportEntry, roots: list[RootCause]) -> str:
    o, row = entry.row.obj, entry.row
    parts = [f'<h3 id="o{number}">{_e(o.ref)} — Terminating for {_e(format_age(row.terminating_seconds))}</h3>']
    for f in entry.explanation.findings:
        rows = [
            ("Verdict", _verdict(f.verdict.value)),
            ("Family", _e(f"{f.family}: protects {f.protects}")),
            ("Removed by", _e(f.controller)),
            ("Now", _e(f.condition) + "".join(f"<br>– {_e(line)}" for line in f.evidence)),
            ("Safe fix", _e(f.fix)),
            ("Risk if forced", _e(f.risk)),
        ] + ([("Command", f"<code>{_e(f.remove_command)}</code>")] if f.remove_command else [])
        if f.infrastructure:  # the cost of forcing it, first: what outside the cluster it guards
            rows.insert(0, ("Guards", _e(f"infrastructure outside the cluster: {f.infrastructure}")))
        title = f.finalizer or f"{f.family} (no finalizer)"
        parts.append(f"<table><caption><code>{_e(title)}</code></caption>")
        parts += [f"<tr><th>{label}</th><td>{value}</td></tr>" for label, value in rows]
        parts.append("</table>")
    held_by = [(number, cause) for number, cause in enumerate(roots) if any(r is row for r in cause.holds)]
    if held_by:  # its plan is its root causes' steps: given once each, above, not again for every object
        parts.append(
            "<p>Held by "
            + ", ".join(f'<a href="#r{number}">root cause {number + 1}: {_e(c.label)}</a>' for number, c in held_by)
            + ".</p>"
        )
    return "\n".join(parts)


def _roots(report: Report) -> list[str]:
    """Each root cause once: what it is, the stuck objects it holds (linked), and the step that frees them."""
    if not report.roots:
        return []
    number_of = {id(entry.row): number for number, entry in enumerate(report.entries)}
    parts = [
        f"<h2>Root causes</h2><p>{len(report.roots)} root cause{'s' if len(report.roots) != 1 else ''} hold the "
        f"{len(report.entries)} stuck object{'s' if len(report.entries) != 1 else ''}; kfin runs only "
        "<code>kfin remove</code>, the other steps are yours:</p>",
        '<ol id="roots">',
    ]
    for number, cause in enumerate(report.roots):
        where = f"[{cause.context}] " if len(report.inventories) > 1 and cause.context else ""
        held = ", ".join(
            f'<a href="#o{number_of[id(row)]}">{_e(row.obj.ref)}</a>' if id(row) in number_of else _e(row.obj.ref)
            for row in cause.holds
        )
        step = "".join(_action(a) for a in cause.step.actions) if cause.step is not None else ""
        parts.append(
            f'<li id="r{number}"><b>{_e(where + cause.label)}</b> {_verdict(cause.verdict)}: {_e(cause.evidence)}'
            + (f"<br>holds {len(cause.holds)}: {held}" if held else "")  # a root cause never holds itself
            + f"{step and '<br>' + step}</li>"
        )
    parts.append("</ol>")
    return parts


def page(report: Report, title: str) -> str:
    observed = report.inventories[0].observed_at if report.inventories else datetime.now(UTC)
    failures = [(inv.context, f) for inv in report.inventories for f in inv.failures]
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        'img-src data:">',
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>Observed {_e(observed.strftime('%Y-%m-%d %H:%M:%S UTC'))} by kfin {_e(__version__)}; "
        + ", ".join(f"context <code>{_e(inv.context or '-')}</code>" for inv in report.inventories)
        + ".</p>",
    ]
    if failures:
        head.append('<p class="warn" id="incomplete"><b>Incomplete:</b> kfin could not read:</p><ul class="warn">')
        head += [f"<li>{_e(context + ': ' if context else '')}{_e(f.line())}</li>" for context, f in failures]
        head.append("</ul>")
    if not report.entries:
        head.append("<p>No stuck objects among what kfin read.</p>" if failures else "<p>No stuck objects.</p>")
    table = [
        '<h2>Stuck objects</h2><table id="stuck"><tr><th>Namespace</th><th>Kind</th><th>Name</th>'
        "<th>Terminating</th><th>Verdict</th><th>Finalizers</th><th>Blocker</th></tr>"
    ]
    for number, entry in enumerate(report.entries):
        row, o = entry.row, entry.row.obj
        table.append(
            f"<tr><td>{_e(o.namespace or '-')}</td><td>{_e(o.type.kind_display)}</td>"
            f'<td><a href="#o{number}">{_e(o.name)}</a></td><td>{_e(format_age(row.terminating_seconds))}</td>'
            f"<td>{_verdict(row.verdict)}</td><td>{_e(', '.join(row.finalizers) or '<none>')}</td>"
            f"<td>{_e(row.blocker)}</td></tr>"
        )
    table.append("</table>")
    body = _roots(report) + (table if report.entries else [])
    body += ["<h2>What waits for what</h2>", _graph(report, title)]
    body += ["<h2>Each stuck object</h2>", *(_entry(n, e, report.roots) for n, e in enumerate(report.entries))]
    return "\n".join(head + body + ["</body></html>", ""])
