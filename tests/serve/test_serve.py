"""kfin serve and -o prometheus: the exposition, the exporter's endpoints, staleness when a scan fails,
read-only scans, memory across scans. A real Prometheus scraping it is in tests/serve/test_prometheus.py."""

import gc
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kfin.render import metrics
from kfin.errors import ExitCode
from kfin.serve.exporter import Exporter, http_server
from tests.fakeapi.rawclient import RawClient
from tests.fakeapi.server import Fault
from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT


def stuck_configmap(fake, namespace="apps", name="held"):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    api.create(f"/api/v1/namespaces/{namespace}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "finalizers": ["gone.example.com/cleanup"]}})
    api.delete(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    return api


def samples(text: str, name: str) -> list[tuple[dict, float]]:
    """The samples of one metric in an exposition (labels parsed; values are never quoted oddly here)."""
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            head, _, value = line.rpartition(" ")
            labels = {}
            if "{" in head:
                for part in head[head.index("{") + 1:-1].split('",'):
                    key, _, raw = part.partition('="')
                    labels[key] = raw.rstrip('"')
            out.append((labels, float(value)))
    return out


def test_stuck_prints_prometheus_metrics_that_promtool_accepts(fake, fake_kubeconfig, tmp_path):
    stuck_configmap(fake)
    result = kfin("stuck", "-A", "-o", "prometheus", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.OK, result.stderr
    text = result.stdout
    [(labels, value)] = samples(text, "kfin_stuck_objects")
    assert value == 1 and labels == {"context": "fake", "namespace": "apps", "group": "", "kind": "ConfigMap",
                                     "family": "custom", "verdict": labels["verdict"]}
    assert labels["verdict"] in ("ORPHANED", "UNKNOWN")
    [(info, one)] = samples(text, "kfin_stuck_object_info")
    assert info["name"] == "held" and one == 1 and info["root_cause"]
    assert samples(text, "kfin_stuck_seconds")[0][1] >= 0
    assert samples(text, "kfin_scan_duration_seconds")[0][1] > 0
    for family in ("kfin_stuck_objects", "kfin_stuck_seconds", "kfin_scan_failures", "kfin_scan_duration_seconds"):
        assert f"# TYPE {family} gauge" in text and f"# HELP {family} " in text
    promtool = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True) \
        if _has("promtool") else None
    if promtool is not None:
        assert promtool.returncode == 0, promtool.stdout + promtool.stderr


def _has(command: str) -> bool:
    from shutil import which
    return which(command) is not None


def test_the_info_series_are_capped_and_what_is_left_out_is_counted(fake, fake_kubeconfig):
    api = stuck_configmap(fake)
    for name in ("second", "third"):
        api.create("/api/v1/namespaces/apps/configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name, "namespace": "apps", "finalizers": ["gone.example.com/cleanup"]}})
        api.delete(f"/api/v1/namespaces/apps/configmaps/{name}")
    text = kfin("stuck", "-A", "-o", "prometheus", "--max-info-series", "2", "--kubeconfig",
                str(fake_kubeconfig)).stdout
    assert len(samples(text, "kfin_stuck_object_info")) == 2
    assert samples(text, "kfin_stuck_object_info_omitted") == [({}, 3 - 2)]
    assert samples(text, "kfin_stuck_objects")[0][1] == 3


def test_label_values_cannot_break_the_exposition():
    family = metrics.MetricFamily("kfin_x", "gauge", "test", [({"name": 'a"b\\c\nd\x1b[31m'}, 1)])
    line = family.text().splitlines()[-1]
    assert line == 'kfin_x{name="a\\"b\\\\c\\\\x0ad\\\\x1b[31m"} 1'


def test_a_partial_scan_says_so_in_the_metrics(fake, fake_kubeconfig):
    fake.faults.append(Fault(path="/configmaps$", status=403))
    text = kfin("stuck", "-A", "-o", "prometheus", "--kubeconfig", str(fake_kubeconfig)).stdout
    assert samples(text, "kfin_scan_failures") == [({"context": "fake", "reason": "Forbidden"}, 1)]
    assert samples(text, "kfin_scan_complete") == [({"context": "fake"}, 0)]


class Served:
    """The exporter in this process, against the fake: what kfin serve runs."""

    def __init__(self, fake, fake_kubeconfig, limits=None):
        from kfin.api.target import Target
        from kfin.core.read.scope import Scope
        from kfin.core.explain.stuck import find_all

        scope = Scope(Target(kubeconfig=str(fake_kubeconfig)), all_namespaces=True)
        self.exporter = Exporter(lambda: self._scan(find_all, scope), log=lambda _: None)
        self.server = http_server(self.exporter, "127.0.0.1", 0, limits)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.stop = threading.Event()

    @staticmethod
    def _scan(find_all, scope):
        rows, sources = find_all(scope)
        return rows, [f.inventory for f in sources]

    def get(self, path: str) -> tuple[int, str, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as answer:
                return answer.status, answer.headers.get("Content-Type"), answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Content-Type"), error.read().decode()


def test_the_exporter_serves_metrics_health_and_readiness(fake, fake_kubeconfig):
    stuck_configmap(fake)
    served = Served(fake, fake_kubeconfig)
    thread = threading.Thread(target=served.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        assert served.get("/healthz")[0] == 200
        assert served.get("/readyz")[0] == 503  # no scan yet
        status, _, before = served.get("/metrics")
        assert status == 200 and samples(before, "kfin_scans_total") == [({}, 0)] and "kfin_stuck_objects{" not in before
        fake.requests.clear()
        assert served.exporter.scan_once()
        assert {r.method for r in fake.requests} == {"GET"}  # a scan never writes
        assert served.get("/readyz")[0] == 200
        status, content_type, text = served.get("/metrics")
        assert content_type == metrics.CONTENT_TYPE
        assert samples(text, "kfin_stuck_objects")[0][0]["namespace"] == "apps"
        assert samples(text, "kfin_last_scan_success") == [({}, 1)] and samples(text, "kfin_result_age_seconds")
        assert served.get("/other")[0] == 404

        fake.faults.append(Fault(path=".*", status=500))  # the server fails: the last good result stays
        assert not served.exporter.scan_once()
        status, _, stale = served.get("/metrics")
        assert status == 200 and served.get("/readyz")[0] == 200
        assert samples(stale, "kfin_stuck_objects") == samples(text, "kfin_stuck_objects")
        assert samples(stale, "kfin_last_scan_success") == [({}, 0)]
        assert samples(stale, "kfin_scan_errors_total") == [({}, 1)] and samples(stale, "kfin_scans_total") == [({}, 2)]
        assert "# TYPE kfin_scan_errors_total counter" in stale
    finally:
        served.server.shutdown()
        served.server.server_close()


def test_a_watching_exporters_result_age_restarts_while_its_answer_still_holds():
    """kfin serve by watch answers again only after a change: while nothing changed, the answer served is
    current, and kfin_result_age_seconds says so when scraped; after a change not yet answered, or while an
    answer is being worked out, the age of the one served shows."""
    holds, ages = [True], []

    def age() -> float:
        return samples(served.exposition(), "kfin_result_age_seconds")[0][1]

    def answer():
        if served.ready():
            ages.append(age())  # asked while the next answer is being worked out
        return [], []

    served = Exporter(answer, log=lambda _: None, requests=lambda: (0, 0), current=lambda: holds[0])
    assert served.scan_once()
    served.result.finished_at -= 100
    assert age() < 1  # nothing changed since it was worked out
    holds[0] = False
    served.result.finished_at -= 100
    assert age() >= 100  # a change not answered yet
    holds[0] = True
    assert served.scan_once() and ages[-1] >= 100  # the answer in progress is not the one served
    assert age() < 1


def test_the_exporters_server_never_waits_for_a_client_it_was_not_told_of():
    """A client gone (reset) before it is served must not hold the serving thread: a stop (SIGTERM; here
    shutdown()) still ends serving at once, not when someone else connects."""
    server = http_server(Exporter(lambda: ([], []), log=lambda _: None), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        gone = socket.create_connection(("127.0.0.1", server.server_port))
        gone.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        gone.close()  # a reset
        stopping = threading.Thread(target=server.shutdown, daemon=True)
        stopping.start()
        stopping.join(5)
        assert not stopping.is_alive()
    finally:
        server.server_close()


def test_memory_does_not_grow_from_scan_to_scan(fake, fake_kubeconfig):
    stuck_configmap(fake)
    served = Served(fake, fake_kubeconfig)
    try:
        counts = []
        for _ in range(6):
            assert served.exporter.scan_once()
            fake.requests.clear()  # the fake's own request log lives in this process too
            gc.collect()
            counts.append(len(gc.get_objects()))
        # after the first scans (imports, caches), each scan leaves nothing behind
        assert min(counts[-2:]) - counts[2] < 50, counts  # worker threads may come and go: no trend
    finally:
        served.server.server_close()


def test_a_terminated_serve_leaves_its_api_server_nothing_to_complain_about(tmp_path, capfd):
    """kfin serve, stopped by SIGTERM, ends its watches mid-stream: over TLS the fake then read a TLS alert
    where the next request would be, and printed a traceback for each watch (80 in a bench run), which a
    real API server does not. A client hanging up is no error of the server's."""
    from tests.fakeapi import FakeAPIServer
    from tests.fakeapi.tls import self_signed

    server = FakeAPIServer().start(tls=self_signed(tmp_path))
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "kfin", "serve", "--kubeconfig",
                                str(server.kubeconfig(tmp_path / "kubeconfig")), "--listen", f"127.0.0.1:{port}"],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "KFIN_CACHE_DIR": str(tmp_path / "cache")})
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and sum(r.query.get("watch") == ["1"] for r in server.requests) < 20:
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        time.sleep(0.5)  # the fake's threads read what the ended watches left
    finally:
        if process.poll() is None:
            process.kill()
        server.stop()
    assert "Exception occurred" not in capfd.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("mode, said", [([], "watching, read-only"), (["--rescan"], "scanning every 1s, read-only")])
def test_kfin_serve_runs_until_sigterm(mode, said, fake, fake_kubeconfig, tmp_path):
    stuck_configmap(fake)
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "kfin", "serve", "--kubeconfig", str(fake_kubeconfig),
                                "--listen", f"127.0.0.1:{port}", "--interval", "1s", *mode], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "KFIN_CACHE_DIR": str(tmp_path / "cache")})
    try:
        text, deadline = "", time.monotonic() + 30
        while time.monotonic() < deadline and "kfin_stuck_objects{" not in text:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
                    text = answer.read().decode()
            except OSError:
                time.sleep(0.2)
        assert "kfin_stuck_objects{" in text
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        assert said in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.parametrize("args, message", [(["--listen", "nowhere"], "is not HOST:PORT"),
                                           (["--interval", "0s"], "--interval must be at least 1s"),
                                           (["--interval", "soon"], "--interval")])
