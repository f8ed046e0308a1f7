"""Work done in parallel threads that never holds up Ctrl-C.

`with ThreadPoolExecutor()` waits for every request in flight when the block is left, an interrupt
included: a slow list kept kfin running long after Ctrl-C. Here an interrupt cancels what has not
started and leaves the rest behind (kfin.commands.app then exits at once, without joining those threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def completed(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[tuple[T, Future[R]]]:
    """(item, its finished future) as each finishes. A single item runs in the calling thread: starting a
    thread for it cost about 1 ms on a busy interpreter, and explaining a scan's stuck objects makes several
    such calls (kfin.core.read.facts.Facts.prefetch of one type, the one context of
    kfin.core.explain.stuck.stuck_in)."""
    items = list(items)
    if len(items) == 1:
        yield items[0], _ran(fn, items[0])
        return
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = {pool.submit(fn, item): item for item in items}
        for future in as_completed(futures):
            yield futures[future], future
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def in_background(fn: Callable[[], R]) -> Future[R]:
    """fn() in a thread of its own, as a future: a daemon thread, so that neither Ctrl-C nor the interpreter's
    exit waits for a request nobody will read (kfin.api.connection asks for a list's next page with it)."""
    future: Future[R] = Future()

    def run() -> None:
        try:
            future.set_result(fn())
        except BaseException as error:  # the caller's to see, as a pool's future gives it
            future.set_exception(error)

    threading.Thread(target=run, daemon=True).start()
    return future


def _ran(fn: Callable[[T], R], item: T) -> Future[R]:
    """fn(item), run here, as the finished future a pool would give (its exception kept, not raised)."""
    future: Future[R] = Future()
    try:
        future.set_result(fn(item))
    except Exception as error:
        future.set_exception(error)
    return future


def ordered(fn: Callable[[T], R], items: Iterable[T], workers: int) -> list[R]:
    """fn(item) of every item, in the order of the items (an exception of fn is raised, as pool.map does)."""
    indexed = list(enumerate(items))
    results: list[Any] = [None] * len(indexed)
    for (index, _), future in completed(lambda pair: fn(pair[1]), indexed, workers):
        results[index] = future.result()
    return results
