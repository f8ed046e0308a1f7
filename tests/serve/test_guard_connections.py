"""kfin guard's and kfin serve's HTTP servers under clients that are slow, silent or many, and under bodies they
cannot read: a review is still answered within its deadline, readiness says when reviews cannot be answered, a bad
body gets a 400 that says why, and what a review says reaches the log escaped. The limits (kfin.serve.exporter's
Limits) are made small here through their parameter; nothing is timed but against the deadline the server
enforces."""

import datetime
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import pytest

from kfin.serve.admission import MOST_BODY, HeldCertificate, Reviews, admission_server
from kfin.serve.exporter import MOST_HEAD, WORKERS, Exporter, Limits, http_server
from tests.serve.test_guard import delete_of, review, running_guard, team
from tests.serve.test_serve import ROOT, _free_port

NAMES = ["kfin-guard.kfin-system.svc", "127.0.0.1"]
SLOW = WORKERS + 8  # more clients than the workers the guard answers with at once (64 took them all)
ALLOW = {"allowed": True}


@contextmanager
def serving(server):
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def guard_server(decide=lambda request: (ALLOW, "allowed"), ready=lambda: True, tls=None, log=None, **limits):
    return admission_server(
        decide,
        ready,
        Reviews(),
        "127.0.0.1",
        0,
        tls,
        log or (lambda _: None),
        Limits(body=MOST_BODY, **limits) if limits else None,
    )


def self_signed() -> tuple[HeldCertificate, ssl.SSLContext]:
    """A serving certificate as kfin guard --self-signed makes it, and a client that trusts its CA."""
    from kfin.serve.guard_tls import renewed

    material = renewed(None, "create", NAMES, datetime.datetime.now(datetime.UTC))
    held = HeldCertificate()
    held.load(material.cert, material.key)
    return held, ssl.create_default_context(cadata=material.ca_bundle.decode())


def admission_review(uid: str = "u1", name: str = "shop") -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": uid,
                "operation": "DELETE",
                "name": name,
                "namespace": "",
                "resource": {"group": "", "version": "v1", "resource": "namespaces"},
            },
        }
    ).encode()


def post(port: int, body: bytes, timeout: float, context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    if context is None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    else:
        connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=context)
    try:
        connection.request("POST", "/validate", body, {"Content-Type": "application/json"})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def raw(port: int, data: bytes, timeout: float = 10) -> tuple[int, bytes]:
    """What the server answers to these bytes, sent as they are."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        return answer.status, answer.read()


def still_open(sock: socket.socket) -> bool:
    """Nothing from the server yet: neither an answer nor its end."""
    sock.setblocking(False)
    try:
        sock.recv(1)  # an answer, or its end (b"")
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_review_is_answered_while_more_slow_clients_than_workers_hold_connections():
    """72 clients that sent part of a review over TLS and stall, and 8 that never send a TLS ClientHello: before,
    each held one of the 64 connection slots, and a review was closed unanswered. Now none of them holds a worker:
    the review gets its answer, and the stalled ones are let go at the request's deadline."""
    held, client = self_signed()
    deadline = 3.0
    with serving(guard_server(tls=held, deadline=deadline)) as server:
        port = server.server_port
        stalled = []
        for _ in range(SLOW):
            sock = client.wrap_socket(
                socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1"
            )
            sock.sendall(b'POST /validate HTTP/1.1\r\nHost: kfin-guard\r\nContent-Length: 300\r\n\r\n{"apiVer')
            stalled.append(sock)
        silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]  # TCP only, no ClientHello
        status, body = post(port, admission_review(), timeout=deadline, context=client)
        assert status == 200 and json.loads(body)["response"] == {"allowed": True, "uid": "u1"}
        assert server.answering()  # nothing was turned away: it tells it is ready
        for sock in stalled + silent:  # the deadline is for the whole request, handshake included
            assert closed_by_server(sock, within=3 * deadline)
            sock.close()