def test_bad_serve_arguments_are_one_line_errors(args, message, fake_kubeconfig):
    result = kfin("serve", "--kubeconfig", str(fake_kubeconfig), *args)
    assert result.code == ExitCode.USAGE and message in result.stderr and len(result.stderr.splitlines()) == 1


def test_serve_refuses_a_kubeconfig_it_cannot_use_before_serving(tmp_path):
    result = kfin("serve", "--kubeconfig", str(tmp_path / "missing"), "--listen", "127.0.0.1:0")
    assert result.code == ExitCode.CONFIG and "does not exist" in result.stderr


def test_serve_once_refuses_a_kubeconfig_it_cannot_use_in_one_line(tmp_path):
    result = kfin("serve", "--once", "--kubeconfig", str(tmp_path / "missing"))
    assert result.code == ExitCode.CONFIG and result.stdout == "", result
    assert result.stderr.startswith("error: ") and "does not exist" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_kfin_serve_stops_at_once_in_the_middle_of_a_scan(fake, fake_kubeconfig, tmp_path):
    """A Pod is killed 30 s after SIGTERM: a scan of a large cluster must not hold the stop."""
    fake.faults.append(Fault(path="/configmaps$", delay=60))
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "kfin", "serve", "--kubeconfig", str(fake_kubeconfig),
                                "--listen", f"127.0.0.1:{port}"], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "KFIN_CACHE_DIR": str(tmp_path / "cache")})
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(r.path.endswith("/configmaps") for r in list(fake.requests)):
            time.sleep(0.1)  # the scan is waiting on the slow list
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0 and time.monotonic() - started < 5
    finally:
        if process.poll() is None:
            process.kill()


