"""`kfin serve`: keep the stuck objects current, read-only, and serve the result to Prometheus.

One thread works the answer out: after each change its watches see (kfin.core.watching), or, with
--rescan, by a scan every interval. The HTTP server answers from the last good result, so a scrape never
waits for an answer and a failed one never empties /metrics (kfin_result_age_seconds says how old it is).

    /metrics   the exposition (kfin.render.metrics), plus kfin serve's own series
    /healthz   200 while the process serves
    /readyz    200 once a scan has succeeded, 503 before (and while it turns requests away for want of room)
"""

from __future__ import annotations

import gc
import io
import math
import selectors
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, cast

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


# The limits of kfin serve's and kfin guard's HTTP servers, as well-kept servers set them (Go's net/http:
# ReadHeaderTimeout, ReadTimeout, IdleTimeout, MaxHeaderBytes). A client is read by one thread that waits on every
# connection at once, and holds a worker (a thread) only once its whole request has arrived: slow or silent
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


class Limits(Struct, frozen=True):
    """What a BoundedHTTPServer allows (tests make them small)."""

    deadline: float = REQUEST_DEADLINE
    idle: float = IDLE_TIMEOUT
    workers: int = WORKERS
    connections: int = MAX_OPEN
    body: int = MOST_GET_BODY
    buffered: int = BUFFERED


class Received:
    """One whole request (its head and body, as sent) and the connection it came on: what a handler is given."""

    def __init__(self, sock: socket.socket, data: bytes):
        self.sock, self.data = sock, data


class _Connection:
    """A connection being read (or idle between requests, or its request waiting for a worker)."""

    __slots__ = ("address", "data", "deadline", "idle", "ready", "secured", "sock")

    def __init__(self, sock: socket.socket, address: Any, deadline: float, secured: bool):
        self.sock, self.address, self.deadline, self.secured = sock, address, deadline, secured
        self.data = bytearray()
        self.idle = False  # between two requests of a keep-alive connection: nothing of the next one yet
        self.ready = 0  # bytes of data that make a whole request, once they have all arrived


