"""The audit log of applied finalizer removals: JSON lines, appended, never rewritten.

Removed finalizers cannot be put back on a Terminating object (the API server forbids adding
finalizers once deletion started): the log is a record of what was done, not a way to undo it.
kfin checks that the log can be appended to before its first write to a cluster, so that no change
goes unrecorded because of a full disk or a wrong path found too late.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from kfin.errors import KfinError, UsageError
from kfin.model import KubeObject


class AuditError(KfinError):
    """The audit log cannot be appended to (exit 9)."""


def default_path() -> Path:
    if os.environ.get("KFIN_AUDIT_LOG"):
        return Path(os.environ["KFIN_AUDIT_LOG"])
    state = os.environ.get("XDG_STATE_HOME") or str(Path("~/.local/state").expanduser())
    return Path(state) / "kfin" / "audit.jsonl"


def _open(path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as error:
        raise AuditError(f"cannot write the audit log {path}: {error.strerror or error}") from None


def check_writable(path: Path | None = None) -> Path:
    """Raises AuditError unless a record could be appended now (nothing is written)."""
    path = path or default_path()
    os.close(_open(path))
    return path


def append(record: dict[str, Any], path: Path | None = None) -> Path:
    path = path or default_path()
    line = json.dumps(record, sort_keys=False, separators=(",", ":")) + "\n"
    # One write of one line, opened for append: concurrent kfin runs interleave whole records.
    fd = _open(path)
    try:
        data = line.encode()
        if os.write(fd, data) != len(data):
            raise AuditError(f"cannot write the audit log {path}: short write (disk full?)")
    except OSError as error:
        raise AuditError(f"cannot write the audit log {path}: {error.strerror or error}") from None
    finally:
        os.close(fd)
    return path


def record(entry: dict[str, Any], path: Path) -> AuditError | None:
    """Append one record; the failure, if it could not be appended (the caller shows the record instead:
    a change that was applied is never left unrecorded)."""
    try:
        append(entry, path)
    except AuditError as error:
        return error
    return None


class AuditLog(Struct):
    records: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: list[tuple[int, str]] = field(default_factory=list)  # (line number, why)


def readded(obj: KubeObject, log: AuditLog) -> dict[str, str]:
    """Finalizers the object carries again although the audit log records that kfin removed them from it
    (the same uid): {finalizer: when it was removed}. Someone re-adds them: a live controller, or a tool."""
    out: dict[str, str] = {}
    for record in log.records:  # an interrupted removal's `removed` is what its read back found gone
        target = record.get("object") or {}
        if target.get("uid") != obj.uid or record.get("result") not in ("removed", "unchanged", "interrupted"):
            continue
        for finalizer in record.get("removed") or []:
            if finalizer in obj.finalizers:
                out[finalizer] = str(record.get("time") or "an unknown time")
    return out


def _record_problem(record: object) -> str | None:
    if not isinstance(record, dict):
        return "not a JSON object"
    shapes = {
        "object": dict,
        "verdicts": dict,
        "removed": list,
        "time": str,
        "result": str,
        "context": str,
        "user": str,
    }
    for key, kind in shapes.items():
        if record.get(key) is not None and not isinstance(record[key], kind):
            return f"its {key} is not a {kind.__name__}"
    if not all(isinstance(v, str) for v in record.get("removed") or []):
        return "its removed is not a list of names"
    return None


def read(path: Path | None = None, named: bool = False) -> AuditLog:
    """Every well-formed record; the numbers of the lines that are not, with why. A log `named` by the
    user must exist: the default one is only written at the first change, but a path that is not there
    is a mistake, never 'no removals recorded'."""
    path = path or default_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if named:
            raise UsageError(f"no audit log at {path}: the file does not exist") from None
        return AuditLog()
    except OSError as error:
        raise UsageError(f"cannot read the audit log {path}: {error.strerror or error}") from None
    log = AuditLog()
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            log.bad_lines.append((number, "not UTF-8 text"))
            continue
        except ValueError:
            log.bad_lines.append((number, "not JSON"))
            continue
        problem = _record_problem(record)
        if problem:
            log.bad_lines.append((number, problem))
        else:
            log.records.append(record)
    return log
