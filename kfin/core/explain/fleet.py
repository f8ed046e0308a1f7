"""Many contexts at once (--all-contexts, several --context): scanned in parallel processes.

Below PROCESSES_FROM contexts (or one core) they are scanned in this process, with threads
(kfin.core.explain.stuck.find_all). Above, the contexts are shared out among one process per core by
kfin.core.explain.fleet_processes, which is loaded by name (PROCESSES) only then, as the command registry loads a
command's module: its multiprocessing is 7 ms of start-up every other scan would pay (bench/PROFILE.md).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable

from kfin.core.explain.stuck import StuckObject, find_all
from kfin.core.read.contexts import ProgressFactory, no_progress
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope

PROCESSES_FROM = 4  # contexts; below this, a process's start costs more than sharing one GIL does
PROCESSES = "kfin.core.explain.fleet_processes"  # find_in_processes: the worker processes of a large fleet


def workers_for(contexts: int) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(contexts, cores) if contexts >= PROCESSES_FROM else 1


def find_all_contexts(
    scope: Scope,
    kinds: Iterable[str] = (),
    finalizer: str | None = None,
    older: float | None = None,
    progress: ProgressFactory = no_progress,
) -> tuple[list[StuckObject], list[Facts]]:
    """kfin.core.explain.stuck.find_all, with the contexts shared among processes when there are enough of them."""
    workers = workers_for(len(scope.contexts))
    if workers < 2 or scope.from_snapshot:
        return find_all(scope, kinds, finalizer, older, progress)
    in_processes: Callable[..., tuple[list[StuckObject], list[Facts]]] = importlib.import_module(
        PROCESSES
    ).find_in_processes
    return in_processes(scope, workers, tuple(kinds), finalizer, older, progress)