class BoundedHTTPServer(HTTPServer):
    """An HTTP server that slow, silent or many clients cannot starve (see Limits), quiet about clients that go
    away. `answering()` says whether it has turned requests away for want of room lately (readiness)."""

    request_queue_size = 128  # connections the kernel holds until accepted (socketserver's 5 drops a burst's)
    # handle_request() (socketserver's, not used by serve_until) must never wait for a client
    timeout = 0

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        limits: Limits | None = None,
        log: Callable[[str], None] | None = None,
    ):
        """`log`: told when it begins to turn requests away (once, until it has had room for a deadline)."""
        self.limits, self._log = limits or Limits(), log
        self._lock = threading.Lock()
        self._open: dict[socket.socket, _Connection] = {}  # in the order they last began to wait: oldest first
        self._waiting: deque[_Connection] = deque()  # whole requests waiting for a worker
        self._returned: deque[_Connection] = deque()  # connections a worker is done with, kept alive
        self._busy = self._buffered = 0
        self._refused_at = -math.inf  # when a request was last turned away for want of room (monotonic)
        self._wake, self._woken = socket.socketpair()
        for end in (self._wake, self._woken):
            end.setblocking(False)
        self._selector: selectors.BaseSelector | None = None
        self._stopping, self._stopped = threading.Event(), threading.Event()
        self._handler = handler
        super().__init__(address, handler)

    # -- what a subclass changes for TLS

    def secure(self, sock: socket.socket) -> socket.socket:
        """The socket to read from (a TLS server wraps it, its handshake not done yet)."""
        return sock

    def handshake(self, sock: socket.socket) -> int:
        """Advance the TLS handshake without waiting: 0 once done, else the selector event it waits for."""
        return 0

    def receive(self, sock: socket.socket) -> bytes | None:
        """What has arrived (b"" once the client closed), or None when nothing has yet."""
        try:
            return sock.recv(65536)
        except BlockingIOError:
            return None

    # -- readiness

    def answering(self) -> bool:
        """False while whole requests wait for a worker, and for one deadline after a request was turned away
        for want of room (every worker busy past its deadline, or the buffered bytes at their limit)."""
        with self._lock:
            return not self._waiting and time.monotonic() - self._refused_at > self.limits.deadline

    def _refused(self, why: str) -> None:
        now = time.monotonic()
        with self._lock:
            news, self._refused_at = now - self._refused_at > self.limits.deadline, now
        if news and self._log is not None:
            self._log(f"turning requests away: {why} (not ready until it has room again)")

    # -- serving

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._stopping.clear()
        self._stopped.clear()
        try:
            self._serve(self._stopping, poll_interval)
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        self._stopping.set()
        self._wake_up()
        self._stopped.wait()

    def serve_until(self, stop: threading.Event) -> None:
        """Serve in this thread until `stop` is set by a signal handler. Idle, it sleeps until a client
        connects, a deadline comes or a signal arrives (the signal wakeup fd), where serve_forever wakes every
        poll interval: a watching kfin serve should cost nothing while nothing changes. Outside the main thread,
        where no wakeup fd can be set, it looks at `stop` every second."""
        main = threading.current_thread() is threading.main_thread()
        previous = signal.set_wakeup_fd(self._wake.fileno(), warn_on_full_buffer=False) if main else -1
        try:
            self._serve(stop, None if main else 1.0)
        finally:
            if main:
                signal.set_wakeup_fd(previous)

    def server_close(self) -> None:
        super().server_close()
        with self._lock:
            connections = [*self._open.values(), *self._waiting, *self._returned]
            self._open.clear()
            self._waiting.clear()
            self._returned.clear()
        for connection in connections:
            _close(connection.sock)
        self._wake.close()
        self._woken.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up or stalls mid-request is its own business: no traceback in the log

    def _wake_up(self) -> None:
        try:
            self._wake.send(b"\0")
        except OSError:  # full (it is woken already) or closed (stopped)
            pass

    def _serve(self, stop: threading.Event, poll: float | None) -> None:
        self.socket.setblocking(False)
        with selectors.DefaultSelector() as selector:
            self._selector = selector
            selector.register(self.socket, selectors.EVENT_READ)
            selector.register(self._woken, selectors.EVENT_READ)
            try:
                while not stop.is_set():
                    wait = self._expire()
                    if poll is not None:
                        wait = poll if wait is None else min(wait, poll)
                    for key, _ in selector.select(wait):
                        if stop.is_set():
                            break
                        if key.fileobj is self.socket:
                            self._accept()
                        elif key.fileobj is self._woken:
                            _drain(self._woken)  # a signal's number, or a worker done: what matters is below
                        else:
                            try:
                                self._read(key.data)
                            except Exception:  # one client never stops the server: it is let go
                                self._drop(key.data)
                    self._take_returned()
            finally:
                self._selector = None

    def _accept(self) -> None:
        for _ in range(64):  # what is waiting to be accepted now, a bounded batch at a time
            try:
                sock, address = self.socket.accept()
            except OSError:  # none left (BlockingIOError), or one gone before it was accepted
                return
            if len(self._open) >= self.limits.connections and not self._evict():
                self._refused(f"{self.limits.connections} connections open, none of them idle or being read")
                _close(sock)
                continue
            try:
                sock.setblocking(False)
                secured = self.secure(sock)
            except Exception:  # no certificate to serve with now: the client tries again
                _close(sock)
                continue
            connection = _Connection(secured, address, time.monotonic() + self.limits.deadline, secured is sock)
            self._open[secured] = connection
            self._watch(connection, selectors.EVENT_READ)

    def _watch(self, connection: _Connection, events: int) -> None:
        assert self._selector is not None
        try:
            self._selector.modify(connection.sock, events, connection)
        except KeyError:
            self._selector.register(connection.sock, events, connection)

    def _forget(self, connection: _Connection) -> bool:
        """Stop reading it (closed, or handed to a worker); False if it was not being read."""
        if self._open.pop(connection.sock, None) is None:
            return False
        if self._selector is not None:
            try:
                self._selector.unregister(connection.sock)
            except (KeyError, ValueError):
                pass
        return True

    def _drop(self, connection: _Connection) -> None:
        if self._forget(connection):
            self._release(len(connection.data))
            _close(connection.sock)

    def _release(self, size: int) -> None:
        with self._lock:
            self._buffered -= size

    def _evict(self, keep: _Connection | None = None, holding: bool = False) -> bool:
        """Close the oldest connection that has sent nothing of a request (idle between two, silent, or in its TLS
        handshake), else the oldest being read: the slowest. With `holding`, only one that holds bytes of one."""
        oldest = None
        for connection in self._open.values():
            if connection is keep or (holding and not connection.data):
                continue
            if not connection.data and not holding:
                oldest = connection
                break
            oldest = oldest or connection
        if oldest is None:
            return False
        self._drop(oldest)
        return True

    def _read(self, connection: _Connection) -> None:
        try:
            if not connection.secured:
                wanted = self.handshake(connection.sock)
                if wanted:
                    self._watch(connection, wanted)
                    return
                connection.secured = True
                self._watch(connection, selectors.EVENT_READ)
            while True:
                chunk = self.receive(connection.sock)
                if chunk is None:
                    return
                if not chunk:
                    self._drop(connection)
                    return
                if connection.idle:  # its next request begins: it has one deadline for all of it
                    connection.idle = False
                    connection.deadline = time.monotonic() + self.limits.deadline
                connection.data += chunk
                with self._lock:
                    self._buffered += len(chunk)
                    over = self._buffered > self.limits.buffered
                while over and self._evict(keep=connection, holding=True):
                    with self._lock:
                        over = self._buffered > self.limits.buffered
                if over:  # what is held is being answered: this one cannot be, now
                    self._refuse(connection, 503, "kfin is answering as many requests as it holds: try again")
                    return
                if self._complete(connection):
                    return
        except OSError:  # reset, or a TLS handshake that failed: nothing to answer
            self._drop(connection)

    def _complete(self, connection: _Connection) -> bool:
        """Hand its request to a worker once all of it is here, or answer a request that cannot be read. True
        when the connection is no longer being read."""
        data = connection.data
        ends = [at + len(mark) for mark in (b"\r\n\r\n", b"\n\n") if (at := data.find(mark, 0, MOST_HEAD + 4)) >= 0]
        if not ends:
            if len(data) > MOST_HEAD:
                self._refuse(connection, 431, f"the request line and headers are over {MOST_HEAD} bytes")
                return True
            return False
        head = min(ends)
        fields = [line.partition(b":") for line in bytes(data[:head]).splitlines()[1:]]
        lengths = {value.strip() for name, _, value in fields if name.strip().lower() == b"content-length"}
        if any(name.strip().lower() == b"transfer-encoding" for name, _, _ in fields):
            self._refuse(connection, 411, "a body is read with a Content-Length, never chunked")
            return True
        if len(lengths) > 1 or not all(n.isdigit() and n.isascii() for n in lengths):
            self._refuse(connection, 400, "Content-Length is not one number")
            return True
        length = int(lengths.pop()) if lengths else 0
        if length > self.limits.body:
            self._refuse(connection, 413, f"the body is over {self.limits.body} bytes")
            return True
        if len(data) < head + length:
            if length and len(data) == head and b"100-continue" in data[:head].lower():  # curl waits for it
                _send(connection.sock, b"HTTP/1.1 100 Continue\r\n\r\n")
            return False
        connection.ready = head + length
        self._forget(connection)
        self._dispatch(connection)
        return True

    def _refuse(self, connection: _Connection, status: int, reason: str) -> None:
        """An answer the reading thread gives itself, and the connection closed: it never waits for a worker."""
        phrase = HTTPStatus(status).phrase
        body = f"{reason}\n".encode()
        head = f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        _send(connection.sock, f"{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        if status == 503:
            self._refused(f"the requests it holds fill its {self.limits.buffered} bytes")
        self._drop(connection)

    def _dispatch(self, connection: _Connection) -> None:
        with self._lock:
            if self._busy >= self.limits.workers:
                self._waiting.append(connection)
                return
            self._busy += 1
        threading.Thread(target=self._work, args=(connection,), daemon=True, name="kfin-http").start()

    def _work(self, connection: _Connection | None) -> None:
        while connection is not None:
            self._serve_one(connection)
            now, late = time.monotonic(), []
            with self._lock:
                connection = None
                while self._waiting and connection is None:
                    waited = self._waiting.popleft()
                    if waited.deadline > now:
                        connection = waited
                    else:
                        late.append(waited)
                if connection is None:
                    self._busy -= 1
            for waited in late:  # no one is waiting for these answers any more
                self._refused(f"all {self.limits.workers} workers busy past a request's deadline")
                self._release(len(waited.data))
                _close(waited.sock)

    def _serve_one(self, connection: _Connection) -> None:
        sock, size = connection.sock, connection.ready
        request, connection.data = connection.data[:size], connection.data[size:]
        keep = False
        try:
            sock.setblocking(True)
            sock.settimeout(self.limits.deadline)  # for writing the answer: a client that reads none is let go
            handler = self._handler(cast(Any, Received(sock, bytes(request))), connection.address, self)
            keep = not handler.close_connection
        except Exception:  # gone, or stalled reading its answer: its own business
            keep = False
        finally:
            self._release(size)
        if not keep:
            self._release(len(connection.data))
            _close(sock)
            return
        with self._lock:
            self._returned.append(connection)
        self._wake_up()

    def _expire(self) -> float | None:
        """Close what is past its deadline; the seconds until the next one (None: none)."""
        now, soonest = time.monotonic(), math.inf
        for connection in list(self._open.values()):
            if connection.deadline <= now:
                self._drop(connection)
            else:
                soonest = min(soonest, connection.deadline)
        late = []
        with self._lock:
            while self._waiting and self._waiting[0].deadline <= now:
                late.append(self._waiting.popleft())
            if self._waiting:
                soonest = min(soonest, self._waiting[0].deadline)
        for connection in late:
            self._refused(f"all {self.limits.workers} workers busy past a request's deadline")
            self._release(len(connection.data))
            _close(connection.sock)
        return None if soonest == math.inf else max(0.0, soonest - now)

    def _take_returned(self) -> None:
        """Connections kept alive after an answer: read again for their next request, within the idle timeout."""
        with self._lock:
            returned = list(self._returned)
            self._returned.clear()
        now = time.monotonic()
        for connection in returned:
            connection.ready = 0
            connection.idle = not connection.data
            connection.deadline = now + (self.limits.idle if connection.idle else self.limits.deadline)
            try:
                connection.sock.setblocking(False)
            except OSError:
                self._release(len(connection.data))
                _close(connection.sock)
                continue
            if len(self._open) >= self.limits.connections and not self._evict():
                self._release(len(connection.data))
                _close(connection.sock)
                continue
            self._open[connection.sock] = connection
            self._watch(connection, selectors.EVENT_READ)
            try:  # its next request may be here already: sent with the last (pipelined), or read by TLS
                if not (connection.data and self._complete(connection)):
                    self._read(connection)
            except Exception:
                self._drop(connection)


def _send(sock: socket.socket, data: bytes) -> None:
    """Send what fits now, without waiting (a short answer before closing)."""
    try:
        sock.send(data)
    except OSError:
        pass


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass


def _drain(end: socket.socket) -> None:
    try:
        while end.recv(512):
            pass
    except OSError:
        pass


class _SendAll(io.BufferedIOBase):
    """A handler's wfile: each write sent whole (socketserver's own writer, which is private)."""

    def __init__(self, sock: socket.socket):
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sock.sendall(data)
        with memoryview(data) as view:
            return view.nbytes


class QuietHandler(BaseHTTPRequestHandler):
    """What kfin serve's and kfin guard's endpoints share: HTTP/1.1, one request per handler (given whole by
    BoundedHTTPServer, read from memory), no line per request (one per scrape or review would drown the log),
    and a whole answer in one call."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = False

    def setup(self) -> None:
        received: Received = self.request
        self.connection = received.sock
        if self.disable_nagle_algorithm:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.rfile = io.BytesIO(received.data)
        self.wfile = _SendAll(self.connection)

    def handle(self) -> None:
        self.close_connection = True
        self.handle_one_request()  # the next request on this connection is read again by the server

    def handle_expect_100(self) -> bool:
        return True  # the server said 100 Continue already, while it read the body

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
