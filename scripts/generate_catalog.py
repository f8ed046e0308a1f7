"""Write kfin/data/catalog.json, the shipped catalog as kfin reads it, from kfin/data/catalog.yaml (the one to edit).

    python scripts/generate_catalog.py [OUTPUT_FILE]

Every command that explains a custom finalizer reads the shipped catalog: as YAML that was 12 ms of parsing even
with libyaml's loader (bench/PROFILE.md, issue 47), as JSON well under one. tests/core/read/test_catalog.py regenerates it
and fails when the committed file is out of date; the YAML stays the source, with its comments and its schema.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "kfin" / "data" / "catalog.yaml"
TARGET = ROOT / "kfin" / "data" / "catalog.json"


def generated() -> str:
    document = yaml.safe_load(SOURCE.read_text(encoding="utf-8"))
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else TARGET
    target.write_text(generated(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
