"""`kfin stuck --watch`: the stuck objects as they change, until Ctrl-C, like `kubectl get -w`.

Every type is listed once and then watched (kfin.core.explain.watching, the machinery of `kfin serve`): the answer is
worked out again as soon as a change kfin can see arrives, and every --interval when the last answer read
what the watches do not keep.
What changed is shown: on a terminal the table redrawn, on a pipe one line per change (ADDED, MODIFIED,
DELETED).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from kfin.core.explain.stuck import RowKey, StuckObject, changes, row_key
from kfin.errors import KfinError
from kfin.model import Failure
from kfin.render import tables
from kfin.render.terminal import Console


def follow(
    console: Console,
    scan: Callable[[], tuple[list[StuckObject], list[Failure]]],
    next_due: Callable[[], None],
    every: float,
    wide: bool = False,
) -> None:
    """Until Ctrl-C: its KeyboardInterrupt goes on to exit 130, as `kubectl get -w` ends by the signal (exit 0
    would say the watch had finished). `next_due()` returns when the next answer is due. A failing answer is a
    warning, and the last one stays on screen; what could not be read is warned of when it changes."""
    terminal = console.stdout_isatty
    seen: dict[RowKey, StuckObject] = {}
    unread: list[str] = []
    first = True
    while True:
        try:
            rows, failures = scan()
        except KfinError as error:
            console.warn(f"cannot answer: {error.message} (kept the last answer; trying again in {every:g}s)")
            time.sleep(every)
            continue
        lines = [f.line() for f in failures]
        changed = changes(seen, rows)
        redrawn = terminal and bool(changed or first)
        if redrawn:
            _redraw(console, rows, every, wide, partial=bool(lines))
        elif not terminal:
            for event, row in changed:
                console.say(f"{event:<9}{row.obj.ref}  {row.verdict or '-'}  {row.blocker}")
            console.stdout.flush()
        if lines != unread or (redrawn and lines):  # a redraw clears the screen: say them again
            for line in lines:
                console.warn(line)
            unread = lines
        seen = {row_key(r): r for r in rows}
        first = False
        next_due()


def _redraw(console: Console, rows: list[StuckObject], every: float, wide: bool, partial: bool) -> None:
    screen = console.rich()
    screen.clear()
    stamp = datetime.now().strftime("%H:%M:%S")
    console.say(f"kfin stuck --watch: {len(rows)} stuck at {stamp}; watching (Ctrl-C stops)")
    if rows:
        tables.stuck_table(console, rows, wide=wide, out=screen)
    else:  # never an all-clear that is not one
        console.say(
            "No stuck objects among what kfin could read (see the warnings)." if partial else "No stuck objects."
        )