def test_the_exporter_under_abuse_lets_idle_clients_go_and_serves_the_rest(fake, fake_kubeconfig, capsys):
    """Issue 27: a client that hangs up mid-request logged a traceback; idle connections each kept a thread
    forever. Now: a silent client is let go after the request deadline, at most `connections` are open at once
    (a new one closes the oldest silent one), and a client going away leaves nothing in the log."""
    from kfin.serve.exporter import Limits

    served = Served(fake, fake_kubeconfig, Limits(deadline=0.5, idle=0.5, connections=3))
    thread = threading.Thread(target=served.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    port = served.server.server_port
    try:
        silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]  # every connection taken, idle
        extra = socket.create_connection(("127.0.0.1", port))
        extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        extra.settimeout(5)
        assert extra.makefile("rb").readline().startswith(b"HTTP/1.1 200")  # served: the oldest silent one went
        extra.close()
        for sock in silent:  # the first closed for the extra one, the others let go after the deadline
            sock.settimeout(3)
            assert sock.recv(1) == b""
            sock.close()
        half = socket.create_connection(("127.0.0.1", port))  # hangs up in the middle of a request
        half.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        half.close()
        assert served.get("/healthz")[0] == 200  # still serving
        assert "Traceback" not in capsys.readouterr().err
    finally:
        served.server.shutdown()
        served.server.server_close()


def test_the_scan_log_shows_a_servers_message_as_one_printable_line(fake, fake_kubeconfig):
    """Issue 27: the server's words reach the log of kfin serve; escape sequences and line breaks in them
    never reach the terminal or the log collector raw."""
    fake.faults.append(Fault(path="^/api$", status=400, body={
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 400, "reason": "BadRequest",
        "message": "no\x1b[2J\x1b]0;owned\x07\r\nfake: scan done in 0.01 s"}))
    lines: list[str] = []
    served = Served(fake, fake_kubeconfig)
    served.exporter.log = lines.append
    assert served.exporter.scan_once() is False
    assert len(lines) == 1 and lines[0].startswith("scan failed: "), lines
    assert lines[0].isprintable() and "\\x1b[2J" in lines[0], lines
