"""`kfin serve`: keep the stuck objects current, read-only, and serve the result to Prometheus.

One thread works the answer out: after each change its watches see (kfin.core.explain.watching), or, with
--rescan, by a scan every interval. The HTTP server answers from the last good result, so a scrape never
waits for an answer and a failed one never empties /metrics (kfin_result_age_seconds says how old it is).

    /metrics   the exposition (kfin.render.metrics), plus kfin serve's own series
    /healthz   200 while the process serves
    /readyz    200 once a scan has succeeded, 503 before (and while it turns requests away for want of room)
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import socket
import ssl
import threading
import time
from collections.abc import Callable
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

import h11
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
        *,
        log: Callable[[str], None],  # the serving command's log line (its console's stderr), or nothing
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
            metrics.MetricFamily("kfin_scans_total", "counter", "Scans kfin serve has run.", [({}, scans)]),
            metrics.MetricFamily(
                "kfin_scan_errors_total",
                "counter",
                "Scans that failed (the last good result is served meanwhile).",
                [({}, errors)],
            ),
            metrics.MetricFamily("kfin_last_scan_success", "gauge", "1 when the last scan succeeded.", [({}, ok)]),
        ]
        if self._requests is not None:
            lists, watches = self._requests()
            own += [
                metrics.MetricFamily(
                    "kfin_list_requests_total",
                    "counter",
                    "Lists asked of the API server (one per type, then on 410).",
                    [({}, lists)],
                ),
                metrics.MetricFamily("kfin_watch_requests_total", "counter", "Watches started.", [({}, watches)]),
            ]
        if result is not None:
            own.append(
                metrics.MetricFamily(
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


# The limits of kfin serve's and kfin guard's HTTP servers, as well-kept servers set them (Go's net/http:
# ReadHeaderTimeout, ReadTimeout, IdleTimeout, MaxHeaderBytes). Every connection is read by one asyncio event loop
# (h11 parses HTTP/1.1), and a request holds a worker (a thread) only once all of it has arrived: slow or silent
# clients cost a socket and what they sent, never a worker, and the slowest of them makes room for a new one.
REQUEST_DEADLINE = 10.0  # seconds for the TLS handshake, the head and the body together: kube-apiserver calls a
# webhook with a timeout of at most its timeoutSeconds (10 s by default, 3 s in deploy/guard) and Prometheus
# scrapes within 10 s by default: a request that takes longer to arrive has no one waiting for its answer
IDLE_TIMEOUT = 10.0  # seconds an idle keep-alive connection is kept for its next request
WORKERS = 64  # requests answered at once; more wait for a worker, within their deadline
MAX_OPEN = 512  # connections open at once; at the limit the oldest silent or slowest one is closed for a new one
MOST_HEAD = 64 * 1024  # bytes of a request line and headers (http.server's own limit for one line)
MOST_GET_BODY = 64 * 1024  # bytes of a body sent to kfin serve, which reads none
BUFFERED = 64 * 1024 * 1024  # bytes of requests held at once, read or being answered
BACKLOG = 128  # connections the kernel holds until accepted (socketserver's 5 dropped a burst of scrapes)


class Limits(Struct, frozen=True):
    """What a BoundedHTTPServer allows (tests make them small)."""

    deadline: float = REQUEST_DEADLINE
    idle: float = IDLE_TIMEOUT
    workers: int = WORKERS
    connections: int = MAX_OPEN
    body: int = MOST_GET_BODY
    buffered: int = BUFFERED


Answer = tuple[int, list[tuple[str, str]], bytes]  # status, headers, body


class QuietHandler:
    """What kfin serve's and kfin guard's endpoints share: one whole request in (read by BoundedHTTPServer), one
    answer out, worked out in a worker thread; `do_GET`, `do_POST`... answer with `_answer`. No line per request
    (one per scrape or review would drown the log)."""

    def __init__(self, command: str, path: str, body: bytes):
        self.command, self.path, self.body = command, path, body
        self.answer: Answer | None = None

    def _answer(self, status: int, body: str, content_type: str = "text/plain; charset=utf-8") -> None:
        data = body.encode()
        headers = [("Content-Type", content_type), ("Content-Length", str(len(data)))]
        self.answer = (status, headers, b"" if self.command == "HEAD" else data)


class _RefusalError(Exception):
    """A request answered by the server itself, and its connection closed: it never waits for a worker."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


