"""Machine-readable output: the JSON and YAML documents of -o json|yaml."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO


def dump(data: Any, fmt: str, stream: TextIO | None = None) -> None:
    """`data` as JSON or YAML on stdout (or `stream`)."""
    stream = stream or sys.stdout
    if fmt == "json":
        stream.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    elif fmt == "yaml":
        import yaml  # 20 ms: only for -o yaml

        stream.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    else:
        raise ValueError(f"unknown format {fmt}")
