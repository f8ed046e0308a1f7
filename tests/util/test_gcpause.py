"""kfin pauses the cyclic garbage collector while it parses many objects, and always resumes it."""

import gc

import pytest

from kfin.util.gcpause import paused_gc


def test_collection_is_paused_inside_and_resumed_after_even_on_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with paused_gc():
            assert not gc.isenabled()
            with paused_gc():  # nested: the outer pause decides when collection resumes
                pass
            assert not gc.isenabled()
            raise RuntimeError("a failed read")
    assert gc.isenabled()


def test_a_scan_leaves_collection_on(fake, fake_kubeconfig):
    from tests.runner import kfin

    assert kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig)).code == 0
    assert gc.isenabled()


def test_a_command_runs_with_collection_paused(monkeypatch):
    """Building the owner graph of 50,000 objects grew faster than linearly with the collector on."""
    from kfin.commands import app as cli
    from tests.runner import kfin

    seen = []
    monkeypatch.setattr(cli, "root_command", lambda: lambda **_: seen.append(gc.isenabled()))
    kfin("version")
    assert seen == [False] and gc.isenabled()


def test_what_a_command_leaves_is_frozen_so_that_the_exit_does_not_walk_it(monkeypatch):
    """The interpreter's exit collects more than once: for a small scan that was ~50 ms of walking objects whose
    memory the OS takes back anyway (measured in bench/)."""
    from kfin.commands import app as cli
    from tests.runner import kfin

    kept = []
    monkeypatch.setattr(cli, "root_command", lambda: lambda **_: kept.append([[i] for i in range(1000)]))
    before = gc.get_freeze_count()
    kfin("version")
    assert gc.get_freeze_count() >= before + 1000 and gc.isenabled()
