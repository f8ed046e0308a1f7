"""`kfin stuck`: every object stuck in Terminating, with its finalizers and its blocker."""

from __future__ import annotations

import shlex
import time

import typer

from kfin.api.connect import context_names
from kfin.commands import live
from kfin.commands.flags import (
    AllNamespacesOpt,
    ChunkSizeOpt,
    ConcurrencyOpt,
    ContextsOpt,
    FieldSelectorOpt,
    KindsOpt,
    KubeconfigOpt,
    LabelSelectorOpt,
    MaxInfoSeriesOpt,
    NamespaceOpt,
    NoDryRunOpt,
    OlderThanOpt,
    OutputOpt,
    RefreshOpt,
    TimeoutOpt,
    VerdictsOpt,
    check_output,
    duration_seconds,
    merged,
    narrowing,
    snapshot_flag,
)
from kfin.commands.outputs import OUTPUTS
from kfin.commands.pointers import say_elsewhere, say_not_looked
from kfin.core.explain.causes.unreadable import list_failure_causes
from kfin.core.explain.fleet import find_all_contexts
from kfin.core.explain.stuck import (
    Filters,
    StuckObject,
    gating_webhooks,
    narrowed,
    resolve_kinds,
    storage_problems,
    stuck_elsewhere,
)
from kfin.core.explain.watching import Watched
from kfin.errors import ExitCode, UsageError
from kfin.model import Failure
from kfin.render import stuck as stuck_output
from kfin.render import templates


