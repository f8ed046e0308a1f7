"""The -o formats of each command, and --verdict's values: what each accepts, and what Tab offers."""

from __future__ import annotations

PLAIN = ("table", "json", "yaml")
OUTPUTS: dict[str, tuple[str, ...]] = {
    "stuck": ("table", "wide", "json", "yaml", "name", "prometheus", "jsonpath=", "custom-columns="),
    "graph": ("tree", "json", "dot", "mermaid", "graphml", "svg", "png"),
    "explain": PLAIN,
    "delete": ("table", "json"),  # json: JSON lines, one per answer
    "preflight": (*PLAIN, "dot", "svg", "png"),  # the pictures: of a teardown (-f, helm RELEASE) only
    "version": PLAIN,
    "audit": PLAIN,
    "catalog": PLAIN,
    "report": ("html",),
}
# kfin.core.explain.causes.Verdict's values (tests/commands/test_completion.py keeps them equal), without its import on
# every Tab
VERDICTS = ("HOLDING", "WAITING", "STALLED", "ORPHANED", "UNKNOWN", "BLOCKED")
