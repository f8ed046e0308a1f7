"""`kfin stuck` and `kfin snapshot`: the thin layer between the command line and the core."""

from __future__ import annotations

import sys
from contextlib import contextmanager

from kfin.errors import ExitCode, KfinError, NotFoundError, UsageError
from kfin.core.facts import Facts
from kfin.model import Failure, Inventory
from kfin.commands.flags import Options
from kfin.util.text import say, warn, warn_failures
from kfin.util.parallel import ordered


@contextmanager
def progress_bar(label: str):
    """A progress bar on stderr while scanning, only on a terminal; yields a (done, total) callback."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from kfin.render.tables import console

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def scan_scope(options: Options, kube) -> str | None:
    if options.all_namespaces:
        return None
    return options.namespace or kube.namespace


def gather(options: Options, contexts: list[str], from_snapshot: str | None, refresh: bool,
           full=None, concurrency: int = 16, chunk_size: int = 500, lean: bool = False) -> list[Facts]:
    """What is known of each context (or of the snapshot), scanned in parallel. Live Facts keep their
    connection, so that analysis may read the few whole objects it needs. `lean`: keep only what finding
    stuck objects needs (kfin.api.scan.Lean), for commands that report stuck objects and nothing else."""
    from kfin.api import inventory
    from kfin.api.connection import Kube, Target

    if from_snapshot:
        if contexts:
            raise UsageError("--from-snapshot reads a file: it cannot be combined with --context")
        loaded = inventory.load(from_snapshot)
        if options.namespace and not options.all_namespaces:
            loaded = inventory.restrict(loaded, options.namespace)
        return [Facts(loaded)]
    full = inventory.STUCK_FULL if full is None else full

    def one(context: str | None) -> Facts:
        kube = Kube.connect(Target(options.kubeconfig, context, options.request_timeout))
        with progress_bar(f"scanning {kube.context}") as progress:
            scanned = inventory.live(kube, scan_scope(options, kube), full=full, refresh=refresh,
                                     progress=progress, concurrency=concurrency, chunk_size=chunk_size, lean=lean)
        return Facts(scanned, kube, chunk_size)

    if len(contexts) <= 1:
        return [one(contexts[0] if contexts else options.context)]
    errors: dict[str, KfinError] = {}

    def attempt(context: str):
        try:
            return one(context)
        except KfinError as error:  # one unreachable cluster must not hide the others
            errors[context] = error
            return Facts(Inventory([], [], [Failure("context", context, type(error).__name__, error.message)],
                                   context=context))
    results = ordered(attempt, contexts, min(8, len(contexts)))
    if len(errors) == len(contexts):  # nothing was read: an error, not a partial result
        first = errors[contexts[0]]
        first.message = "no context could be read: " + "; ".join(f"{c}: {errors[c].message}" for c in contexts)
        raise first
    return results


def gating_webhooks(rows, sources) -> dict[str, int]:
    """Each webhook failing closed in front of stuck objects (once each), and how many it gates."""
    from kfin.core.causes import explain_cached

    facts_of = {f.inventory.context: f for f in sources}
    found: dict[str, int] = {}
    for row in rows:
        explanation = explain_cached(row.obj, facts_of.get(row.context, sources[0]))
        whys = {link.why for f in explanation.findings for link in f.links if link.kind == "webhook"}
        for why in whys:
            found[why] = found.get(why, 0) + 1
    return found


def resolve_kinds(kinds: list[str], inventories: list[Inventory]) -> set | None:
    from kfin.api.builtin_kinds import builtin_resources
    from kfin.names import check_kind
    from kfin.api.resources import Catalog

    if not kinds:
        return None
    wanted = set()
    for text in kinds:
        check_kind(text)
        found, last_error = False, None
        for inv in inventories:
            try:
                r = Catalog(inv.resources + builtin_resources()).find(text)
                wanted.add((r.group, r.resource))
                found = True
            except NotFoundError as error:
                last_error = error
        if not found:
            raise last_error
    return wanted


def report_failures(inventories: list[Inventory]) -> None:
    for inv in inventories:
        warn_failures(inv.failures, f"[{inv.context}] " if len(inventories) > 1 and inv.context else "")


def find_all(options: Options, contexts: list[str], from_snapshot: str | None, refresh: bool, *,
             concurrency: int = 16, chunk_size: int = 500, kinds=(), finalizer=None, older: float | None = None):
    """(stuck rows of every context, oldest first; the Facts they came from): what `kfin stuck` prints
    and what `kfin serve` exposes at each scan."""
    from kfin.core.stuck import Filters, find_stuck

    sources = gather(options, contexts, from_snapshot, refresh, concurrency=concurrency, chunk_size=chunk_size,
                     lean=True)
    filters = Filters(resolve_kinds(list(kinds), [f.inventory for f in sources]), finalizer, older)
    rows = [row for facts in sources for row in find_stuck(facts.inventory, filters, facts)]
    rows.sort(key=lambda r: (-r.terminating_seconds, r.context, r.obj.namespace, r.obj.type.kind_display, r.obj.name))
    return rows, sources


def stuck(options: Options, *, kinds, finalizer, older_than, exit_code, refresh, from_snapshot, contexts,
          all_contexts, concurrency, chunk_size, max_info_series: int = 500) -> int:
    import time

    from kfin.render import tables as render
    from kfin.util.durations import parse_duration
    from kfin.api.connection import context_names
    from kfin.names import check_kind
    from kfin.commands.flags import check_output
    from kfin.core.stuck import report, storage_problems

    started = time.monotonic()
    fmt = check_output(options, ("table", "wide", "json", "yaml", "name", "prometheus"))
    for text in kinds or []:
        check_kind(text)  # before anything is read
    try:
        older = parse_duration(older_than) if older_than else None
    except ValueError as error:
        raise UsageError(f"--older-than: {error}") from None
    if all_contexts:
        contexts = context_names(options.kubeconfig)
    rows, sources = find_all(options, list(contexts or []), from_snapshot, refresh, concurrency=concurrency,
                             chunk_size=chunk_size, kinds=kinds or (), finalizer=finalizer, older=older)
    inventories = [f.inventory for f in sources]
    report_failures(inventories)
    gating = gating_webhooks(rows, sources)
    for why, count in gating.items():
        warn(f"{why} ({count} stuck object{'s' if count != 1 else ''} gated)")
    related = [dict(p, context=f.inventory.context) if len(sources) > 1 else p
               for f in sources for p in storage_problems(f.inventory)]
    for problem in related:
        warn(f"related: {problem['message']}")
    if fmt == "prometheus":
        from kfin.render import metrics

        families = metrics.stuck_families(rows, inventories, time.monotonic() - started, time.time(), max_info_series)
        sys.stdout.write(metrics.exposition(families))
    elif fmt in ("json", "yaml"):
        render.dump(dict(report(rows, inventories), webhooks=[{"problem": why, "stuckObjects": count}
                                                             for why, count in gating.items()],
                         related=related), fmt)
    elif fmt == "name":
        for row in rows:
            say(f"{row.obj.type.name_prefix}/{row.obj.name}")
    elif rows:
        render.stuck_table(rows, wide=fmt == "wide", show_context=len(inventories) > 1)
    else:
        scopes = {inv.namespace for inv in inventories}
        where = f"in namespace {scopes.pop()}" if len(scopes) == 1 and None not in scopes else "in the cluster"
        print(f"No stuck objects found {where}.", file=sys.stderr)
    if rows and exit_code:
        return ExitCode.FOUND
    if not all(inv.complete for inv in inventories):
        return ExitCode.PARTIAL
    return ExitCode.OK


def snapshot(options: Options, *, file: str, refresh: bool, concurrency: int, chunk_size: int) -> int:
    from kfin.api import inventory

    [facts] = gather(options, [], None, refresh, full=inventory.SNAPSHOT_FULL, concurrency=concurrency,
                     chunk_size=chunk_size)
    inv = facts.inventory
    inventory.save_snapshot(inv, file)
    report_failures([inv])
    kinds = len({o.type for o in inv.objects})
    where = "the whole cluster" if inv.namespace is None else f"namespace {inv.namespace}"
    say(f"saved {len(inv.objects)} objects of {kinds} resource types in {where} to {file}"
          + ("" if inv.complete else f" ({len(inv.failures)} could not be read)"), err=True)
    return ExitCode.OK if inv.complete else ExitCode.PARTIAL
