"""The seam between kfin and an API server: a Request value in, a Response value out, through a Transport (as
httpx's transports). Urllib3Transport sends over a urllib3 pool: each request answered within its deadline,
dropped connections retried where that is safe, traced (-v), connection failures said in kfin's words; a watch's
stream opened. MockTransport answers from a function, for tests. What an answer's status means (kfin's errors, the
server's warnings) is read from the Response by check_answer, the same whichever transport answered."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlencode

from kfin import __version__
from kfin.api import trace
from kfin.api.kubeconfig_types import header_safe
from kfin.api.shapes import ShapeError
from kfin.errors import APIError, AuthError, ConfigError, ForbiddenError, KfinError, NotFoundError, UnreachableError
from kfin.model import JSON
from kfin.names import quoted
from kfin.settings import Settings
from kfin.util.text import printable, redact_url

# (verb, resource, namespace) of a request, for the message of a 403
What = tuple[str, str, str | None]
Query = dict[str, Any]  # query parameters: a None value is left out
Headers = dict[str, str]

APPLICATION_JSON = "application/json"
# A Warning header's value (RFC 7234 5.5): code, agent, "quoted text" (k8s.io/apimachinery pkg/util/net
# NewWarningHeader escapes quotes and backslashes); kube-apiserver sends one header per warning, and a proxy may
# join them with commas.
WARNING = re.compile(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"')

# Without --request-timeout, a connection (TLS handshake included) and each silence of the server are still
# bounded: kubectl's dial timeout, and more than any real server stays silent while it answers.
DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT = 30.0, 120.0


@dataclass(frozen=True)
class Request:
    """One request as kfin means it: what a transport sends, and what its errors are to name."""

    method: str
    path: str  # percent-encoded already (kfin.api.paths builds every path)
    query: Mapping[str, str | int] = field(default_factory=dict)  # only what is sent: no None values
    body: bytes | None = None
    content_type: str | None = None  # of the body
    accept: str = APPLICATION_JSON
    headers: Mapping[str, str] = field(default_factory=dict)  # more: Impersonate-User, If-None-Match
    # the deadline of the whole request, retries and a slowly trickled body included, as kubectl's
    # --request-timeout; of a stream, of its opening. None: each wait bounded by the defaults above.
    timeout: float | None = None
    stream: bool = False  # the answer is read as it comes (a watch): Response.stream
    idle: float | None = None  # a stream's longest silence before it is taken as lost
    what: What | None = None  # (verb, resource, namespace), for the message of a 403

    def target(self) -> str:
        """The path and its query, as sent."""
        return self.path + ("?" + urlencode(self.query) if self.query else "")


class ByteStream(Protocol):
    """A streamed answer's body: its chunks as they come."""

    def __iter__(self) -> Iterator[bytes]:
        """The chunks until the stream ends, or breaks (a broken stream just ends: its reader starts again)."""
        ...

    def read(self) -> bytes:
        """The rest, whole (an error's Status)."""
        ...

    def close(self) -> None:
        """Done with it: a stream left before its end is never reused."""
        ...

    def shutdown(self) -> None:
        """Ends it at once, from another thread."""
        ...


@dataclass(frozen=True)
class Response:
    """What the server answered: its status, headers and body; of a streamed request, the body is `stream`, to
    read and close. kfin looks headers up as HTTP spells them (Content-Type, ETag, Location, Warning): urllib3's
    answer in any case, a mock's as it spells them."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    reason: str = ""
    stream: ByteStream | None = None


class Transport(Protocol):
    """What Kube sends its requests through: one server, named for messages."""

    context: str  # the kubeconfig context
    server: str  # its URL
    shown: str  # its URL as messages show it: never with a password in it
    settings: Settings  # the command's: its -v traces each request (kfin.api.trace)

    def send(self, request: Request) -> Response:
        """The server's answer to `request`, whatever its status; a connection that fails raises (a KfinError)."""
        ...


class ChunkStream:
    """A stream of chunks known in advance (MockTransport's answers)."""

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks = iter(chunks)
        self._ended = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            if self._ended.is_set():
                return
            yield chunk

    def read(self) -> bytes:
        return b"".join(self)

    def close(self) -> None:
        self._ended.set()

    def shutdown(self) -> None:
        self._ended.set()


