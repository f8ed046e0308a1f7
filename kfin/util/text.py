"""Cluster data made safe to print: control characters shown, never sent (the one sanitiser every output uses)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

# Control characters but tab and newline, and lone surrogates (bytes that were not UTF-8).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, one_line: bool = False) -> str:
    """Cluster data as text that cannot steer a terminal: control characters (escape sequences
    included) are shown as \\xNN, and with `one_line` tabs and newlines too. Rich markup in it is
    neutralised by printing it as Text, never as a markup string (see kfin.render.terminal.text)."""
    return (CONTROL_ALL if one_line else CONTROL).sub(_visible, str(value))


def one_line(message: str) -> str:
    """An error message on one line, safe to print."""
    return printable(" ".join(part.strip() for part in str(message).splitlines() if part.strip()))


def redact_url(url: str) -> str:
    """A URL fit for a message: a password (or a whole user-info part) in it is never printed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a malformed URL>"
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc="<redacted>@" + host))


def first_few(names: list[str], limit: int = 3) -> str:
    """`a, b, c and 4 more`: every culprit counted, the first few named (JSON carries them all)."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def counted(count: int, noun: str, plural: str = "") -> str:
    """`1 object`, `2 objects`: a count with its noun in agreement (`plural` where adding an s is wrong)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
