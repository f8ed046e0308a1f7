"""Text that goes to the terminal: cluster data made safe to print, and stdout that a reader may close."""

from __future__ import annotations

import os
import re
import sys

# Control characters but tab and newline, and lone surrogates (bytes that were not UTF-8).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _visible(match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value, one_line: bool = False) -> str:
    """Cluster data as text that cannot steer a terminal: control characters (escape sequences
    included) are shown as \\xNN, and with `one_line` tabs and newlines too. Rich markup in it is
    neutralised by printing it as Text, never as a markup string (see kfin.render.tables.text)."""
    return (CONTROL_ALL if one_line else CONTROL).sub(_visible, str(value))


def one_line(message: str) -> str:
    """An error message on one line, safe to print."""
    return printable(" ".join(part.strip() for part in str(message).splitlines() if part.strip()))


class QuietPipe:
    """stdout whose reader may go away (`kfin ... | head -1`): later writes are dropped instead of
    raising, so the command still prints its warnings on stderr and exits with its own code."""

    def __init__(self, stream):
        self._stream = stream
        self.broken = False

    def write(self, text):
        if self.broken:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._detach()
            return len(text)

    def flush(self):
        if self.broken:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._detach()

    def _detach(self):
        self.broken = True
        try:  # the interpreter flushes stdout at exit: point the descriptor at /dev/null first
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name):
        return getattr(self._stream, name)


def warn(message: str) -> None:
    """One `warning:` line on stderr."""
    print(f"warning: {one_line(message)}", file=sys.stderr)


def warn_failures(failures, prefix: str = "") -> None:
    """A warning for each thing that could not be read."""
    for failure in failures:
        warn(prefix + failure.line())


def say(message: str, err: bool = False) -> None:
    """A line of kfin's own text around cluster data (which is made printable)."""
    print(printable(message), file=sys.stderr if err else sys.stdout)
