"""kfin's result in the Prometheus text exposition format (version 0.0.4): for node_exporter's textfile
collector, a Pushgateway, or `kfin serve`'s /metrics.

Series and their cardinality:
- kfin_stuck_objects, kfin_stuck_seconds: one series per (context, namespace, group, kind, family,
  verdict) that has stuck objects; bounded by the number of stuck objects, usually a handful.
- kfin_stuck_object_info, kfin_stuck_object_seconds: one series each per stuck object, oldest first, at
  most `max_info` objects (the rest counted in kfin_stuck_object_info_omitted): names are unbounded, so
  they are capped.
- kfin_scan_failures: one series per (context, reason) that failed.
"""

from __future__ import annotations

import platform
from collections import defaultdict
from collections.abc import Sequence

from msgspec import Struct, field

from kfin import __version__
from kfin.core.explain.stuck import StuckObject
from kfin.model import JSON, Inventory
from kfin.util.text import printable

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DEFAULT_MAX_INFO = 500


class MetricFamily(Struct):
    """One metric family: HELP, TYPE and its samples ({labels}, value)."""

    name: str
    kind: str  # gauge or counter
    help: str
    samples: list[tuple[JSON, float]] = field(default_factory=list)

    def text(self) -> str:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]
        for labels, value in self.samples:
            inside = ",".join(f'{key}="{escape(value)}"' for key, value in labels.items())
            lines.append(f"{self.name}{{{inside}}} {number(value)}" if inside else f"{self.name} {number(value)}")
        return "\n".join(lines) + "\n"


def escape(value: object) -> str:
    """A label value: cluster data never carries control characters into it, and \\, " and newline are
    escaped as the format says."""
    text = printable("" if value is None else value, one_line=True)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def stuck_families(
    rows: Sequence[StuckObject],
    inventories: Sequence[Inventory],
    duration: float | None,
    finished_at: float,
    max_info: int = DEFAULT_MAX_INFO,
) -> list[MetricFamily]:
    """The families of one scan: its stuck objects, and the inventories it read."""
    counts: dict[tuple[str, str, str, str, str, str], int] = defaultdict(int)
    oldest: dict[tuple[str, str, str, str, str, str], float] = defaultdict(float)
    for row in rows:
        key = (
            row.context,
            row.obj.namespace,
            row.obj.type.group,
            row.obj.type.kind,
            row.family or "",
            row.verdict or "",
        )
        counts[key] += 1
        oldest[key] = max(oldest[key], row.terminating_seconds)
    names = ("context", "namespace", "group", "kind", "family", "verdict")
    objects = MetricFamily(
        "kfin_stuck_objects",
        "gauge",
        "Objects stuck in Terminating, by namespace, kind, the family of the finalizer or cause that "
        "holds them, and kfin's verdict on it (HOLDING, WAITING, STALLED, ORPHANED, BLOCKED, UNKNOWN).",
        [(dict(zip(names, key, strict=True)), count) for key, count in sorted(counts.items())],
    )
    seconds = MetricFamily(
        "kfin_stuck_seconds",
        "gauge",
        "How long the oldest object of each kfin_stuck_objects series has been Terminating, in seconds "
        "(since its deletion was requested).",
        [(dict(zip(names, key, strict=True)), age) for key, age in sorted(oldest.items())],
    )
    shown = rows[:max_info] if max_info >= 0 else rows
    info = MetricFamily(
        "kfin_stuck_object_info",
        "gauge",
        f"One series per stuck object, oldest first and at most {max_info} (kfin --max-info-series): its "
        "name and the root cause kfin found at the end of its blocking chain. Always 1.",
        [
            (
                {
                    "context": r.context,
                    "namespace": r.obj.namespace,
                    "group": r.obj.type.group,
                    "kind": r.obj.type.kind,
                    "name": r.obj.name,
                    "family": r.family or "",
                    "verdict": r.verdict or "",
                    "root_cause": r.root_cause,
                },
                1,
            )
            for r in shown
        ],
    )
    ages = MetricFamily(
        "kfin_stuck_object_seconds",
        "gauge",
        "How long each object of kfin_stuck_object_info has been Terminating, in seconds.",
        [
            (
                {
                    "context": r.context,
                    "namespace": r.obj.namespace,
                    "group": r.obj.type.group,
                    "kind": r.obj.type.kind,
                    "name": r.obj.name,
                },
                round(r.terminating_seconds),
            )
            for r in shown
        ],
    )
    deleted = MetricFamily(
        "kfin_stuck_object_deletion_timestamp_seconds",
        "gauge",
        "When the deletion of each object of kfin_stuck_object_info was requested (its deletionTimestamp, Unix "
        "time): a timestamp rather than an age, as Prometheus advises; time() - it is how long it has waited.",
        [
            (
                {
                    "context": r.context,
                    "namespace": r.obj.namespace,
                    "group": r.obj.type.group,
                    "kind": r.obj.type.kind,
                    "name": r.obj.name,
                },
                round(moment.timestamp()),
            )
            for r in shown
            if (moment := r.obj.deletion_timestamp) is not None
        ],
    )
    omitted = MetricFamily(
        "kfin_stuck_object_info_omitted",
        "gauge",
        "Stuck objects left out of kfin_stuck_object_info by its cap (--max-info-series).",
        [({}, len(rows) - len(shown))],
    )
    failures: dict[tuple[str, str], int] = defaultdict(int)
    for inv in inventories:
        for failure in inv.failures:
            failures[(inv.context, failure.reason)] += 1
    failed = MetricFamily(
        "kfin_scan_failures",
        "gauge",
        "What the last scan could not read, by reason (Forbidden, Timeout, ...): when not 0 the result "
        "is partial and objects of those types may be stuck unseen.",
        [({"context": c, "reason": r}, n) for (c, r), n in sorted(failures.items())],
    )
    scanned = MetricFamily(
        "kfin_scan_complete",
        "gauge",
        "1 when every listable type of the context could be read.",
        [({"context": inv.context}, inv.complete) for inv in inventories],
    )
    build = MetricFamily(
        "kfin_build_info",
        "gauge",
        "kfin's version and the Python it runs on. Always 1.",
        [({"version": __version__, "python": platform.python_version()}, 1)],
    )
    out = [objects, seconds, info, ages, deleted, omitted, failed, scanned, build]
    if duration is not None:
        out.append(
            MetricFamily(
                "kfin_scan_duration_seconds",
                "gauge",
                "How long the last scan took, in seconds.",
                [({}, round(duration, 3))],
            )
        )
    out.append(
        MetricFamily(
            "kfin_scan_timestamp_seconds",
            "gauge",
            "When the last scan finished (Unix time, seconds).",
            [({}, round(finished_at, 3))],
        )
    )
    return out


def exposition(families: list[MetricFamily]) -> str:
    return "".join(f.text() for f in families)