class MockTransport:
    """A transport that answers each request with `handler(request)`, for tests (as httpx's MockTransport)."""

    def __init__(
        self,
        handler: Callable[[Request], Response],
        context: str = "mock",
        server: str = "https://mock.invalid",
        settings: Settings | None = None,
    ):
        self.handler = handler
        self.context, self.server, self.shown = context, server, redact_url(server)
        self.settings = settings or Settings()

    def send(self, request: Request) -> Response:
        return self.handler(request)


# ----- what an answer means: the same whichever transport brought it ------------------------------------------
def show_warning(text: str) -> None:
    """What the API server warns about a write kfin made (an admission webhook's `warnings`, kfin guard's among
    them; a finalizer name it dislikes), on stderr as kubectl shows it."""
    print(f"Warning: {printable(text, one_line=True)}", file=sys.stderr, flush=True)


def warnings_of(headers: Mapping[str, str]) -> list[str]:
    """The texts of a response's Warning headers, unescaped."""
    getlist = getattr(headers, "getlist", None)  # urllib3's: one value per header line
    values = getlist("Warning") if getlist else [v for k, v in headers.items() if k.lower() == "warning"]
    return [re.sub(r"\\(.)", r"\1", m) for value in values for m in WARNING.findall(_as_utf8(value))]


def _as_utf8(value: str) -> str:
    """http.client reads header bytes as Latin-1; kube-apiserver sends a warning's text as UTF-8 (apimachinery's
    NewWarningHeader requires valid UTF-8 and writes it as it is)."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


SAFE_TO_REPEAT = frozenset({"GET", "HEAD"})


def check_answer(transport: Transport, request: Request, response: Response, check: bool = True) -> None:
    """Raises the error an answer's status means (unless `check` is False: a dry run's rejection is its answer;
    a 401 is the credentials' and always raises); shows the warnings of a write that was carried out."""
    status = response.status
    if status >= 400 and (check or status == 401):
        raise api_error(transport, status, response.reason, response.body, request.what)
    if 300 <= status < 400 and status != 304:  # 304: an ETag kfin sent still matches
        raise redirect_error(transport, status, response.headers.get("Location"))
    if request.method not in SAFE_TO_REPEAT and not request.query.get("dryRun") and status < 300:
        for text in warnings_of(response.headers):  # a dry run's are kfin's own business (explain)
            show_warning(text)


def decode(transport: Transport, path: str, data: bytes) -> Any:
    """An answer's JSON (None for an empty one)."""
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        if _html(data):
            raise not_kubernetes(transport, f"an HTML page for {path}") from None
        raise APIError(f"the API server at {transport.shown} answered {path} with something that is not JSON") from None
    except RecursionError:  # json's decoder recurses: no real answer nests this deep
        raise APIError(f"the API server at {transport.shown} answered {path} with JSON nested too deeply") from None


def redirect_error(transport: Transport, code: int, location: str | None) -> KfinError:
    """A 3xx: the API server never redirects; following one could send the credentials elsewhere."""
    to = f" to {quoted(redact_url(location))}" if location else ""
    return APIError(
        f"the API server at {transport.shown} answered {code} (a redirect{to}): kfin follows no "
        "redirects; check the server URL of context " + quoted(transport.context)
    )


def not_kubernetes(transport: Transport, answer: str) -> APIError:
    """Another HTTP server than a Kubernetes API server: its page is no message for the user."""
    return APIError(
        f"the server at {transport.shown} does not answer like a Kubernetes API server ({answer}): check the server "
        f"URL of context {quoted(transport.context)}"
    )


