"""A command's threads take shorter turns at the GIL (kfin/util/gilturns.py), and the interpreter's own interval is
set back afterwards: kfin runs inside other processes too (a test session, kfin mcp's host)."""

import sys

import pytest

from kfin.commands import app as cli
from kfin.util.gilturns import SHORT_TURN, short_gil_turns
from tests.runner import kfin


def test_the_interval_is_short_inside_and_set_back_after_even_on_error():
    before = sys.getswitchinterval()
    with pytest.raises(RuntimeError), short_gil_turns():
        assert sys.getswitchinterval() == pytest.approx(SHORT_TURN)
        raise RuntimeError("a failed read")
    assert sys.getswitchinterval() == before


def test_a_command_runs_with_short_turns(monkeypatch):
    """Issue 47: a scan's lists in flight wait on a thread that parses a page; with Python's 5 ms turns the
    next page of each was asked for later (kfin stuck -A 30-40 ms slower at 1,000 objects, bench/PROFILE.md)."""
    before = sys.getswitchinterval()
    seen = []
    monkeypatch.setattr(cli, "root_command", lambda: lambda **_: seen.append(sys.getswitchinterval()))
    kfin("version")
    assert seen == [pytest.approx(SHORT_TURN)] and sys.getswitchinterval() == before
