"""The audit log of applied finalizer removals: JSON lines, appended, never rewritten.

Removed finalizers cannot be put back on a Terminating object (the API server forbids adding
finalizers once deletion started): the log is a record of what was done, not a way to undo it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def default_path() -> Path:
    if os.environ.get("KFIN_AUDIT_LOG"):
        return Path(os.environ["KFIN_AUDIT_LOG"])
    state = os.environ.get("XDG_STATE_HOME") or str(Path("~/.local/state").expanduser())
    return Path(state) / "kfin" / "audit.jsonl"


def append(record: dict, path: Path | None = None) -> Path:
    path = path or default_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=False, separators=(",", ":")) + "\n"
    # One write of one line, opened for append: concurrent kfin runs interleave whole records.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return path


def read(path: Path | None = None) -> list[dict]:
    path = path or default_path()
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except ValueError:
                records.append({"time": "?", "result": f"unreadable line {number}"})
    return records
