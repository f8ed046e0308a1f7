"""`kfin serve`: keep the stuck objects current from watches (read-only) and serve them to Prometheus."""

from __future__ import annotations

import os
import signal
import threading
import time

import typer
from msgspec.structs import replace

from kfin.api.connection import Kube
from kfin.commands.flags import (
    ChunkSizeOpt,
    ConcurrencyOpt,
    ContextOpt,
    KubeconfigOpt,
    MaxInfoSeriesOpt,
    NamespaceOpt,
    TimeoutOpt,
    duration_seconds,
    merged,
    snapshot_flag,
)
from kfin.core.explain.stuck import StuckObject, find_all
from kfin.core.explain.watching import Watched
from kfin.core.read.scope import Scope
from kfin.errors import ExitCode, KfinError, UsageError
from kfin.model import Inventory
from kfin.render.terminal import Console
from kfin.serve import exporter


def serve(
    ctx: typer.Context,
    listen: str = typer.Option(
        ":9847", "--listen", metavar="ADDR", help="Where to serve /metrics, /healthz and /readyz (HOST:PORT or :PORT)."
    ),
    interval: str = typer.Option(
        "60s",
        "--interval",
        metavar="DURATION",
        help="How often an answer that read what is not watched (Pods, Nodes) is worked out again, and types "
        "that cannot be watched listed (30s, 5m); with --rescan, the time between scans.",
    ),
    rescan: bool = typer.Option(
        False, "--rescan", help="Scan the whole cluster every --interval instead of watching (where watches break)."
    ),
    once: bool = typer.Option(
        False,
        "--once",
        help="Work the answer out once (a scan), print on stdout what /metrics would serve, and exit: no port "
        "is opened.",
    ),
    from_snapshot: str | None = snapshot_flag("With --once: the metrics of a kfin snapshot instead of a live cluster."),
    max_info_series: MaxInfoSeriesOpt = 500,
    concurrency: ConcurrencyOpt = 16,
    chunk_size: ChunkSizeOpt = 500,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """Prometheus metrics of what is stuck, kept by watch; read-only.

    Lists each type once, then watches it, as informers do: a new stuck object shows on /metrics within
    seconds, and at steady state kfin holds a watch per type and lists nothing. Uses the in-cluster service
    account when run in a Pod, else the kubeconfig. Covers the whole cluster unless -n is given. The last
    good result is served while the answer cannot be worked out (see kfin_result_age_seconds).

    Examples:

      kfin serve --listen :9847 --interval 60s

      kfin serve --once --from-snapshot cluster.json
    """
    options = merged(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, request_timeout=request_timeout)
    console = options.console
    every = duration_seconds(interval, "--interval")
    if every < 1:
        raise UsageError("--interval must be at least 1s")
    if from_snapshot is not None and not once:
        raise UsageError(
            "--from-snapshot needs --once: a snapshot does not change, so kfin serve prints its metrics once "
            "instead of serving them"
        )
    if not options.namespace:  # a cluster's exporter watches the whole cluster unless told otherwise
        options = replace(options, all_namespaces=True)
    scope = options.scope(
        contexts=[options.context] if options.context else [],
        from_snapshot=from_snapshot,
        concurrency=concurrency,
        chunk_size=chunk_size,
    )
    if once:
        raise typer.Exit(print_once(console, scope, max_info_series))
    host, port = exporter.parse_listen(listen)
    # A configuration that cannot work is an error now; a cluster that does not answer is retried each scan.
    Kube.connect(options.target())

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):  # a Pod's stop, or Ctrl-C: finish the answer in hand, then go
        signal.signal(sig, lambda *_: stop.set())
    if rescan:

        def scan() -> tuple[list[StuckObject], list[Inventory]]:
            rows, sources = find_all(scope, progress=console.progress_bar)
            return rows, [facts.inventory for facts in sources]

        served = exporter.Exporter(scan, max_info_series, log=console.log)
        server = exporter.http_server(served, host, port)
        console.log(
            f"kfin serve: scanning every {interval}, read-only; metrics on http://{host}:{server.server_port}/metrics"
        )
        exporter.run(served, server, every, stop)
    else:
        watched = Watched(scope, every)

        def answer() -> tuple[list[StuckObject], list[Inventory]]:
            while not watched.wait_synced(1.0):
                if stop.is_set():
                    raise KfinError("stopped before every type was listed")
            rows, sources = watched.answer()
            return rows, [facts.inventory for facts in sources]

        def due() -> bool:  # no time limit: idle, nothing wakes until a change, the refresh or the stop
            return watched.due(None)

        served = exporter.Exporter(
            answer, max_info_series, log=console.log, requests=watched.requests, current=watched.current
        )
        server = exporter.http_server(served, host, port)
        console.log(f"kfin serve: watching, read-only; metrics on http://{host}:{server.server_port}/metrics")
        watched.start()
        try:
            exporter.run(served, server, every, stop, due)
        finally:
            watched.stop()
    console.log("kfin serve: stopped")
    if threading.active_count() > 1:  # a scan in flight: it only reads, so its requests are left, not awaited
        console.flush()
        os._exit(ExitCode.OK)  # the interpreter's exit would join the scan's worker threads


def print_once(console: Console, scope: Scope, max_info_series: int) -> int:
    """--once: one answer, as a scrape of /metrics would have it after the first scan, on stdout. A scan that
    fails is an error (its exit code), never an exposition that only counts the failure; a partial one is
    exit 8, as kfin stuck -o prometheus, with what could not be read in the metrics and on stderr."""
    failed: list[Exception] = []
    read: list[Inventory] = []

    def scan() -> tuple[list[StuckObject], list[Inventory]]:
        try:
            rows, sources = find_all(scope, progress=console.progress_bar)
        except Exception as error:  # said as every error is, below: not as a served scan's log line
            failed.append(error)
            raise
        read.extend(facts.inventory for facts in sources)
        return rows, list(read)

    def read_at() -> float:  # a snapshot's answer is as old as the snapshot: its time, not the time it is read
        return min(inv.observed_at for inv in read).timestamp() if scope.from_snapshot else time.time()

    served = exporter.Exporter(scan, max_info_series, log=lambda _: None, read_at=read_at)
    served.scan_once()
    if failed:
        raise failed[0]
    for inv in read:
        console.warn_failures(
            inv.failures,
            f"[{inv.context}] " if len(read) > 1 and inv.context else "",
            listed=scope.target.settings.trace > 0,
        )
    console.write(served.exposition())
    return ExitCode.OK if all(inv.complete for inv in read) else ExitCode.PARTIAL