def stuck(
    ctx: typer.Context,
    kind: KindsOpt = None,
    finalizer: str | None = typer.Option(
        None, "--finalizer", metavar="PATTERN", help="Only objects with a matching finalizer (glob or substring)."
    ),
    older_than: OlderThanOpt = None,
    verdict: VerdictsOpt = None,
    label_selector: LabelSelectorOpt = None,
    field_selector: FieldSelectorOpt = None,
    sort_by: str | None = typer.Option(
        None, "--sort-by", metavar="JSONPATH", help="Sort by a field of the JSON item (.metadata.name, .verdict...)."
    ),
    no_headers: bool = typer.Option(False, "--no-headers", help="Tables without their header line."),
    watch: bool = typer.Option(
        False, "--watch", "-w", help="Keep watching: redraw as objects get stuck, change or go (Ctrl-C stops)."
    ),
    interval: str = typer.Option(
        "10s",
        "--interval",
        metavar="DURATION",
        help="-w: how often an answer that read what is not watched (Pods, Nodes) is worked out again.",
    ),
    exit_code: bool = typer.Option(False, "--exit-code", help="Exit 1 when anything is stuck (for cron and CI)."),
    refresh: RefreshOpt = False,
    no_dry_run: NoDryRunOpt = False,
    from_snapshot: str | None = snapshot_flag("Read a kfin snapshot or `kubectl get -o json` output."),
    context: ContextsOpt = None,
    all_contexts: bool = typer.Option(False, "--all-contexts", help="Scan every context of the kubeconfig."),
    concurrency: ConcurrencyOpt = 16,
    chunk_size: ChunkSizeOpt = 500,
    max_info_series: MaxInfoSeriesOpt = 500,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    all_namespaces: AllNamespacesOpt = None,
    output: OutputOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """What is stuck in Terminating, grouped by root cause.

    Scans every listable resource type (built-in, aggregated and CRDs) with metadata-only requests.

    Examples:

      kfin stuck -A

      kfin stuck -n team-a --kind pvc -o wide

      kfin stuck -A --verdict orphaned

      kfin stuck -A -l app=postgres --sort-by .terminatingSeconds

      kfin stuck -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}'

      kfin stuck --from-snapshot examples/stuck-cluster.json
    """
    started = time.monotonic()
    options = merged(
        ctx,
        kubeconfig=kubeconfig,
        namespace=namespace,
        all_namespaces=all_namespaces,
        output=output,
        request_timeout=request_timeout,
    )
    console = options.console
    fmt = check_output(options, OUTPUTS["stuck"])
    narrow = narrowing(kind, older_than, verdict, label_selector, field_selector)  # before anything is read
    ordering = templates.sort_key(sort_by) if sort_by else None

    contexts = (
        context_names(options.kubeconfig)
        if all_contexts
        else (context or ([options.context] if options.context else []))
    )
    scope = options.scope(
        contexts=contexts,
        from_snapshot=from_snapshot,
        refresh=refresh,
        concurrency=concurrency,
        chunk_size=chunk_size,
        dry_run=not no_dry_run,
    )
    if watch:
        every = duration_seconds(interval, "--interval")
        if every < 0.2:
            raise UsageError("--interval must be at least 0.2s")
        if fmt not in ("table", "wide", "name"):
            raise UsageError("--watch shows a table (or, on a pipe, a line per change); not -o " + fmt)

        watched = Watched(scope, every)

        def scan() -> tuple[list[StuckObject], list[Failure]]:
            while not watched.wait_synced(1.0):
                pass
            found, sources = watched.answer(narrow.kinds, finalizer, narrow.older)
            failures = [failure for f in sources for failure in f.inventory.failures]
            return narrowed(found, narrow.verdicts, narrow.chosen), failures

        def next_due() -> None:
            while not watched.due():
                pass

        watched.start()
        try:
            live.follow(console, scan, next_due, every, wide=fmt == "wide")
        finally:
            watched.stop()
        return
    found, sources = find_all_contexts(scope, narrow.kinds, finalizer, narrow.older, progress=console.progress_bar)
    rows = narrowed(found, narrow.verdicts, narrow.chosen)
    if ordering is not None:
        rows.sort(key=lambda row: ordering(row.to_dict()))
    inventories = [f.inventory for f in sources]
    for facts in sources:
        inv = facts.inventory
        prefix = f"[{inv.context}] " if len(inventories) > 1 and inv.context else ""
        console.warn_failures(inv.failures, prefix, listed=options.trace > 0)
        for target, why in list_failure_causes(facts).items():
            console.warn(f"{prefix}root cause of the failed list of {target}: {why}")
    gating = gating_webhooks(rows, sources)
    for why, count in gating.items():
        console.warn(f"{why} ({count} stuck object{'s' if count != 1 else ''} gated)")
    related = [
        dict(p, context=f.inventory.context) if len(sources) > 1 else p
        for f in sources
        for p in storage_problems(f.inventory)
    ]
    for problem in related:
        console.warn(f"related: {problem['message']}")
    result = stuck_output.Scan(rows, inventories, gating, related, started)
    stuck_output.show(console, fmt, result, stuck_output.OutputOptions(no_headers, max_info_series))
    # nothing here: is anything stuck elsewhere? Asked for a person reading the table, not for cron's --exit-code,
    # whose every run would pay a list of each type across the cluster
    if not rows and fmt in ("table", "wide") and len(sources) == 1 and not exit_code:
        everywhere = command_with_all_namespaces(
            options.kubeconfig,
            contexts,
            [("--kind", text) for text in kind or ()]
            + [("--finalizer", finalizer), ("--older-than", older_than)]
            + [("--verdict", text) for text in verdict or ()]
            + [("-l", label_selector), ("--field-selector", field_selector)],
        )
        if narrow.verdicts or narrow.chosen is not None:  # verdicts and selectors need more than a list to apply
            if sources[0].inventory.namespace is not None and sources[0].kube is not None:
                say_not_looked(console, "for what --verdict, -l or --field-selector select", everywhere)
        else:
            filters = Filters(resolve_kinds(narrow.kinds, inventories), finalizer, narrow.older)
            say_elsewhere(console, stuck_elsewhere(sources[0], filters, concurrency, console.progress_bar), everywhere)
    if rows and exit_code:
        raise typer.Exit(ExitCode.FOUND)
    if not all(inv.complete for inv in inventories):
        raise typer.Exit(ExitCode.PARTIAL)


def command_with_all_namespaces(
    kubeconfig: str | None, contexts: list[str], narrowing: list[tuple[str, str | None]]
) -> str:
    """kfin stuck -A with the flags given that choose the cluster and narrow what is listed."""
    flags = [("--kubeconfig", kubeconfig), *(("--context", name) for name in contexts), *narrowing]
    return " ".join(["kfin stuck -A"] + [f"{flag} {shlex.quote(value)}" for flag, value in flags if value])