def test_a_client_trickling_its_request_is_let_go_at_the_deadline_not_kept_by_each_byte():
    """A byte every 0.2 s kept a per-read timeout of 10 s from ever firing: the deadline is for the whole
    request."""
    deadline = 1.0
    with serving(guard_server(deadline=deadline)) as server:
        sock = socket.create_connection(("127.0.0.1", server.server_port))
        request = b"POST /validate HTTP/1.1\r\nHost: kfin-guard\r\n" + b"X-Slow: " + b"a" * 200
        sent, cut = 0, False
        started = time.monotonic()
        try:
            for byte in request:  # 50 s in all, were it let through
                sock.sendall(bytes([byte]))
                sent += 1
                if closed_by_server(sock, within=0.2):
                    cut = True
                    break
        except (BrokenPipeError, ConnectionResetError):
            cut = True
        sock.close()
        assert cut and sent < len(request) and time.monotonic() - started < 10 * deadline


def test_the_guard_answers_a_review_while_slow_clients_hold_connections(fake, tmp_path):
    """kfin guard itself (plain HTTP, as behind a proxy): SLOW clients stall in the middle of a review, and a
    DELETE's review is still answered; its readiness stays true, since it can answer."""
    cluster, _, ns = team(fake, tmp_path, widgets=0)
    with running_guard(cluster.kubeconfig) as url:
        port = int(url.rsplit(":", 1)[1])
        stalled = []
        for _ in range(SLOW):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"POST /validate HTTP/1.1\r\nHost: kfin-guard\r\nContent-Length: 300\r\n\r\n{")
            stalled.append(sock)
        for sock in stalled:  # a byte more each, as a trickling client sends: a per-read timeout starts again
            try:
                sock.sendall(b" ")
            except OSError:
                pass  # let go already
        answer = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace"))
        assert answer["allowed"] is True
        # and not by closing them: each is let go at its deadline (10 s), none turned away at once for want of room
        assert all(still_open(sock) for sock in stalled)
        assert urllib.request.urlopen(f"{url}/readyz", timeout=10).status == 200
        assert "kfin_guard_ready 1" in urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
        for sock in stalled:
            sock.close()


def test_readiness_is_false_while_reviews_cannot_be_answered_and_true_again_once_they_can():
    """One worker, its review held in `decide`: a second review waits for it, and the guard is not ready (its
    metrics server says so, as kfin guard's does); a review that waited past its deadline is turned away and
    readiness stays false for a deadline more; then it is ready again."""
    release, entered = threading.Event(), threading.Event()
    lines: list[str] = []

    def decide(request):
        if request["uid"] == "held":
            entered.set()
            release.wait(30)
        return ALLOW, "allowed"

    deadline = 1.0
    guard = guard_server(decide, workers=1, deadline=deadline, log=lines.append)
    metrics = guard_server(ready=guard.answering)
    with serving(guard), serving(metrics):
        port, metrics_url = guard.server_port, f"http://127.0.0.1:{metrics.server_port}"

        def readiness() -> tuple[int, str]:
            try:
                status = urllib.request.urlopen(f"{metrics_url}/readyz", timeout=10).status
            except urllib.error.HTTPError as error:
                status = error.code
            ready = [
                line
                for line in urllib.request.urlopen(f"{metrics_url}/metrics", timeout=10).read().decode().splitlines()
                if line.startswith("kfin_guard_ready ")
            ]
            return status, ready[0]

        assert readiness() == (200, "kfin_guard_ready 1")
        held = threading.Thread(target=post, args=(port, admission_review("held"), 30), daemon=True)
        held.start()
        assert entered.wait(10)
        turned_away = []
        waiting = threading.Thread(target=lambda: turned_away.append(_refused(port, deadline)), daemon=True)
        waiting.start()
        until = time.monotonic() + 10
        while guard.answering() and time.monotonic() < until:  # the second review has arrived, and waits
            time.sleep(0.01)
        assert readiness() == (503, "kfin_guard_ready 0")
        waiting.join(10 * deadline)
        assert turned_away == [True]  # past its deadline: closed, no one waits for it any more
        assert readiness() == (503, "kfin_guard_ready 0")
        assert lines == [
            "turning requests away: all 1 workers busy past a request's deadline (not ready until it has room again)"
        ]
        release.set()
        held.join(10)
        until = time.monotonic() + 10 * deadline
        while readiness()[0] != 200 and time.monotonic() < until:
            time.sleep(0.05)
        assert readiness() == (200, "kfin_guard_ready 1")
        assert post(port, admission_review("after"), timeout=10)[0] == 200


