"""kfin stuck's outputs, a function per -o format: the root causes and the table, names, the StuckReport as JSON
or YAML, a JSONPath or custom columns over it, and the Prometheus exposition."""

from __future__ import annotations

import time
from collections.abc import Callable

from msgspec import Struct, field

from kfin.core.explain.roots import root_causes
from kfin.core.explain.stuck import StuckObject, report
from kfin.model import JSON, Inventory
from kfin.render import data, metrics, tables, templates
from kfin.render.terminal import Console


class Scan(Struct):
    """What one kfin stuck found, as every output shows it."""

    rows: list[StuckObject]
    inventories: list[Inventory]
    webhooks: dict[str, int] = field(default_factory=dict)  # a webhook failing closed -> how many it gates
    related: list[JSON] = field(default_factory=list)  # storage problems beside the stuck objects
    started: float = 0.0  # time.monotonic() when the scan began (the exposition's scan duration)


class OutputOptions(Struct, frozen=True):
    """How kfin stuck's report is written: with or without headers, and at most how many info series -o prometheus
    gives."""

    no_headers: bool = False
    max_info_series: int = 500


def show(console: Console, fmt: str, scan: Scan, options: OutputOptions) -> None:
    """`scan` in the -o format `fmt` (already checked against kfin stuck's formats)."""
    name = fmt.partition("=")[0] + ("=" if "=" in fmt else "")
    OUTPUTS.get(name, _table)(console, fmt, scan, options)


def _prometheus(console: Console, fmt: str, scan: Scan, options: OutputOptions) -> None:
    elapsed = time.monotonic() - scan.started
    families = metrics.stuck_families(scan.rows, scan.inventories, elapsed, time.time(), options.max_info_series)
    console.write(metrics.exposition(families))


def _document(console: Console, fmt: str, scan: Scan, options: OutputOptions) -> None:
    webhooks = [{"problem": why, "stuckObjects": count} for why, count in scan.webhooks.items()]
    data.dump(dict(report(scan.rows, scan.inventories), webhooks=webhooks, related=scan.related), fmt, console.stdout)


def _jsonpath(console: Console, fmt: str, scan: Scan, options: OutputOptions) -> None:
    console.write(templates.jsonpath(fmt.partition("=")[2], report(scan.rows, scan.inventories)))


def _custom_columns(console: Console, fmt: str, scan: Scan, options: OutputOptions) -> None:
    headers, cells = templates.custom_columns(fmt.partition("=")[2], [row.to_dict() for row in scan.rows])
    tables.plain_table(console, headers, cells, no_headers=options.no_headers)


def _names(console: Console, fmt: str, scan: Scan, options: OutputOptions) -> None:
    for row in scan.rows:
        console.say(f"{row.obj.type.name_prefix}/{row.obj.name}")


def _table(console: Console, fmt: str, scan: Scan, options: OutputOptions) -> None:
    rows, inventories = scan.rows, scan.inventories
    if not rows:
        _nothing_stuck(console, inventories)
        return
    several = len(inventories) > 1
    if not options.no_headers:  # the few things to deal with first, then the many objects they hold
        tables.root_causes_block(console, root_causes(rows), len(rows), show_context=several)
    tables.stuck_table(
        console,
        rows,
        wide=fmt == "wide",
        show_context=several,
        show_namespace=not all(inv.namespace for inv in inventories),  # as kubectl: not for one namespace
        no_headers=options.no_headers,
    )


def _nothing_stuck(console: Console, inventories: list[Inventory]) -> None:
    scopes = {inv.namespace for inv in inventories}
    where = f"in namespace {scopes.pop()}" if len(scopes) == 1 and None not in scopes else "in the cluster"
    unread = sum(len(inv.failures) for inv in inventories)
    if unread:  # never an all-clear that is not one
        console.note(
            f"No stuck objects among what kfin could read {where}; {unread} could not be read (see the "
            "warnings above): the scan is incomplete."
        )
    else:
        console.note(f"No stuck objects found {where}.")


OUTPUTS: dict[str, Callable[[Console, str, Scan, OutputOptions], None]] = {
    "prometheus": _prometheus,
    "json": _document,
    "yaml": _document,
    "jsonpath=": _jsonpath,
    "custom-columns=": _custom_columns,
    "name": _names,
    "table": _table,
    "wide": _table,
}
