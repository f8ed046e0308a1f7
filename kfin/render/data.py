"""Machine-readable output: the JSON and YAML documents of -o json|yaml."""

from __future__ import annotations

import json
from typing import Any, TextIO

import msgspec


def dump(data: Any, fmt: str, stream: TextIO) -> None:
    """`data` as JSON or YAML on `stream` (a console's stdout)."""
    if fmt == "json":
        stream.write(indented(data) + "\n")
    elif fmt == "yaml":
        import yaml  # 20 ms: only for -o yaml

        stream.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    else:
        raise ValueError(f"unknown format {fmt}")


def json_line(data: Any, stream: TextIO) -> None:
    """`data` as one line of JSON (JSON lines: one document a line, each written whole at once)."""
    stream.write(json.dumps(data) + "\n")
    stream.flush()


def indented(data: Any) -> str:
    """json.dumps(data, indent=2), byte for byte, in a quarter of its time: Python's C encoder does not indent (its
    pure-Python one does, 12 ms for kfin stuck's 314 objects at 50,000), so the compact text is indented by
    msgspec, which keeps every token as written (escapes, numbers)."""
    compact = json.dumps(data)
    try:
        return msgspec.json.format(compact, indent=2)
    except msgspec.DecodeError:  # NaN or Infinity, which Python writes and JSON has not
        return json.dumps(data, indent=2)
