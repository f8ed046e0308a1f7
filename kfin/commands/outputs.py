"""The -o formats of each command: what it accepts, and what Tab offers after -o."""

from __future__ import annotations

PLAIN = ("table", "json", "yaml")
OUTPUTS: dict[str, tuple[str, ...]] = {
    "stuck": ("table", "wide", "json", "yaml", "name", "prometheus", "jsonpath=", "custom-columns="),
    "graph": ("tree", "json", "dot", "mermaid", "graphml", "svg", "png"),
    "explain": PLAIN,
    "preflight": PLAIN,
    "version": PLAIN,
    "audit": PLAIN,
    "catalog": PLAIN,
    "report": ("html",),
}