class _Client:
    """A connection's share of the limits."""

    __slots__ = ("held", "idle", "waiting")

    def __init__(self) -> None:
        self.held = 0  # bytes of a request received and not yet answered
        self.idle = False  # between two requests of a keep-alive connection: nothing of the next one yet
        self.waiting = False  # its whole request waits for a worker


class BoundedHTTPServer:
    """An HTTP/1.1 server that slow, silent or many clients cannot starve (see Limits), quiet about clients that go
    away. `answering()` says whether it has turned requests away for want of room lately (readiness)."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[QuietHandler],
        limits: Limits | None = None,
        log: Callable[[str], None] | None = None,
    ):
        """`log`: told when it begins to turn requests away (once, until it has had room for a deadline)."""
        self.limits, self._handler, self._log = limits or Limits(), handler, log
        self.socket = socket.create_server(address, backlog=BACKLOG)
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self.server_port = self.server_address[1]
        self._read: dict[asyncio.Task[None], _Client] = {}  # connections being read or idle, oldest first
        self._waiting = self._buffered = 0
        self._refused_at = -math.inf  # when a request was last turned away for want of room (monotonic)
        self._stopping, self._stopped = threading.Event(), threading.Event()
        self._stopped.set()

    def context(self) -> ssl.SSLContext | None:
        """The TLS context of a new connection (None: plain HTTP); taken for each, so a new certificate serves at
        once."""
        return None

    def answering(self) -> bool:
        """False while whole requests wait for a worker, and for one deadline after a request was turned away
        for want of room (every worker busy past its deadline, or the buffered bytes at their limit)."""
        return not self._waiting and time.monotonic() - self._refused_at > self.limits.deadline

    def serve_until(self, stop: threading.Event) -> None:
        """Serve in this thread until `stop` is set (by a signal handler, or shutdown()). Idle, it sleeps until a
        client connects or a deadline comes: a watching kfin serve costs nothing while nothing changes."""
        asyncio.run(self._serve(stop))

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """socketserver's name for serving in a thread until shutdown() (`poll_interval` is not needed)."""
        self._stopped.clear()
        try:
            self.serve_until(self._stopping)
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        self._stopping.set()
        self._stopped.wait()

    def server_close(self) -> None:
        self.socket.close()

    async def _serve(self, stop: threading.Event) -> None:
        loop, stopped = asyncio.get_running_loop(), asyncio.Event()
        self._slots = asyncio.Semaphore(self.limits.workers)

        def wake() -> None:  # a threading.Event cannot be awaited: a thread of its own waits for it
            stop.wait()
            try:
                loop.call_soon_threadsafe(stopped.set)
            except RuntimeError:  # the loop ended otherwise
                pass

        threading.Thread(target=wake, daemon=True, name="kfin-http-stop").start()
        server = await asyncio.start_server(self._connection, sock=self.socket, backlog=BACKLOG)
        try:
            await stopped.wait()
        finally:  # asyncio.run then cancels every connection's task: each closes its own
            with contextlib.suppress(OSError, ValueError):  # closed by server_close() from another thread
                server.close()

    def _refused(self, why: str) -> None:
        now = time.monotonic()
        news, self._refused_at = now - self._refused_at > self.limits.deadline, now
        if news and self._log is not None:
            self._log(f"turning requests away: {why} (not ready until it has room again)")

    def _hold(self, client: _Client, size: int) -> None:
        """Count bytes received; over the budget, close the oldest connection holding part of a request for them."""
        client.held += size
        self._buffered += size
        while self._buffered > self.limits.buffered:
            victim = next((task for task, other in self._read.items() if other is not client and other.held), None)
            if victim is None:  # what is held is being answered: this one cannot be, now
                self._refused(f"the requests it holds fill its {self.limits.buffered} bytes")
                raise _RefusalError(503, "kfin is answering as many requests as it holds: try again")
            self._let_go(victim)

    def _release(self, client: _Client) -> None:
        self._buffered -= client.held
        client.held = 0

    def _let_go(self, task: asyncio.Task[None]) -> None:
        client = self._read.pop(task, None)
        if client is not None:
            self._release(client)
            task.cancel()

    def _make_room(self) -> None:
        """At the connection limit, close the oldest connection that has sent nothing of a request (idle between
        two, silent, or in its TLS handshake), else the oldest being read: the slowest."""
        if self._read and len(self._read) >= self.limits.connections:
            self._let_go(next((task for task, client in self._read.items() if not client.held), next(iter(self._read))))

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task, client = asyncio.current_task(), _Client()
        assert task is not None
        self._make_room()
        self._read[task] = client
        http = h11.Connection(h11.SERVER, max_incomplete_event_size=MOST_HEAD)
        clean = False
        try:
            async with asyncio.timeout(self.limits.deadline) as budget:  # TLS handshake, head and body together
                try:
                    # a TLS handshake's last flight and an answer are separate writes: without TCP_NODELAY (asyncio sets
                    # it only on sockets made with IPPROTO_TCP) Nagle's algorithm holds the answer until the client's
                    # delayed ACK (40 ms on Linux)
                    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
                    context = self.context()
                    if context is not None:
                        await writer.start_tls(context)
                    while await self._exchange(task, client, http, reader, writer, budget):
                        pass
                except h11.RemoteProtocolError as error:
                    _refuse(http, writer, *_refusal(error))
                except _RefusalError as refusal:
                    _refuse(http, writer, refusal.status, refusal.reason)
                clean = True
        except TimeoutError:
            if client.waiting:  # no one waits for its answer any more
                self._refused(f"all {self.limits.workers} workers busy past a request's deadline")
        except Exception:  # reset, a TLS handshake that failed, no certificate now: the client's own business
            pass
        except asyncio.CancelledError:  # let go for room, or the server stopped: a task ending cancelled would make
            pass  # asyncio's streams log a traceback (Python 3.11)
        finally:
            self._read.pop(task, None)
            self._release(client)
            if clean:
                writer.close()  # after what was written
            else:
                writer.transport.abort()

    async def _exchange(
        self,
        task: asyncio.Task[None],
        client: _Client,
        http: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        budget: asyncio.Timeout,
    ) -> bool:
        """Read one request, have a worker answer it and send the answer: False once the connection is done."""
        loop = asyncio.get_running_loop()

        async def next_event() -> object:
            while (event := http.next_event()) is h11.NEED_DATA:
                if http.they_are_waiting_for_100_continue:  # curl waits for it before sending the body
                    writer.write(
                        _sent(http, h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"))
                    )
                data = await reader.read(65536)
                if client.idle and data:  # its next request begins: it has one deadline for all of it
                    client.idle = False
                    budget.reschedule(loop.time() + self.limits.deadline)
                self._hold(client, len(data))
                http.receive_data(data)
            return event

        request = await next_event()
        if not isinstance(request, h11.Request):  # closed between requests
            return False
        fields = dict(request.headers)  # h11 refused conflicting Content-Lengths, and names are lowercase
        if b"transfer-encoding" in fields:
            raise _RefusalError(411, "a body is read with a Content-Length, never chunked")
        if int(fields.get(b"content-length", 0)) > self.limits.body:
            raise _RefusalError(413, f"the body is over {self.limits.body} bytes")
        body = bytearray()
        while isinstance(event := await next_event(), h11.Data):
            body += event.data
        self._read.pop(task, None)  # neither silent nor slow while it waits or is answered
        client.waiting = True
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        client.waiting = False
        try:
            budget.reschedule(None)  # a worker's answer is awaited as long as it takes
            answer = await self._in_worker(request, bytes(body))
        finally:
            self._slots.release()
        budget.reschedule(loop.time() + self.limits.deadline)  # to send it: a client that reads none is let go
        if answer is None:
            return False
        _answer(http, writer, *answer)
        await writer.drain()
        self._release(client)
        if http.our_state is not h11.DONE or http.their_state is not h11.DONE:
            return False
        http.start_next_cycle()
        self._make_room()
        self._read[task] = client
        self._hold(client, len(http.trailing_data[0]))  # its next request, sent with this one (pipelined)
        client.idle = not client.held
        budget.reschedule(loop.time() + (self.limits.idle if client.idle else self.limits.deadline))
        return True

    async def _in_worker(self, request: h11.Request, body: bytes) -> Answer | None:
        """Answered in a thread of its own: a daemon, as a stop (SIGTERM) never waits for an answer no one reads."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer | None] = loop.create_future()

        def work() -> None:
            result = self._work(request, body)
            try:
                loop.call_soon_threadsafe(_settle, answer, result)
            except RuntimeError:  # the server stopped meanwhile
                pass

        threading.Thread(target=work, daemon=True, name="kfin-http").start()
        return await answer

    def _work(self, request: h11.Request, body: bytes) -> Answer | None:
        """In a worker: the handler's answer (None: it failed, the connection is closed unanswered)."""
        handler = self._handler(request.method.decode("ascii"), request.target.decode("latin-1"), body)
        method = getattr(handler, f"do_{handler.command}", None)
        if method is None:
            handler._answer(501, f"unsupported method {handler.command}\n")
            return handler.answer
        try:
            method()
        except Exception:  # its own business: no traceback in the log
            return None
        return handler.answer


def _settle(future: asyncio.Future[Answer | None], result: Answer | None) -> None:
    if not future.done():  # else the client was let go meanwhile
        future.set_result(result)


def _refusal(error: h11.RemoteProtocolError) -> tuple[int, str]:
    """The answer to a request h11 could not read (the words of kfin's docs for the limits)."""
    if "Transfer-Encoding" in str(error):
        return 411, "a body is read with a Content-Length, never chunked"
    if "Content-Length" in str(error):
        return 400, "Content-Length is not one number"
    if error.error_status_hint == 431:
        return 431, f"the request line and headers are over {MOST_HEAD} bytes"
    return 400, f"not an HTTP/1.1 request: {error}"


def _sent(http: h11.Connection, event: h11.Event) -> bytes:
    return http.send(event) or b""


def _answer(
    http: h11.Connection, writer: asyncio.StreamWriter, status: int, headers: list[tuple[str, str]], body: bytes
) -> None:
    try:
        head = h11.Response(
            status_code=status, headers=[*headers, ("Date", formatdate(usegmt=True))], reason=HTTPStatus(status).phrase
        )
        writer.write(
            _sent(http, head) + (_sent(http, h11.Data(data=body)) if body else b"") + _sent(http, h11.EndOfMessage())
        )
    except h11.LocalProtocolError:  # no answer can be sent on it now
        pass


def _refuse(http: h11.Connection, writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """The server's own answer, before it closes the connection."""
    body = f"{reason}\n".encode()
    headers = [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
    ]
    _answer(http, writer, status, headers, body)


def http_server(exporter: Exporter, host: str, port: int, limits: Limits | None = None) -> BoundedHTTPServer:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._answer(200, exporter.exposition(), metrics.CONTENT_TYPE)
            elif path == "/healthz":
                self._answer(200, "ok\n")
            elif path == "/readyz":
                if not exporter.ready():
                    self._answer(503, "no scan has succeeded yet\n")
                elif not server.answering():
                    self._answer(503, "turning requests away: more than it can answer at once\n")
                else:
                    self._answer(200, "ok\n")
            else:
                self._answer(404, "not found: try /metrics, /healthz or /readyz\n")

        do_HEAD = do_GET

    try:
        server = BoundedHTTPServer((host, port), Handler, limits, exporter.log)
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
