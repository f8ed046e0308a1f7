"""A fleet's worker processes: the contexts shared out among one process per core (kfin.core.explain.fleet).

Threads overlap the waiting on many API servers, but parsing their answers and explaining what is stuck hold
the GIL: twenty clusters in one process take twenty times one cluster's parsing. So the contexts are shared
out among one process per core; each scans its share with threads (kfin.core.explain.stuck.find_all) and sends back
its rows and Facts (without their connections, which are opened again here for what a command reads later).
A context that fails is reported, and the others go on.

kfin.core.explain.fleet loads this module by name only when a fleet is large enough for processes: multiprocessing
and concurrent.futures.process cost every other `kfin stuck` 7 ms of start-up (bench/PROFILE.md).
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from functools import partial

from msgspec.structs import replace

from kfin.api.connect import load_transport
from kfin.api.connection import Kube
from kfin.core.explain.stuck import StuckObject, find_all, oldest_first
from kfin.core.read.contexts import ProgressFactory, nothing_read
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.errors import KfinError

Share = tuple[list[StuckObject], list[Facts], dict[str, KfinError]]


def _scan_share(scope: Scope, kinds: tuple[str, ...], finalizer: str | None, older: float | None) -> Share:
    """In a worker: its contexts scanned with threads; Facts sent back without their connections."""
    failed: dict[str, KfinError] = {}
    rows, sources = find_all(scope, kinds, finalizer, older, failed=failed)
    for facts in sources:
        facts.reader.drop_connection()
    return rows, sources, failed


def _context() -> multiprocessing.context.BaseContext:
    """fork where it is safe (Linux, no other thread yet): nothing is imported again. Else spawn."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def find_in_processes(
    scope: Scope,
    workers: int,
    kinds: tuple[str, ...],
    finalizer: str | None,
    older: float | None,
    progress: ProgressFactory,
) -> tuple[list[StuckObject], list[Facts]]:
    """kfin.core.explain.stuck.find_all over scope's contexts, shared among `workers` processes."""
    try:
        return _in_processes(scope, list(scope.contexts), workers, kinds, finalizer, older, progress)
    except BrokenProcessPool:  # a worker died (killed, out of memory): the contexts are scanned here instead
        return find_all(scope, kinds, finalizer, older, progress)


def _in_processes(
    scope: Scope,
    contexts: list[str],
    workers: int,
    kinds: tuple[str, ...],
    finalizer: str | None,
    older: float | None,
    progress: ProgressFactory,
) -> tuple[list[StuckObject], list[Facts]]:
    shares = [contexts[n::workers] for n in range(workers)]
    rows: list[StuckObject] = []
    by_context: dict[str, Facts] = {}
    errors: dict[str, KfinError] = {}
    start = _context()
    if start.get_start_method() == "fork":
        load_transport()
    pool = ProcessPoolExecutor(workers, mp_context=start)
    finished = False
    try:
        futures = [
            pool.submit(_scan_share, replace(scope, contexts=tuple(share)), kinds, finalizer, older) for share in shares
        ]
        with progress(f"scanning {len(contexts)} contexts in {workers} processes") as report:
            done = 0
            for future in as_completed(futures):
                part_rows, part_sources, part_errors = future.result()
                rows += part_rows
                by_context.update({facts.inventory.context: facts for facts in part_sources})
                errors.update(part_errors)
                done += len(part_sources)
                if report:
                    report(done, len(contexts))
        finished = True
    finally:
        # Every share answered: the workers are joined (they are idle), so that no thread of the pool is left for
        # the interpreter's exit, whose handler then writes to the pool's closed pipe (a traceback, EBADF, on 3.11).
        # Interrupted or failed: left at once, as Ctrl-C must stop at once.
        pool.shutdown(wait=finished, cancel_futures=True)
    if len(errors) == len(contexts):
        raise nothing_read(contexts, errors)
    sources = [by_context[c] for c in contexts if c in by_context]
    for facts in sources:
        if facts.inventory.context not in errors:  # for what a command may read afterwards (culprits, webhooks)
            target = replace(scope.target, context=facts.inventory.context)
            facts.reader.connect_when_needed(partial(Kube.connect, target))
    return oldest_first(rows), sources
