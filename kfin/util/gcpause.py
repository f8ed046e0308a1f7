"""Pausing Python's cyclic garbage collector while kfin reads many objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc(freeze_after: bool = True) -> Iterator[None]:
    """Parsed JSON is millions of dicts and lists in no cycle, yet each few hundred allocations the
    collector walks the growing heap again: half of a 50,000-object scan's CPU, and what made graph
    building grow faster than the object count (measured in bench/). Reference counting still frees
    everything; collection resumes afterwards.

    `freeze_after`: what was read stays until the command ends, so set it aside (gc.freeze) rather
    than have the first collection afterwards walk all of it, which costs as much as the parse."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if freeze_after:
                gc.freeze()
            gc.enable()
