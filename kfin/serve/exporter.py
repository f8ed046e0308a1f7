"""`kfin serve`: keep the stuck objects current, read-only, and serve the result to Prometheus.

One thread works the answer out: after each change its watches see (kfin.core.watching), or, with
--rescan, by a scan every interval. The HTTP server answers from the last good result, so a scrape never
waits for an answer and a failed one never empties /metrics (kfin_result_age_seconds says how old it is).

    /metrics   the exposition (kfin.render.metrics), plus kfin serve's own series
    /healthz   200 while the process serves
    /readyz    200 once a scan has succeeded, 503 before
"""

from __future__ import annotations

import gc
import selectors
import signal
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from msgspec import Struct

from kfin.errors import KfinError, UsageError
from kfin.model import Inventory
from kfin.render import metrics
from kfin.util.text import one_line


class Result(Struct):
    text: str  # the exposition of the scan's families
    finished_at: float  # Unix time


class Exporter:
    """The scans and what is served of them. `scan` returns (rows, inventories) of one scan."""

    def __init__(
        self,
        scan: Callable[[], tuple[list[Any], list[Inventory]]],
        max_info: int = metrics.DEFAULT_MAX_INFO,
        log: Callable[[str], None] = print,
        requests: Callable[[], tuple[int, int]] | None = None,
        current: Callable[[], bool] | None = None,
        read_at: Callable[[], float] = time.time,
    ):
        """`requests`: (lists, watches) asked so far, when the answer comes from watches. `current`: whether
        the last answer still holds (nothing changed since): then its age starts again when it is scraped, as
        a watching kfin answers again only after a change. `read_at`: when what the answer says was read, asked
        once it is worked out (now; a snapshot's is when it was taken, so its result is as old as it)."""
        self._scan, self.max_info, self.log, self._requests = scan, max_info, log, requests
        self._current, self._read_at = current, read_at
        self._lock = threading.Lock()
        self.result: Result | None = None
        self.scans = self.errors = 0
        self.last_ok = False
        self._answering = False  # an answer is being worked out: the one served is not known to hold
        self._said: tuple[int, bool] | None = None  # (stuck, partial) last logged by a watching exporter

    def scan_once(self) -> bool:
        started = time.monotonic()
        with self._lock:
            self._answering = True
        try:
            rows, inventories = self._scan()
            text = metrics.exposition(
                metrics.stuck_families(rows, inventories, time.monotonic() - started, self._read_at(), self.max_info)
            )
            partial, stuck = not all(inv.complete for inv in inventories), len(rows)
            del rows, inventories
        except Exception as error:
            message = error.message if isinstance(error, KfinError) else f"internal error in kfin: {error!r}"
            with self._lock:
                self.scans, self.errors, self.last_ok = self.scans + 1, self.errors + 1, False
                self._answering = False
            self.log(f"scan failed: {one_line(message)} (serving the last good result)")
            return False
        finally:
            if self._requests is None:  # nothing of a scan outlives it: collect what cycles it left
                gc.unfreeze()
                gc.collect()
        with self._lock:
            self.result, self.scans, self.last_ok = Result(text, self._read_at()), self.scans + 1, True
            self._answering = False
        note = " (partial: see kfin_scan_failures)" if partial else ""
        if self._requests is None:
            self.log(f"scan done in {time.monotonic() - started:.2f} s{note}")
        elif self._said != (stuck, partial):  # answers follow every change: only news is logged
            self.log(f"{stuck} stuck{note}")
            self._said = (stuck, partial)
        return True

    def ready(self) -> bool:
        return self.result is not None

    def exposition(self) -> str:
        with self._lock:
            result, scans, errors, ok = self.result, self.scans, self.errors, self.last_ok
            if result is not None and ok and not self._answering and self._current is not None and self._current():
                result.finished_at = time.time()
        own = [
            metrics.Family("kfin_scans_total", "counter", "Scans kfin serve has run.", [({}, scans)]),
            metrics.Family(
                "kfin_scan_errors_total",
                "counter",
                "Scans that failed (the last good result is served meanwhile).",
                [({}, errors)],
            ),
            metrics.Family("kfin_last_scan_success", "gauge", "1 when the last scan succeeded.", [({}, ok)]),
        ]
        if self._requests is not None:
            lists, watches = self._requests()
            own += [
                metrics.Family(
                    "kfin_list_requests_total",
                    "counter",
                    "Lists asked of the API server (one per type, then on 410).",
                    [({}, lists)],
                ),
                metrics.Family("kfin_watch_requests_total", "counter", "Watches started.", [({}, watches)]),
            ]
        if result is not None:
            own.append(
                metrics.Family(
                    "kfin_result_age_seconds",
                    "gauge",
                    "Seconds since the scan whose result is served finished (staleness).",
                    [({}, round(time.time() - result.finished_at, 3))],
                )
            )
        return (result.text if result else "") + metrics.exposition(own)


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT, or :PORT for every interface (as Prometheus exporters take --web.listen-address)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f'--listen "{text}" is not HOST:PORT (e.g. :9847 or 127.0.0.1:9847)')
    return (host.strip("[]") or "0.0.0.0"), int(port)