def api_error(transport: Transport, code: int, reason: str, body: bytes, what: What | None) -> KfinError:
    status = _status_body(body)
    message = status.get("message") or (body or b"").decode(errors="replace").strip() or reason
    if code == 401:
        return AuthError(
            f"the API server at {transport.shown} rejected the credentials of context {transport.context} "
            "(401 Unauthorized): log in again or check the kubeconfig user"
        )
    if not status and (_html(body) or _json_document(body)):
        # kube-apiserver's errors are a Status, or a line of plain text (Go's "404 page not found")
        kind = "an HTML page" if _html(body) else "JSON that is not a Kubernetes Status"
        return not_kubernetes(transport, f"{code} {reason} with {kind}")
    if code == 403:
        verb, resource, namespace = what or ("", "", None)
        if verb:
            where = f' in namespace "{namespace}"' if namespace else " at cluster scope"
            return ForbiddenError(
                f'forbidden: kfin needs "{verb}" on "{resource}"{where} (server said: {message})',
                verb,
                resource,
                namespace,
            )
        return ForbiddenError(f"forbidden: {message}")
    if code == 404:
        details: JSON = status["details"] if isinstance(status.get("details"), dict) else {}
        return NotFoundError(message, str(details.get("kind") or ""), str(details.get("name") or ""))
    if code == 503 and not status:  # an aggregated API without a backend answers in plain text
        return APIError(
            f"{message} (503): the APIService behind it has no available backend", code, "ServiceUnavailable"
        )
    return APIError(
        f"{message} ({code} {status.get('reason') or reason})", code, status.get("reason", ""), _causes(status)
    )


