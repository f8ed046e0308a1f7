"""kfin.util.parallel: work in threads that never holds up Ctrl-C; one piece of work runs where it is asked."""

import threading

import pytest

from kfin.util.parallel import completed, ordered


def test_a_single_item_runs_in_the_calling_thread_and_keeps_its_error_in_the_future():
    """Issue 47: explaining a scan's stuck objects asks for one type at a time, several times; each started a
    thread of its own (about 1 ms on a busy interpreter) only to wait for it."""
    ran_in = []

    def fail(item):
        ran_in.append(threading.current_thread())
        raise ValueError(item)

    [(item, future)] = list(completed(fail, ["only"], 8))
    assert item == "only" and ran_in == [threading.current_thread()]
    with pytest.raises(ValueError, match="only"):
        future.result()
    assert ordered(lambda item: item * 2, [21], 8) == [42]


def test_several_items_run_beside_each_other():
    barrier = threading.Barrier(3, timeout=5)  # opens only when all three run at once

    def held(item):
        barrier.wait()
        return threading.current_thread()

    threads = ordered(held, [1, 2, 3], 3)
    assert threading.current_thread() not in threads and len(set(threads)) == 3
