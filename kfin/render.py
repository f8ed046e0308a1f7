"""Rendering of plain results: JSON and YAML dumps (tables live with their commands' renderers)."""

from __future__ import annotations

import json
import sys


def dump(data, fmt: str, stream=None) -> None:
    stream = stream or sys.stdout
    if fmt == "json":
        stream.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    elif fmt == "yaml":
        import yaml
        stream.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    else:
        raise ValueError(f"unknown format {fmt}")