# ----- the transport kfin connects with ----------------------------------------------------------------------
class Urllib3Transport:
    """A urllib3 pool to one API server, plus the client Configuration that knows the credentials (and refreshes
    them)."""

    # The client's refresh hook re-applies the whole kubeconfig (and re-reads proxy settings from the
    # environment) on every call: about a millisecond a request, measured in bench/. Tokens that expire
    # are refreshed by that hook 5 minutes early, so asking it every few seconds loses nothing.
    AUTH_REFRESH_SECONDS = 5.0

    def __init__(
        self,
        configuration: Any,
        pool: Any,
        context: str,
        server: str,
        settings: Settings | None = None,
        auth_refresh_seconds: float = AUTH_REFRESH_SECONDS,
    ):
        self.configuration, self.pool, self.context = configuration, pool, context
        self.server = server
        self.settings = settings or Settings()
        self.shown = redact_url(server)
        self.auth_refresh_seconds = auth_refresh_seconds
        self._auth: Headers | None = None
        self._auth_at = 0.0
        self._auth_lock = threading.Lock()

    def auth_headers(self) -> Headers:
        with self._auth_lock:
            now = time.monotonic()
            if self._auth is None or now - self._auth_at >= self.auth_refresh_seconds:
                headers: Headers = {}
                for setting in self.configuration.auth_settings().values():
                    if setting.get("in") == "header" and setting.get("value"):
                        # a token file ends with a line break more often than not: kubectl trims it too
                        value = str(setting["value"]).strip()
                        if not header_safe(value):  # from a token file or a plugin; never printed
                            raise ConfigError(
                                f"the credentials of context {quoted(self.context)} hold a line break, a control "
                                "character or a character outside Latin-1: they cannot be sent in an HTTP header"
                            )
                        headers[setting["key"]] = value
                self._auth, self._auth_at = headers, now
            return dict(self._auth)

    # kfin's own retry policy (the pool is given none: every request says retries=False). Dropped connections are
    # retried within the deadline: a refused port at most once, a lost answer once for reads only. A write whose
    # answer is lost may have been carried out: repeated, a PUT /finalize or a DELETE answers 404 or 409 for its
    # own success, and the audit log would say "nothing removed". The caller reads the object again instead
    # (kfin.core.remove.apply).
    RETRY_CONNECT, RETRY_READ = 1, 1

    def send(self, request: Request) -> Response:
        return self._stream(request) if request.stream else self._send(request)

    def _send(self, request: Request) -> Response:
        """One request, its whole answer read within the deadline; dropped connections retried where safe."""
        import urllib3

        method = request.method
        deadline = time.monotonic() + request.timeout if request.timeout else None
        sent = self.headers(request)
        url = self.server + request.target()
        tries = {"connect": 0, "read": 0}
        while True:
            started = time.monotonic()
            left = self._left(deadline)
            try:
                response = self.pool.request(
                    method,
                    url,
                    body=request.body,
                    headers=sent,
                    retries=False,
                    redirect=False,
                    preload_content=False,
                    timeout=urllib3.Timeout(connect=left, read=left)
                    if left
                    else urllib3.Timeout(connect=DEFAULT_CONNECT_TIMEOUT, read=DEFAULT_READ_TIMEOUT),
                )
                payload = _read_body(response, deadline)
                trace.request(
                    self.settings.trace, method, url, response.status, response.reason or "", started, sent, payload
                )
            except _DeadlinePassedError:
                raise self.connection_error(TimeoutError("timed out")) from None
            except (urllib3.exceptions.HTTPError, OSError) as error:
                step = (
                    "connect"
                    if isinstance(
                        error, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)
                    )
                    or _is_handshake_alert(error)
                    else "read"
                )
                limit = self.RETRY_CONNECT if step == "connect" else self.RETRY_READ
                retry = (
                    tries[step] < limit
                    and (step == "connect" or method in SAFE_TO_REPEAT)
                    and not isinstance(error, urllib3.exceptions.TimeoutError)
                    and (not _is_tls(error) or _is_handshake_alert(error))
                )
                if retry and (deadline is None or deadline - time.monotonic() > 0.1):
                    tries[step] += 1
                    time.sleep(0.1)
                    continue
                raise self.connection_error(error) from None
            return Response(response.status, response.headers, payload, response.reason or "")

    def _stream(self, request: Request) -> Response:
        """A streamed request (a watch), open: its answer's body is read as it comes."""
        import urllib3

        headers = self.headers(request)
        url = self.server + request.target()
        wait = urllib3.Timeout(
            connect=request.timeout or DEFAULT_CONNECT_TIMEOUT, read=request.idle or DEFAULT_READ_TIMEOUT
        )
        started = time.monotonic()
        try:
            response = self.pool.request(
                request.method, url, headers=headers, preload_content=False, retries=False, timeout=wait
            )
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise self.connection_error(error) from None
        trace.request(self.settings.trace, "WATCH", url, response.status, response.reason or "", started, headers, b"")
        return Response(response.status, response.headers, reason=response.reason or "", stream=_Stream(response))

    def headers(self, request: Request) -> Headers:
        """What every request sends: what it accepts, who asks, and the credentials (those win); the body's type."""
        sent = {"Accept": request.accept, "User-Agent": f"kfin/{__version__}", **request.headers, **self.auth_headers()}
        if request.body is not None:
            sent["Content-Type"] = request.content_type or APPLICATION_JSON
        return sent

    def _left(self, deadline: float | None) -> float | None:
        if deadline is None:
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            raise self.connection_error(TimeoutError("timed out"))
        return left

    def connection_error(self, reason: BaseException) -> KfinError:
        from urllib3.exceptions import MaxRetryError, NewConnectionError, SSLError
        from urllib3.exceptions import TimeoutError as Urllib3Timeout

        if isinstance(reason, MaxRetryError) and reason.reason is not None:
            reason = reason.reason
        text = str(reason)
        if isinstance(reason, NewConnectionError):  # a subclass of the timeout errors, but not one
            return UnreachableError(
                f"cannot reach the API server at {self.shown} (context {self.context}): {short_error(text)}"
            )
        if isinstance(reason, SSLError) or "SSL" in text or "certificate" in text:
            return AuthError(f"TLS handshake with {self.shown} failed (context {self.context}): {short_error(text)}")
        if isinstance(reason, (Urllib3Timeout, TimeoutError)) or "timed out" in text:
            return UnreachableError(f"the API server at {self.shown} did not answer in time (context {self.context})")
        dropped = _dropped(reason)
        if dropped:
            return UnreachableError(f"the API server at {self.shown} {dropped} (context {self.context})")
        return UnreachableError(
            f"cannot reach the API server at {self.shown} (context {self.context}): {short_error(text)}"
        )


class _Stream:
    """A urllib3 response read as it comes."""

    def __init__(self, response: Any):
        self._response = response

    def __iter__(self) -> Iterator[bytes]:
        import urllib3

        try:
            yield from self._response.stream(1 << 16)
        except (urllib3.exceptions.HTTPError, OSError):  # the stream broke: as ended, for its reader
            return

    def read(self) -> bytes:
        data: bytes = self._response.read()
        return data

    def close(self) -> None:
        self._response.close()
        self._response.release_conn()

    def shutdown(self) -> None:
        self._response.shutdown()


