"""The transport to one API server: one request sent, its answer read within the deadline, retried where that is
safe, traced (-v), and mapped to kfin's errors; a watch's stream opened. Transport.send is the one seam every
request goes through (a test may hand Kube another)."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any
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


def show_warning(text: str) -> None:
    """What the API server warns about a write kfin made (an admission webhook's `warnings`, kfin guard's among
    them; a finalizer name it dislikes), on stderr as kubectl shows it."""
    print(f"Warning: {printable(text, one_line=True)}", file=sys.stderr, flush=True)


def warnings_of(headers: Any) -> list[str]:
    """The texts of a response's Warning headers, unescaped."""
    values = headers.getlist("Warning") if hasattr(headers, "getlist") else headers.get_all("Warning") or []
    return [re.sub(r"\\(.)", r"\1", m) for value in values for m in WARNING.findall(_as_utf8(value))]


def _as_utf8(value: str) -> str:
    """http.client reads header bytes as Latin-1; kube-apiserver sends a warning's text as UTF-8 (apimachinery's
    NewWarningHeader requires valid UTF-8 and writes it as it is)."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


# Without --request-timeout, a connection (TLS handshake included) and each silence of the server are still
# bounded: kubectl's dial timeout, and more than any real server stays silent while it answers.
DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT = 30.0, 120.0


class Transport:
    """A urllib3 pool to one API server, plus the client Configuration that knows the credentials (and refreshes
    them); `send` is the one seam every request goes through."""

    # The client's refresh hook re-applies the whole kubeconfig (and re-reads proxy settings from the
    # environment) on every call: about a millisecond a request, measured in bench/. Tokens that expire
    # are refreshed by that hook 5 minutes early, so asking it every few seconds loses nothing.
    AUTH_REFRESH_SECONDS = 5.0

    def __init__(self, configuration: Any, pool: Any, context: str, server: str, settings: Settings | None = None):
        self.configuration, self.pool, self.context = configuration, pool, context
        self.server = server
        self.settings = settings or Settings()  # the command's: its -v traces each request (kfin.api.trace)
        self.shown = redact_url(server)  # how messages name it: never with a password in it
        self._auth: Headers | None = None
        self._auth_at = 0.0
        self._auth_lock = threading.Lock()

    def auth_headers(self) -> Headers:
        with self._auth_lock:
            now = time.monotonic()
            if self._auth is None or now - self._auth_at >= self.AUTH_REFRESH_SECONDS:
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

    # Dropped connections are retried within the deadline: a refused port at most once, a lost answer
    # once for reads only. A write whose answer is lost may have been carried out: repeated, a PUT /finalize
    # or a DELETE answers 404 or 409 for its own success, and the audit log would say "nothing removed". The
    # caller reads the object again instead (kfin.core.removal).
    RETRY_CONNECT, RETRY_READ = 1, 1
    SAFE_TO_REPEAT = frozenset({"GET", "HEAD"})

    def send(
        self,
        method: str,
        path: str,
        query: Query | None = None,
        body: Any = None,
        accept: str = APPLICATION_JSON,
        content_type: str | None = None,
        what: What | None = None,
        headers: Headers | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> tuple[int, Any, bytes]:
        """(status, response headers, body bytes) of one request; an error status raises (unless `check` is
        False: a dry run's rejection is its answer).

        --request-timeout is a deadline for the whole request, retries and a slowly trickled body
        included, as kubectl's: each wait on the socket gets only the time that is left.
        """
        import urllib3

        deadline = time.monotonic() + timeout if timeout else None
        sent = self.headers(accept, headers)
        data = None
        if body is not None:
            sent["Content-Type"] = content_type or APPLICATION_JSON
            data = json.dumps(body).encode()
        params = {k: v for k, v in (query or {}).items() if v is not None}
        url = self.server + path + (("?" + urlencode(params)) if params else "")
        tries = {"connect": 0, "read": 0}
        while True:
            started = time.monotonic()
            left = self._left(deadline)
            try:
                response = self.pool.request(
                    method,
                    url,
                    body=data,
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
                    and (step == "connect" or method in self.SAFE_TO_REPEAT)
                    and not isinstance(error, urllib3.exceptions.TimeoutError)
                    and (not _is_tls(error) or _is_handshake_alert(error))
                )
                if retry and (deadline is None or deadline - time.monotonic() > 0.1):
                    tries[step] += 1
                    time.sleep(0.1)
                    continue
                raise self.connection_error(error) from None
            if response.status >= 400 and (check or response.status == 401):  # a 401 is the credentials'
                raise self.api_error(response.status, response.reason, payload, what)
            if 300 <= response.status < 400 and response.status != 304:  # 304: an ETag kfin sent still matches
                raise self.redirect_error(response.status, response.headers.get("Location"))
            if method not in self.SAFE_TO_REPEAT and not params.get("dryRun") and response.status < 300:
                for text in warnings_of(response.headers):  # a dry run's are kfin's own business (explain)
                    show_warning(text)
            return response.status, response.headers, payload

    def headers(self, accept: str, extra: Headers | None = None) -> Headers:
        """What every request sends: what it accepts, who asks, and the credentials (those win)."""
        return {"Accept": accept, "User-Agent": f"kfin/{__version__}", **(extra or {}), **self.auth_headers()}

    def _left(self, deadline: float | None) -> float | None:
        if deadline is None:
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            raise self.connection_error(TimeoutError("timed out"))
        return left

    def decode(self, path: str, data: bytes) -> Any:
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError:
            if _html(data):
                raise self.not_kubernetes(f"an HTML page for {path}") from None
            raise APIError(f"the API server at {self.shown} answered {path} with something that is not JSON") from None
        except RecursionError:  # json's decoder recurses: no real answer nests this deep
            raise APIError(f"the API server at {self.shown} answered {path} with JSON nested too deeply") from None

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

    def redirect_error(self, code: int, location: str | None) -> KfinError:
        """A 3xx: the API server never redirects; following one could send the credentials elsewhere."""
        to = f" to {quoted(redact_url(location))}" if location else ""
        return APIError(
            f"the API server at {self.shown} answered {code} (a redirect{to}): kfin follows no "
            "redirects; check the server URL of context " + quoted(self.context)
        )

    def not_kubernetes(self, answer: str) -> APIError:
        """Another HTTP server than a Kubernetes API server: its page is no message for the user."""
        return APIError(
            f"the server at {self.shown} does not answer like a Kubernetes API server ({answer}): check the server "
            f"URL of context {quoted(self.context)}"
        )

    def api_error(self, code: int, reason: str, body: bytes, what: What | None) -> KfinError:
        status = _status_body(body)
        message = status.get("message") or (body or b"").decode(errors="replace").strip() or reason
        if code == 401:
            return AuthError(
                f"the API server at {self.shown} rejected the credentials of context {self.context} "
                "(401 Unauthorized): log in again or check the kubeconfig user"
            )
        if not status and (_html(body) or _json_document(body)):
            # kube-apiserver's errors are a Status, or a line of plain text (Go's "404 page not found")
            kind = "an HTML page" if _html(body) else "JSON that is not a Kubernetes Status"
            return self.not_kubernetes(f"{code} {reason} with {kind}")
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

    def open_stream(
        self, path: str, params: Query, accept: str, what: What | None, wait: Any, opened: Callable[[Any], None] | None
    ) -> Any:
        """A streamed GET (a watch), open, its status checked: the response, to read as it comes and close."""
        import urllib3

        headers = self.headers(accept)
        url = self.server + path + "?" + urlencode(params)
        started = time.monotonic()
        try:
            response = self.pool.request(
                "GET", url, headers=headers, preload_content=False, retries=False, timeout=wait
            )
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise self.connection_error(error) from None
        trace.request(self.settings.trace, "WATCH", url, response.status, response.reason or "", started, headers, b"")
        if opened is not None:
            opened(response)
        try:
            if response.status >= 400:
                raise self.api_error(response.status, response.reason, response.read(), what)
            if response.status >= 300:
                raise self.redirect_error(response.status, response.headers.get("Location"))
        except BaseException:
            response.close()
            response.release_conn()
            raise
        return response


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
