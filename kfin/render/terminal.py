"""The terminal: consoles (colour and width on a terminal, plain in a pipe), stdout that a reader may
close, warnings and progress on stderr."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from kfin.model import Failure
from kfin.render.layout import spans
from kfin.util.text import counted, one_line, printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

# Below this width a panel folds every cell to a few characters: a plain layout reads better.
NARROW_PANEL = 60
MIN_WIDTH = 30  # narrower, every word would be broken: lines this long still wrap on the smallest terminal
# Wider, a terminal's lines are padded out to nothing anyone reads: COLUMNS=99999999 made explain's panels
# take 3 GB. Tables piped are as wide as their rows (console's piped_width), never padded.
MAX_WIDTH = 1000


def text(value: object) -> Text:
    """Cluster data for rich: a Text, so that `[link=...]` or `[bold]` in a name stays literal, with
    control characters shown, never sent."""
    from rich.text import Text  # rich: 50 ms to import, only for what is drawn

    return Text(printable(value))


def markup_safe(value: object) -> str:
    """Cluster data inside a markup string: escaped, control characters shown."""
    from rich.markup import escape

    return escape(printable(value))


def columns_setting() -> int | None:
    """$COLUMNS when it is a usable width (at most MAX_WIDTH), else None (COLUMNS=abc or 0 is ignored, as a
    shell would)."""
    value = os.environ.get("COLUMNS", "").strip()
    return min(int(value), MAX_WIDTH) if value.isdigit() and int(value) > 0 else None


def console(stderr: bool = False, piped_width: int = 100_000) -> Console:
    """A rich Console: colour and the terminal's width on a terminal (NO_COLOR honoured), plain when
    piped, and as wide as `piped_width` there (tables: unwrapped lines, like kubectl's output)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        # shutil reads $COLUMNS too, unbounded: bounded here
        width = min(columns_setting() or shutil.get_terminal_size((100, 25)).columns, MAX_WIDTH)
        if os.environ.get("NO_COLOR"):  # no-color.org: no escapes at all, bold and underline included
            return Console(file=stream, highlight=False, width=max(width, MIN_WIDTH), no_color=True, color_system=None)
        return Console(file=stream, highlight=False, width=max(width, MIN_WIDTH))
    return Console(file=stream, highlight=False, width=max(piped_width, MIN_WIDTH), no_color=True, color_system=None)


class QuietPipe:
    """stdout whose reader may go away (`kfin ... | head -1`): later writes are dropped instead of
    raising, so the command still prints its warnings on stderr and exits with its own code."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._detach()
            return len(text)

    def flush(self) -> None:
        if self.broken:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._detach()

    def _detach(self) -> None:
        self.broken = True
        try:  # the interpreter flushes stdout at exit: point the descriptor at /dev/null first
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def warn(message: str) -> None:
    """One `warning:` line on stderr."""
    print(f"warning: {one_line(message)}", file=sys.stderr)


FAILURES_LISTED = 3  # more reads than this failing for one reason are one summary line, listed with -v


def warn_failures(
    failures: Iterable[Failure], prefix: str = "", unrelated: Iterable[Failure] = (), listed: bool = False
) -> None:
    """A warning for each thing that could not be read; `unrelated`: those that cannot change the answer. Many
    resource types unread for one reason (a user who may only read some: 50 forbidden lists) are one line before
    the answer, unless `listed` (-v): the answer comes first to the eye, and -o json holds each failure."""
    _warn_grouped(list(failures), prefix, "", listed)
    _warn_grouped(list(unrelated), prefix, " (unrelated to what was asked: the answer is complete)", listed)


def _warn_grouped(failures: list[Failure], prefix: str, suffix: str, listed: bool) -> None:
    reads: dict[str, list[Failure]] = {}
    for failure in failures:
        if failure.what in ("list", "get"):
            reads.setdefault(failure.reason, []).append(failure)
    for failure in failures:
        same = reads.get(failure.reason, []) if failure.what in ("list", "get") else []
        if listed or len(same) <= FAILURES_LISTED:
            warn(prefix + failure.line() + suffix)
        elif failure is same[0]:
            types = {f.target.partition(" in namespace ")[0] for f in same}
            reason = " ".join(re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", failure.reason)).lower() or "error"
            warn(f"{prefix}could not read {counted(len(types), 'resource type')} ({reason}){suffix}; -v for the list")


def log(message: str) -> None:
    """A line of a long-running server's log (kfin serve, kfin guard): on stderr, after the UTC time."""
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {message}", file=sys.stderr, flush=True)


def say(message: str, err: bool = False, hanging: int = 0) -> None:
    """A line of kfin's own text around cluster data (which is made printable). On a terminal it wraps at
    the terminal's width between words, continued `hanging` columns in; a pipe gets it on one line."""
    stream = sys.stderr if err else sys.stdout
    shown = printable(message)
    width = console(stderr=err).width if stream.isatty() else 0
    if width and len(shown) > width:
        first = spans(shown, width)[0]
        rest = shown[first[1] :].lstrip()
        lines = [shown[slice(*first)]] + [" " * hanging + rest[a:b] for a, b in spans(rest, width - hanging)]
        shown = "\n".join(lines)
    print(shown, file=stream)


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr while scanning, only on a terminal; yields a (done, total) callback."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)