class _DeadlinePassedError(Exception):
    """--request-timeout ran out while the answer was still arriving."""


def max_answer_bytes() -> int:
    """The largest answer kfin reads (256 MiB; KFIN_MAX_ANSWER_MB sets it): a page of 500 objects is a few MiB,
    an endless chunked answer or a decompression bomb never ends."""
    try:
        megabytes = int(os.environ.get("KFIN_MAX_ANSWER_MB", "256"))
    except ValueError:
        megabytes = 256
    return max(megabytes, 1) << 20


def _read_body(response: Any, deadline: float | None) -> bytes:
    """The whole body, each socket wait limited to the time left before `deadline`."""
    chunks, size, limit = [], 0, max_answer_bytes()
    try:
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _DeadlinePassedError()
                sock = getattr(getattr(response, "connection", None), "sock", None)
                if sock is not None:
                    sock.settimeout(left)
            chunk = response.read1(1 << 16)  # decompressed: a gzip bomb is counted as what it becomes
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise ShapeError(
                    f"an answer larger than {limit // (1 << 20)} MiB: refused (set KFIN_MAX_ANSWER_MB to allow more)"
                )
    except BaseException:
        response.close()  # the connection is in an unknown state: never back to the pool
        raise
    response.release_conn()
    return b"".join(chunks)


def _dropped(error: BaseException) -> str | None:
    """What a connection that ended without a whole answer did, in kfin's words (urllib3 says it as
    "('Connection aborted.', RemoteDisconnected('Remote end closed connection without response'))"), or None."""
    from urllib3.exceptions import IncompleteRead, InvalidChunkLength, ProtocolError

    cause = error.args[1] if isinstance(error, ProtocolError) and len(error.args) > 1 else error
    if isinstance(cause, ConnectionResetError) and cause.errno is None:
        return "closed the connection without answering"  # http.client's RemoteDisconnected: no status line came
    if isinstance(cause, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
        return "reset the connection before answering"
    if isinstance(cause, (IncompleteRead, InvalidChunkLength)):
        return "closed the connection before its answer was complete"
    if isinstance(error, ProtocolError):
        return "broke off the connection"
    return None


def _is_tls(error: BaseException) -> bool:
    import urllib3

    return isinstance(error, urllib3.exceptions.SSLError) or "SSL" in str(error) or "certificate" in str(error)


def _is_handshake_alert(error: BaseException) -> bool:
    """The server's TLS layer could not decode what it got (seen once from a busy kube-apiserver in CI): no HTTP
    request was read, so one retry is safe for any verb. Certificate errors stay final: they are permanent."""
    return "ALERT_DECODE_ERROR" in str(error)


def _status_body(body: bytes | None) -> JSON:
    try:
        parsed = json.loads(body) if body else {}
    except (ValueError, TypeError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) and parsed.get("kind") == "Status" else {}


def _html(body: bytes | None) -> bool:
    """An HTML (or XML) page: no answer of kube-apiserver starts with '<'."""
    return (body or b"").lstrip()[:1] == b"<"


def _json_document(body: bytes | None) -> bool:
    """A JSON object or array (a Status is one too: the caller tells them apart)."""
    try:
        return isinstance(json.loads(body or b""), (dict, list))
    except (ValueError, RecursionError):
        return False


def _causes(status: JSON) -> tuple[JSON, ...]:
    """A Status's details.causes, those of the expected shape (strings only)."""
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(causes, list):
        return ()
    return tuple(
        {k: v for k, v in cause.items() if k in ("reason", "message", "field") and isinstance(v, str)}
        for cause in causes
        if isinstance(cause, dict)
    )


def short_error(text: str) -> str:
    """The useful end of urllib3's long connection messages."""
    for marker in (
        "Connection refused",
        "Name or service not known",
        "No route to host",
        "nodename nor servname",
        "timed out",
        "WRONG_VERSION_NUMBER",
        "CERTIFICATE_VERIFY_FAILED",
    ):
        if marker in text:
            return marker.lower() if marker[0].isupper() and " " in marker else marker
    return text.splitlines()[0][:200]
