"""The terminal: the Console a command is handed (its streams, whether each is a terminal, colour, width), the rich
consoles drawn on it (colour and width on a terminal, plain in a pipe), stdout that a reader may close, warnings
and progress on stderr."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from kfin.model import Failure
from kfin.render.layout import spans
from kfin.util.text import counted, one_line, printable

if TYPE_CHECKING:
    from rich.console import Console as RichConsole
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


def columns_setting(environ: Mapping[str, str]) -> int | None:
    """$COLUMNS when it is a usable width (at most MAX_WIDTH), else None (COLUMNS=abc or 0 is ignored, as a
    shell would)."""
    value = environ.get("COLUMNS", "").strip()
    return min(int(value), MAX_WIDTH) if value.isdigit() and int(value) > 0 else None


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


FAILURES_LISTED = 3  # more reads than this failing for one reason are one summary line, listed with -v


@dataclass(frozen=True)
class Console:
    """Where a command writes, made once when it starts and handed to it, as httpie's Environment: the streams,
    whether each is a terminal, whether colour is wanted, the terminal's width. Commands and what they draw write
    only here, so a test hands one of StringIO streams that says it is a terminal of a given width.

    `width`: the terminal's columns ($COLUMNS first, as a shell sets it), bounded to MIN_WIDTH..MAX_WIDTH.
    `columns`: $COLUMNS alone (None when unset or unusable): what a pipe is laid out for where a width matters."""

    stdout: TextIO
    stderr: TextIO
    stdin: TextIO
    stdout_isatty: bool = False
    stderr_isatty: bool = False
    stdin_isatty: bool = False
    colour: bool = True  # False with NO_COLOR (no-color.org): no escapes at all, bold and underline included
    width: int = 100
    columns: int | None = None

    @classmethod
    def of(cls, stdout: TextIO, stderr: TextIO, stdin: TextIO, environ: Mapping[str, str] | None = None) -> Console:
        """The console of these streams, as the process's environment and terminal say."""
        environ = os.environ if environ is None else environ
        columns = columns_setting(environ)
        # shutil reads $COLUMNS too, unbounded: bounded here
        measured = columns or shutil.get_terminal_size((100, 25)).columns
        return cls(
            stdout,
            stderr,
            stdin,
            _isatty(stdout),
            _isatty(stderr),
            _isatty(stdin),
            colour=not environ.get("NO_COLOR"),
            width=max(min(measured, MAX_WIDTH), MIN_WIDTH),
            columns=columns,
        )

    @classmethod
    def of_process(cls) -> Console:
        """The console of the process's streams as they are when a command starts (a test's or kfin mcp's capture,
        when one is in place): the one place below the entry point that reads sys.stdout, sys.stderr, sys.stdin."""
        return cls.of(sys.stdout, sys.stderr, sys.stdin)

    def rich(self, stderr: bool = False, piped_width: int = 100_000) -> RichConsole:
        """A rich Console on stdout (or stderr): colour and the terminal's width on a terminal (unless NO_COLOR),
        plain when piped, and as wide as `piped_width` there (tables: unwrapped lines, like kubectl's output)."""
        from rich.console import Console as RichConsole  # rich: 50 ms to import, only for what is drawn

        stream, tty = (self.stderr, self.stderr_isatty) if stderr else (self.stdout, self.stdout_isatty)
        terminal = True if tty else None  # None: rich's own reading of the stream (and of FORCE_COLOR)
        if tty and self.colour:
            return RichConsole(file=stream, highlight=False, width=self.width, force_terminal=terminal)
        width = self.width if tty else max(piped_width, MIN_WIDTH)
        return RichConsole(
            file=stream, highlight=False, width=width, no_color=True, color_system=None, force_terminal=terminal
        )

    def write(self, text: str) -> None:
        """Text on stdout as it is (a document, an exposition, a picture's SVG)."""
        self.stdout.write(text)

    def flush(self) -> None:
        """What was written to stdout and stderr, out now (before a question, a wait, or a live redraw)."""
        for stream in (self.stdout, self.stderr):
            stream.flush()

    def say(self, message: str, err: bool = False, hanging: int = 0) -> None:
        """A line of kfin's own text around cluster data (which is made printable). On a terminal it wraps at
        the terminal's width between words, continued `hanging` columns in; a pipe gets it on one line."""
        stream, tty = (self.stderr, self.stderr_isatty) if err else (self.stdout, self.stdout_isatty)
        shown = printable(message)
        width = self.width if tty else 0
        if width and len(shown) > width:
            first = spans(shown, width)[0]
            rest = shown[first[1] :].lstrip()
            lines = [shown[slice(*first)]] + [" " * hanging + rest[a:b] for a, b in spans(rest, width - hanging)]
            shown = "\n".join(lines)
        stream.write(shown + "\n")

    def note(self, message: str) -> None:
        """One line on stderr as it is (no wrapping): what kfin did or did not do, beside the answer."""
        self.stderr.write(message + "\n")

    def warn(self, message: str) -> None:
        """One `warning:` line on stderr."""
        self.stderr.write(f"warning: {one_line(message)}\n")

    def error(self, message: str) -> None:
        """One `error:` line on stderr: what failed, when the command goes on to its exit code itself."""
        self.stderr.write(f"error: {one_line(message)}\n")

    def log(self, message: str) -> None:
        """A line of a long-running server's log (kfin serve, kfin guard): on stderr, after the UTC time."""
        self.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {message}\n")
        self.stderr.flush()

    def warn_failures(
        self, failures: Iterable[Failure], prefix: str = "", unrelated: Iterable[Failure] = (), listed: bool = False
    ) -> None:
        """A warning for each thing that could not be read; `unrelated`: those that cannot change the answer. Many
        resource types unread for one reason (a user who may only read some: 50 forbidden lists) are one line
        before the answer, unless `listed` (-v): the answer comes first to the eye, and -o json holds each
        failure."""
        self._warn_grouped(list(failures), prefix, "", listed)
        self._warn_grouped(list(unrelated), prefix, " (unrelated to what was asked: the answer is complete)", listed)

    def _warn_grouped(self, failures: list[Failure], prefix: str, suffix: str, listed: bool) -> None:
        reads: dict[str, list[Failure]] = {}
        for failure in failures:
            if failure.what in ("list", "get"):
                reads.setdefault(failure.reason, []).append(failure)
        for failure in failures:
            same = reads.get(failure.reason, []) if failure.what in ("list", "get") else []
            if listed or len(same) <= FAILURES_LISTED:
                self.warn(prefix + failure.line() + suffix)
            elif failure is same[0]:
                types = {f.target.partition(" in namespace ")[0] for f in same}
                reason = " ".join(re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", failure.reason)).lower() or "error"
                self.warn(
                    f"{prefix}could not read {counted(len(types), 'resource type')} ({reason}){suffix}; -v for the list"
                )

    @contextmanager
    def progress_bar(self, label: str) -> Iterator[Callable[[int, int], None] | None]:
        """A progress bar on stderr while scanning, only on a terminal; yields a (done, total) callback."""
        if not self.stderr_isatty:
            yield None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=self.rich(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task(label, total=None)
            yield lambda done, total: bar.update(task, completed=done, total=total)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed stream, or one that is no file
        return False