# As well-kept HTTP servers do: a client has this long to send its request (and an idle keep-alive connection
# is closed after it), and at most this many connections are served at once; more are closed at once.
IDLE_TIMEOUT = 10.0
MAX_CONNECTIONS = 64


class BoundedHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with a bounded number of connections, and quiet about clients that go away."""

    daemon_threads = True
    # handle_request() is called once the selector of serve_until saw a client: it must not wait for another
    # (a client gone before it was accepted would leave this thread, and a SIGTERM, waiting)
    timeout = 0

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]):
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # every slot busy: this client tries again later
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up or stalls mid-request is its own business: no traceback in the log

    def serve_until(self, stop: threading.Event) -> None:
        """Serve in this thread until `stop` is set by a signal handler. Idle, it sleeps until a client
        connects or a signal arrives (the signal wakeup fd), where serve_forever wakes every poll interval: a
        watching kfin serve should cost nothing while nothing changes. Outside the main thread, where no
        wakeup fd can be set, it looks at `stop` every second."""
        main = threading.current_thread() is threading.main_thread()
        wake, woken = socket.socketpair()
        for end in (wake, woken):
            end.setblocking(False)
        previous = signal.set_wakeup_fd(wake.fileno(), warn_on_full_buffer=False) if main else -1
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(woken, selectors.EVENT_READ)
                while not stop.is_set():
                    for key, _ in selector.select(None if main else 1.0):
                        if key.fileobj is woken:
                            _drain(woken)  # the signal numbers: what matters is `stop`
                        elif not stop.is_set():
                            self.handle_request()  # accepts the client ready now; its thread serves it
        finally:
            if main:
                signal.set_wakeup_fd(previous)
            wake.close()
            woken.close()


def _drain(end: socket.socket) -> None:
    try:
        while end.recv(512):
            pass
    except BlockingIOError:
        pass


class QuietHandler(BaseHTTPRequestHandler):
    """What kfin serve's and kfin guard's endpoints share: HTTP/1.1, no line per request (one per scrape or
    review would drown the log), and a whole answer in one call. Each server sets `timeout` (IDLE_TIMEOUT as it is
    when the server is made)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: str, content_type: str = "text/plain; charset=utf-8") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


def http_server(exporter: Exporter, host: str, port: int) -> BoundedHTTPServer:
    class Handler(QuietHandler):
        timeout = IDLE_TIMEOUT  # socket timeout: a silent or idle client is let go

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._answer(200, exporter.exposition(), metrics.CONTENT_TYPE)
            elif path == "/healthz":
                self._answer(200, "ok\n")
            elif path == "/readyz":
                self._answer(200, "ok\n") if exporter.ready() else self._answer(503, "no scan has succeeded yet\n")
            else:
                self._answer(404, "not found: try /metrics, /healthz or /readyz\n")

        do_HEAD = do_GET

    try:
        server = BoundedHTTPServer((host, port), Handler)
    except OSError as error:
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    return server


def run(
    exporter: Exporter,
    server: BoundedHTTPServer,
    interval: float,
    stop: threading.Event,
    due: Callable[[], bool] | None = None,
) -> None:
    """Serve until `stop` is set (by a signal handler), working the answer out now and then whenever `due()`
    says so (it may wait as long as nothing changes), or, without `due`, every `interval` seconds (measured from
    each start). The answer is worked out in a thread of its own, so that a stop (SIGTERM) ends the process at
    once, not after a scan of a large cluster: kfin only reads, there is nothing to finish. HTTP is served in
    this thread."""

    def answers() -> None:
        while not stop.is_set():
            started = time.monotonic()
            exporter.scan_once()
            if due is None:
                stop.wait(max(0.0, interval - (time.monotonic() - started)))
            else:
                while not stop.is_set() and not due():
                    pass

    threading.Thread(target=answers, daemon=True, name="kfin-answer").start()
    try:
        server.serve_until(stop)
    finally:
        server.server_close()