def _refused(port: int, deadline: float) -> bool:
    try:
        post(port, admission_review("waiting"), timeout=10 * deadline)
    except (http.client.RemoteDisconnected, ConnectionResetError):
        return True
    return False


def test_bad_bodies_get_a_400_that_says_why_and_the_guard_goes_on():
    """A body nested 100,000 deep (RecursionError in json) and a Content-Length that is not a number were closed
    without an answer; a body over kube-apiserver's own limit, a chunked one, a missing length and a head over
    its limit are refused too, each with its status and reason."""
    deep = b"[" * 100_000 + b"]" * 100_000
    head = b"POST /validate HTTP/1.1\r\nHost: kfin-guard\r\n"
    with serving(guard_server()) as server:
        port = server.server_port
        assert post(port, deep, timeout=10) == (400, b"the AdmissionReview is nested too deep to be read\n")
        deep_review = b'{"request": ' + deep + b"}"
        assert post(port, deep_review, timeout=10) == (400, b"the AdmissionReview is nested too deep to be read\n")
        assert raw(port, head + b"Content-Length: abc\r\n\r\n{}") == (400, b"Content-Length is not one number\n")
        assert raw(port, head + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}") == (
            400,
            b"Content-Length is not one number\n",
        )
        assert raw(port, head + f"Content-Length: {MOST_BODY + 1}\r\n\r\n".encode()) == (
            413,
            f"the body is over {MOST_BODY} bytes\n".encode(),
        )
        assert raw(port, head + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n") == (
            411,
            b"a body is read with a Content-Length, never chunked\n",
        )
        assert raw(port, head + b"\r\n") == (
            400,
            b"an AdmissionReview (admission.k8s.io/v1) is expected, with its Content-Length\n",
        )
        assert raw(port, head + b"X-Big: " + b"a" * MOST_HEAD) == (
            431,
            f"the request line and headers are over {MOST_HEAD} bytes\n".encode(),
        )
        status, body = post(port, admission_review(), timeout=10)  # and it goes on
        assert status == 200 and json.loads(body)["response"]["uid"] == "u1"


@pytest.mark.parametrize("tls", [False, True])
def test_a_keep_alive_connection_is_answered_again_and_a_body_waited_for_with_100_continue(tls):
    """kube-apiserver keeps its connections to a webhook open: its next review on the same connection is read
    again; curl sends Expect: 100-continue before a body and waits for it."""
    held, client = self_signed() if tls else (None, None)
    with serving(guard_server(tls=held)) as server:
        connection = (
            http.client.HTTPSConnection("127.0.0.1", server.server_port, timeout=10, context=client)
            if tls
            else http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
        )
        for uid in ("one", "two", "three"):
            connection.request("POST", "/validate", admission_review(uid))
            answer = connection.getresponse()
            assert answer.status == 200 and json.loads(answer.read())["response"]["uid"] == uid
        connection.close()
        if tls:
            return
        with socket.create_connection(("127.0.0.1", server.server_port), timeout=10) as sock:
            body = admission_review("continued")
            sock.sendall(
                b"POST /validate HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
            )
            assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
            sock.sendall(body)
            answer = http.client.HTTPResponse(sock)
            answer.begin()
            assert answer.status == 200 and json.loads(answer.read())["response"]["uid"] == "continued"


def test_what_a_failed_review_names_reaches_the_log_escaped():
    """A review's name with a newline forged a log line of its own; ESC and BEL reached the log as they are."""
    lines: list[str] = []

    def decide(request):
        raise RuntimeError("boom")

    forged = "x\n2099-01-01T00:00:00Z kfin guard: stopped\u001b]0;pwned\u0007"
    with serving(guard_server(decide, log=lines.append)) as server:
        status, body = post(server.server_port, admission_review(name=forged), timeout=10)
    assert status == 200 and json.loads(body)["response"]["allowed"] is True
    [line] = lines
    assert line.isprintable() and "\\x1b]0;pwned\\x07" in line and "x\\x0a2099-01-01" in line, line


