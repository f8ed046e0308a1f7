"""`kfin serve`: the thin layer between the command line and kfin.serve.exporter."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import replace

from kfin.errors import ExitCode, UsageError
from kfin.commands.flags import Options


def _log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {message}", file=sys.stderr, flush=True)


def serve(options: Options, *, listen: str, interval: str, max_info_series: int, concurrency: int,
          chunk_size: int) -> int:
    from kfin.serve import exporter as served
    from kfin.commands.stuck import find_all
    from kfin.util.durations import parse_duration
    from kfin.api.connection import Kube, Target

    try:
        every = parse_duration(interval)
    except ValueError as error:
        raise UsageError(f"--interval: {error}") from None
    if every < 1:
        raise UsageError("--interval must be at least 1s")
    if not options.namespace:  # a cluster's exporter watches the whole cluster unless told otherwise
        options = replace(options, all_namespaces=True)
    contexts = [options.context] if options.context else []
    host, port = served.parse_listen(listen)
    # A configuration that cannot work is an error now; a cluster that does not answer is retried each scan.
    Kube.connect(Target(options.kubeconfig, options.context, options.request_timeout))

    def scan():
        rows, sources = find_all(options, contexts, None, False, concurrency=concurrency, chunk_size=chunk_size)
        return rows, [facts.inventory for facts in sources]

    exporter = served.Exporter(scan, max_info_series, log=_log)
    server = served.http_server(exporter, host, port)
    _log(f"kfin serve: scanning every {interval}, read-only; metrics on http://{host}:{server.server_port}/metrics")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):  # a Pod's stop, or Ctrl-C: finish the answer in hand, then go
        signal.signal(sig, lambda *_: stop.set())
    served.run(exporter, server, every, stop)
    _log("kfin serve: stopped")
    if threading.active_count() > 1:  # a scan in flight: it only reads, so its requests are left, not awaited
        sys.stderr.flush()
        os._exit(ExitCode.OK)  # the interpreter's exit would join the scan's worker threads
    return ExitCode.OK
