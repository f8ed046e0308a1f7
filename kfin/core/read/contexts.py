"""Where facts come from: live contexts (scanned in parallel, each keeping its connection) or a file."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from contextlib import AbstractContextManager, nullcontext

from msgspec.structs import replace

from kfin.api import inventory
from kfin.api.connection import Kube
from kfin.core.read.before_last import BeforeLast
from kfin.core.read.facts import Facts
from kfin.core.read.reader import ReadKey, reader_for
from kfin.core.read.reads_ahead import ReadsAhead
from kfin.core.read.scope import Scope
from kfin.errors import KfinError, UsageError
from kfin.model import Failure, Inventory, KubeObject
from kfin.util.parallel import ordered

# (done, total) as a scan goes; a command passes one in (a progress bar on a terminal), or nothing.
Progress = Callable[[int, int], None]
ProgressFactory = Callable[[str], AbstractContextManager[Progress | None]]


def no_progress(label: str) -> AbstractContextManager[Progress | None]:
    return nullcontext(None)


def gather(
    scope: Scope,
    full: set[tuple[str, str]] | None = None,
    lean: bool = False,
    progress: ProgressFactory = no_progress,
    failed: dict[str, KfinError] | None = None,
    ahead: Callable[[KubeObject], Iterable[ReadKey]] | None = None,
    explain: Callable[[Facts], object] | None = None,
) -> list[Facts]:
    """What is known of each context (or of the snapshot), scanned in parallel. Live Facts keep their
    connection, so that analysis may read the few whole objects it needs. `lean`: keep only what finding
    stuck objects needs (kfin.api.scan.Lean), for commands that report stuck objects and nothing else.
    `failed`: filled with the contexts that could not be read, instead of an error when none could.
    `ahead`: what explaining a Terminating object reads (kfin.core.explain.causes.reads_for), started as soon as the
    scan lists it (kfin.core.read.reads_ahead) and taken by Facts.prefetch. `explain` (with `lean`): what the command
    works out of each context's Facts, begun while the scan's last list still pages (kfin.core.read.before_last)."""
    target, contexts = scope.target, list(scope.contexts)
    if scope.from_snapshot:
        if contexts:
            raise UsageError("--from-snapshot reads a file: it cannot be combined with --context")
        loaded = inventory.load(scope.from_snapshot)
        if scope.namespace and not scope.all_namespaces:
            loaded = inventory.restrict(loaded, scope.namespace)
        return [Facts(loaded, reader_for(scope, None))]
    wanted = inventory.STUCK_FULL if full is None else full

    def one(context: str | None, concurrency: int = scope.concurrency) -> Facts:
        kube = Kube.connect(replace(target, context=context))
        reader = reader_for(scope, kube)
        namespace = scope.namespace_of(kube.namespace)
        early = None
        if ahead is not None:
            early = ReadsAhead(reader.read_whole, namespace, wanted, ahead, min(4, concurrency))

        def facts_of(scanned: Inventory) -> Facts:
            reader = reader_for(scope, kube)
            reader.ahead = early
            return Facts(scanned, reader)

        before_last = BeforeLast(facts_of, explain) if explain is not None and lean else None
        with progress(f"scanning {kube.context}") as report:
            steps = reader.scan_steps(
                namespace,
                full=wanted,
                refresh=scope.refresh,
                progress=report,
                concurrency=concurrency,
                lean=lean,
                listed=early is not None,
                before_last=before_last is not None,
            )
            scanned = worked_on(steps, early, before_last)
        settled = before_last.settle(scanned) if before_last is not None else None
        return settled if settled is not None else facts_of(scanned)

    if len(contexts) <= 1:
        return [one(contexts[0] if contexts else target.context)]
    errors: dict[str, KfinError] = {} if failed is None else failed
    at_once, per_context = fleet_shares(len(contexts), scope.concurrency)

    def attempt(context: str) -> Facts:
        try:
            return one(context, per_context)
        except KfinError as error:  # one unreachable cluster must not hide the others
            errors[context] = error
            return unread_context(context, error)

    results = ordered(attempt, contexts, at_once)
    if failed is None and len(errors) == len(contexts):
        raise nothing_read(contexts, errors)
    return results


def worked_on(
    steps: Generator[inventory.TypeListed | inventory.BeforeLastList, None, Inventory],
    early: ReadsAhead | None,
    before_last: BeforeLast | None,
) -> Inventory:
    """What a live scan finds, its steps worked on as they come, in this thread while its lists go on: the reads
    explaining will make started as types are listed (kfin.core.read.reads_ahead), and the explanations begun while the
    last list still pages (kfin.core.read.before_last)."""
    try:
        while True:
            step = next(steps)
            if isinstance(step, inventory.TypeListed):
                if early is not None:
                    early.found(step.resources, step.objects)
            elif before_last is not None:
                before_last.start(step.inventory, step.last)
    except StopIteration as done:
        scanned: Inventory = done.value
        return scanned
    finally:
        steps.close()


# Lists in flight at once for many contexts, shared among those scanned together. Each connection a context
# opens costs a TLS handshake and a thread on both sides, and each thread contends for the GIL: twenty
# 1,000-object contexts in two processes took 10-15% less wall, locally and 20 ms away, with ten contexts at
# once listing six types each than with eight listing sixteen (bench/RESULTS.md, fleet).
LISTS_IN_FLIGHT = 64
CONTEXTS_AT_ONCE = 16
FEWEST_LISTS_AT_ONCE = 4


def fleet_shares(contexts: int, concurrency: int) -> tuple[int, int]:
    """(contexts scanned at once, lists at once in each) for a scan of several contexts."""
    at_once = max(1, min(CONTEXTS_AT_ONCE, contexts))
    return at_once, min(concurrency, max(FEWEST_LISTS_AT_ONCE, LISTS_IN_FLIGHT // at_once))


def nothing_read(contexts: list[str], errors: dict[str, KfinError]) -> KfinError:
    """Every context failed: an error, not a partial result (the first one's kind, every one's message)."""
    first = errors[contexts[0]]
    first.message = "no context could be read: " + "; ".join(f"{c}: {errors[c].message}" for c in contexts)
    first.args = (first.message,)
    return first


def unread_context(context: str, error: KfinError) -> Facts:
    """What is known of a context that could not be read: only that, and why."""
    return Facts(
        Inventory([], [], failures=[Failure("context", context, type(error).__name__, error.message)], context=context)
    )