def test_a_denial_in_the_guards_log_shows_the_name_escaped(fake, tmp_path):
    """kfin guard --deny logs each denial with the review's name: a forged line and escape sequences in it are
    shown, never sent."""
    cluster, _, ns = team(fake, tmp_path)
    request = delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace")
    request["name"] = f"{ns}\n2099-01-01T00:00:00Z kfin guard: stopped\u001b]0;pwned\u0007"
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kfin",
            "guard",
            "--listen",
            f"127.0.0.1:{port}",
            "--plain-http",
            "--deny",
            "--kubeconfig",
            str(cluster.kubeconfig),
        ],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        until = time.monotonic() + 30
        while time.monotonic() < until:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        answer = review(f"http://127.0.0.1:{port}", request)
    finally:
        process.terminate()
        log = process.communicate(timeout=10)[1]
    assert answer["allowed"] is False, answer
    [denied] = [line for line in log.splitlines() if " denied: " in line]
    assert denied.endswith(
        f"denied: DELETE namespaces {ns}\\x0a2099-01-01T00:00:00Z kfin guard: stopped\\x1b]0;pwned\\x07"
    ), log
    assert "\x1b" not in log and "\x07" not in log, log
    assert not any(line.startswith("2099-01-01") for line in log.splitlines()), log  # no line forged


def test_kfin_serve_answers_a_scrape_while_more_slow_clients_than_workers_hold_connections():
    """kfin serve's /metrics went the same way as the guard's reviews: now a scrape is answered."""
    exporter = Exporter(lambda: ([], []), log=lambda _: None)
    exporter.scan_once()
    deadline = 3.0
    with serving(http_server(exporter, "127.0.0.1", 0, Limits(deadline=deadline))) as server:
        stalled = []
        for _ in range(SLOW):
            sock = socket.create_connection(("127.0.0.1", server.server_port))
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: prometheus\r\nAccept: ")
            stalled.append(sock)
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/metrics", timeout=deadline) as answer:
            assert answer.status == 200 and "kfin_scans_total 1" in answer.read().decode()
        assert urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/readyz", timeout=deadline).status == 200
        for sock in stalled:
            assert closed_by_server(sock, within=3 * deadline)
            sock.close()


def test_the_bytes_held_are_bounded_and_the_oldest_slow_client_makes_room_for_a_review():
    """Each connection may send a body up to MOST_BODY: what all of them hold at once is bounded too (`buffered`).
    Over it, the slowest connection being read is closed, and the review that arrived is answered."""
    review_ = admission_review("big-enough")
    with serving(guard_server(buffered=3 * len(review_))) as server:
        port = server.server_port
        stalled = socket.create_connection(("127.0.0.1", port))
        stalled.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b" " * len(review_))
        # read first, it is the one let go; read after the review, it is refused (503) while the review is answered
        status, body = post(port, review_ + b" " * len(review_), timeout=10)
        assert status == 200 and json.loads(body)["response"]["uid"] == "big-enough"
        assert closed_by_server(stalled, within=10)
        stalled.close()


def test_at_the_connection_limit_a_client_that_sent_nothing_makes_room_for_a_review():
    """More TCP clients that never send a ClientHello than connections allowed: the oldest of them is closed for each
    new connection, so a review still gets in and is answered."""
    held, client = self_signed()
    with serving(guard_server(tls=held, connections=4, deadline=60)) as server:  # closed sooner: for room
        port = server.server_port
        silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
        status, body = post(port, admission_review("room"), timeout=10, context=client)
        assert status == 200 and json.loads(body)["response"]["uid"] == "room"
        assert sum(closed_by_server(sock, within=10) for sock in silent[:4]) == 4  # the oldest four made room
        for sock in silent:
            sock.close()
