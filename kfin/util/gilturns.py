"""Shorter turns at the GIL while a command runs: kfin's threads mostly wait on the network."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

# Python's default is 5 ms. A scan keeps 16 lists in flight while a thread parses a page: a thread whose answer
# has arrived waited up to 5 ms for that one to let go before it could ask for its next page, and the server sat
# idle meanwhile. At 0.5 ms, `kfin stuck -A` of 1,000 objects on a real kube-apiserver ended 30-40 ms sooner
# (bench/PROFILE.md); a bare fetch, which parses nothing, gains nothing.
SHORT_TURN = 0.0005


@contextmanager
def short_gil_turns(seconds: float = SHORT_TURN) -> Iterator[None]:
    """The interpreter's switch interval set to `seconds` for the block, and set back after it."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(before)
