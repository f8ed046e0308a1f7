"""`kfin guard`'s HTTPS endpoint: kube-apiserver's AdmissionReview v1 in, the guard's answer out.

    POST /validate   an AdmissionReview (admission.k8s.io/v1); answered with the same kind, its response's uid
                     the request's
    GET  /healthz    200 while the process serves
    GET  /readyz     200 while the watch cache is filled and every watch is up, and reviews are answered (none turned
                     away for want of room), 503 otherwise
    GET  /metrics    kfin_guard_reviews_total{decision}, kfin_guard_review_seconds (a histogram), kfin_guard_ready

An answer that fails inside kfin allows the deletion, with a warning that says so: the guard never stands in the
way because of itself (its webhook configuration has failurePolicy Ignore for the same reason).
"""

from __future__ import annotations

import json
import os
import ssl
import tempfile
import threading
import time
from collections.abc import Callable

from kfin.model import JSON
from kfin.render import metrics
from kfin.serve.exporter import BoundedHTTPServer, Limits, QuietHandler
from kfin.util.text import one_line, printable

MOST_BODY = 3 * 1024 * 1024  # kube-apiserver's own limit for a request body: an AdmissionReview is never larger
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)  # seconds: the p99 target is 50 ms
ERROR = "error"


class Reviews:
    """What the guard answered, for /metrics."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.decisions: dict[str, int] = {}
        self.buckets = [0] * len(BUCKETS)
        self.count, self.total = 0, 0.0

    def record(self, decision: str, seconds: float) -> None:
        with self._lock:
            self.decisions[decision] = self.decisions.get(decision, 0) + 1
            self.count, self.total = self.count + 1, self.total + seconds
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self.buckets[i] += 1

    def exposition(self, ready: bool) -> str:
        with self._lock:
            decisions, buckets, count, total = dict(self.decisions), list(self.buckets), self.count, self.total
        reviews = metrics.MetricFamily(
            "kfin_guard_reviews_total",
            "counter",
            "DELETE requests kfin guard answered, by decision (allowed, warned, denied, overridden, not-current, "
            "skipped, error).",
            [({"decision": d}, n) for d, n in sorted(decisions.items())],
        )
        name = "kfin_guard_review_seconds"
        lines = [f"# HELP {name} Seconds kfin guard took to answer a review.", f"# TYPE {name} histogram"]
        lines += [f'{name}_bucket{{le="{metrics.number(b)}"}} {n}' for b, n in zip(BUCKETS, buckets, strict=True)]
        lines += [f'{name}_bucket{{le="+Inf"}} {count}', f"{name}_sum {metrics.number(total)}", f"{name}_count {count}"]
        current = metrics.MetricFamily(
            "kfin_guard_ready",
            "gauge",
            "1 while kfin guard's watch cache is filled and every watch is up (its answers are predictions), and no "
            "review is turned away for want of room, else 0.",
            [({}, ready)],
        )
        return reviews.text() + "\n".join(lines) + "\n" + current.text()


class Certificate:
    """The serving certificate, read again when its files change (cert-manager, or kfin's own rotation, replace the
    Secret's files in place): new connections get the new one without a restart."""

    def __init__(self, cert: str, key: str):
        self.cert, self.key = cert, key
        self._lock = threading.Lock()
        self._seen: tuple[int, ...] = ()
        self._context: ssl.SSLContext | None = None
        self.context()  # a certificate that cannot be read is an error at start

    def context(self) -> ssl.SSLContext:
        seen = tuple(os.stat(path).st_mtime_ns for path in (self.cert, self.key))
        with self._lock:
            if self._context is None or seen != self._seen:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.minimum_version = ssl.TLSVersion.TLSv1_2
                context.load_cert_chain(self.cert, self.key)
                self._context, self._seen = context, seen
            return self._context


class HeldCertificate:
    """A serving certificate held in memory (kfin guard --self-signed makes it): `load` swaps it for new connections.
    Python's ssl reads a key from a file only: it is written to a private temporary directory (TMPDIR; in the Pod,
    an emptyDir in memory) and removed as soon as it is read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None

    def load(self, cert: bytes, key: bytes) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="kfin-guard-") as directory:  # mode 0700
            path = os.path.join(directory, "tls.pem")
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
                file.write(key + b"\n" + cert)
            context.load_cert_chain(path)
        with self._lock:
            self._context = context

    def context(self) -> ssl.SSLContext:
        with self._lock:
            if self._context is None:
                raise ssl.SSLError("no serving certificate yet")
            return self._context


class AdmissionServer(BoundedHTTPServer):
    """HTTPS (or, without a certificate, plain HTTP for tests and a sidecar proxy). The TLS handshake is part of the
    request's deadline, and is done by the thread that reads every connection: a client that never sends its
    ClientHello holds no worker."""

    certificate: Certificate | HeldCertificate | None = None

    def context(self) -> ssl.SSLContext | None:
        return None if self.certificate is None else self.certificate.context()


def admission_server(
    decide: Callable[[JSON], tuple[JSON, str]],
    ready: Callable[[], bool],
    reviews: Reviews,
    host: str,
    port: int,
    certificate: Certificate | HeldCertificate | None,
    log: Callable[[str], None],
    limits: Limits | None = None,
) -> AdmissionServer:
    """`decide(request)`: (the AdmissionReview response's `response`, without uid; the decision for the metrics).
    `ready()`: whether it can answer reviews now (/readyz, kfin_guard_ready)."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._answer(200, reviews.exposition(ready()), metrics.CONTENT_TYPE)
            elif path == "/healthz":
                self._answer(200, "ok\n")
            elif path == "/readyz":
                if ready():
                    self._answer(200, "ok\n")
                else:
                    self._answer(503, "not ready: its watch cache is not current, or it cannot answer reviews now\n")
            else:
                self._answer(404, "not found: POST /validate, or GET /metrics, /healthz, /readyz\n")

        def do_POST(self) -> None:
            started = time.monotonic()
            if self.path.split("?", 1)[0] != "/validate":
                self._answer(404, "not found: POST /validate\n")
                return
            # the server read the whole body, its Content-Length one number within MOST_BODY (or answered 4xx)
            if not self.body:
                self._answer(400, "an AdmissionReview (admission.k8s.io/v1) is expected, with its Content-Length\n")
                return
            try:
                review = json.loads(self.body)
                request = review["request"]
                uid = request["uid"]
            except RecursionError:
                self._answer(400, "the AdmissionReview is nested too deep to be read\n")
                return
            except (ValueError, KeyError, TypeError):
                self._answer(400, "an AdmissionReview (admission.k8s.io/v1) is expected\n")
                return
            try:
                response, decision = decide(request)
            except Exception as error:  # never a cause of a stuck deletion: allowed, and said
                what = printable(f"{request.get('resource')} {request.get('name')}", one_line=True)
                log(f"review of {what} failed: {one_line(repr(error))}")
                response = {
                    "allowed": True,
                    "warnings": ["kfin: not checked: kfin guard failed to answer (see its log)"],
                }
                decision = ERROR
            response = dict(response, uid=uid)
            body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
            # counted before it is sent: whoever got the answer finds it in /metrics already
            reviews.record(decision, time.monotonic() - started)
            self._answer(200, body, "application/json")

    server = AdmissionServer((host, port), Handler, limits or Limits(body=MOST_BODY), log)
    server.certificate = certificate
    return server
