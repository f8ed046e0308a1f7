"""One clear line and a documented exit code for every failure; never an unrecorded write; Ctrl-C and
--request-timeout are kept to the second."""

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kfin.errors import ExitCode
from tests.fakeapi import Fault
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT


def one_error_line(result, code):
    assert result.code == code, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr and "Usage:" not in result.stderr
    return lines[0]


@pytest.mark.parametrize("args", [["stuck", "--concurrency", "0"], ["stuck", "--no-such-flag"], ["explain"],
                                  ["explain", "pvc"], ["nonsense"], ["stcuk"], ["stuck", "-o"],
                                  ["graph", "a", "b", "c"], ["stuck", "--request-timeout", "99999999999999999999999999d"],
                                  ["stuck", "--older-than", "soon"], ["remove", "--all-stuck", "cm", "x"]])
def test_usage_errors_are_one_line(args):
    one_error_line(kfin(*args), ExitCode.USAGE)


def stuck_configmaps(fake, *names):
    api = RawClient(fake.url, "admin-token")
    for name in names:
        api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": name, "finalizers": ["example.com/x"]}})
        api.delete(f"/api/v1/namespaces/default/configmaps/{name}")
    return api


def test_an_audit_log_that_cannot_be_written_stops_kfin_before_any_write(fake, fake_kubeconfig, tmp_path):
    api = stuck_configmaps(fake, "held")
    for log in (tmp_path, tmp_path / "missing-dir-is-fine" / "but" / "this-is-a-file"):
        if log != tmp_path:
            log.parent.parent.mkdir()
            log.parent.write_text("a file where a directory should be")
        result = kfin("remove", "cm", "held", "--finalizer", "example.com/x", "--confirm", "--audit-log", str(log),
                      "--kubeconfig", str(fake_kubeconfig))
        assert result.code == ExitCode.API, result
        assert result.stderr.splitlines()[-1].startswith(f"error: cannot write the audit log {log}")
        # no write: the dry run of the removal kfin plans (dryRun=All) is all it sent
        assert not [r for r in fake.requests if r.method == "PATCH" and not r.dry_run]
        assert api.get("/api/v1/namespaces/default/configmaps/held")["metadata"]["finalizers"] == ["example.com/x"]


def test_when_the_audit_log_fails_after_a_write_the_record_is_printed_and_the_rest_goes_on(fake, fake_kubeconfig,
                                                                                           tmp_path):
    stuck_configmaps(fake, "one", "two")
    log = tmp_path / "audit.jsonl"

    def disk_gone(method, path):  # the log turns unwritable between kfin's check and its first record
        if log.is_file():
            log.unlink()
            log.mkdir()
    fake.before_write.append(disk_gone)
    result = kfin("remove", "--all-stuck", "-n", "default", "--finalizer", "example.com/x", "--confirm", "--yes",
                  "--audit-log", str(log), "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.API, result
    printed = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert sorted(r["object"]["name"] for r in printed) == ["one", "two"]
    assert all(r["result"] == "removed" for r in printed)
    assert "done 2, refused 0, failed 0, 2 not recorded in the audit log" in result.stderr


def test_kfin_audit_shows_the_good_records_and_names_the_bad_lines(tmp_path):
    log = tmp_path / "audit.jsonl"
    good = {"time": "2026-11-23T01:00:00Z", "context": "c", "user": "u", "result": "removed",
            "object": {"kind": "ConfigMap", "namespace": "default", "name": "held"}, "removed": ["example.com/x"],
            "verdicts": {"example.com/x": "ORPHANED"}}
    log.write_bytes(json.dumps(good).encode() + b"\nnot json\n[1, 2]\n\xff\xfe\x00\n" +
                    json.dumps({"object": "x"}).encode() + b"\n\n")
    result = kfin("audit", "--audit-log", str(log))
    assert result.code == ExitCode.PARTIAL, result
    assert "held" in result.stdout and "example.com/x" in result.stdout
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert [line.split(" line ")[1].split()[0] for line in warned] == ["2", "3", "4", "5"]
    assert json.loads(kfin("audit", "--audit-log", str(log), "-o", "json").stdout) == [good]
    one_error_line(kfin("audit", "--audit-log", str(tmp_path)), ExitCode.USAGE)


def test_kfin_audit_of_a_log_that_does_not_exist_is_an_error(tmp_path, monkeypatch):
    """Issue 41: `kfin audit --audit-log /nonexistent` said 'No removals recorded' and exited 0."""
    for output in ("table", "json"):
        line = one_error_line(kfin("audit", "--audit-log", str(tmp_path / "nonexistent"), "-o", output),
                              ExitCode.USAGE)
        assert f"no audit log at {tmp_path / 'nonexistent'}" in line
    # the default log is written at kfin's first change: before that, none were recorded
    monkeypatch.delenv("KFIN_AUDIT_LOG", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    fresh = kfin("audit")
    assert fresh.code == ExitCode.OK and "No removals recorded in" in fresh.stderr, fresh


class EndOfInput(io.StringIO):
    def isatty(self):
        return True


def test_end_of_input_at_the_bulk_prompt_changes_nothing(fake, fake_kubeconfig, monkeypatch):
    stuck_configmaps(fake, "one")
    monkeypatch.setattr(sys, "stdin", EndOfInput(""))
    result = kfin("remove", "--all-stuck", "-n", "default", "--finalizer", "example.com/x", "--confirm",
                  "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.REFUSED and "Nothing was changed." in result.stderr, result
    assert "Change 1 object in namespace default of context " in result.stdout, result.stdout  # count and noun agree
    assert not [r for r in fake.requests if r.method == "PATCH" and not r.dry_run]  # the plan's dry runs only


def test_a_reader_that_goes_away_costs_neither_the_warnings_nor_the_exit_code():
    process = subprocess.Popen([sys.executable, "-m", "kfin", "explain", "pvc", "data-postgres-0", "-n", "shop",
                                "--from-snapshot", str(ROOT / "examples" / "stuck-cluster.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    process.stdout.close()  # `| head -0`: gone before kfin writes
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=30) == ExitCode.OK, stderr  # metrics.k8s.io does not bear on a claim
    assert stderr.startswith("warning: discovery of metrics.k8s.io/v1beta1 failed") and "Traceback" not in stderr


def run_kfin(kubeconfig, *args):
    return subprocess.Popen([sys.executable, "-m", "kfin", *args, "--kubeconfig", str(kubeconfig)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)


def test_ctrl_c_during_a_slow_scan_exits_at_once(fake, fake_kubeconfig):
    fake.faults.append(Fault(path="^/api/v1/configmaps$", delay=20))
    process = run_kfin(fake_kubeconfig, "stuck", "-A")
    deadline = time.monotonic() + 20
    while not any(r.path == "/api/v1/configmaps" for r in fake.requests) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, stderr = process.communicate(timeout=15)
    assert time.monotonic() - sent < 1.0
    assert process.returncode == ExitCode.INTERRUPTED and stderr.strip().endswith("error: interrupted"), stderr


@pytest.mark.parametrize("fault", [Fault(path="^/version$", body=json.dumps({"gitVersion": "v1.36.2"}).encode(),
                                         trickle=0.1),
                                   Fault(path="^/version$", delay=4)], ids=["trickled", "silent"])
def test_request_timeout_is_a_deadline_for_the_whole_request(fake, fake_kubeconfig, fault):
    fake.faults.append(fault)
    started = time.monotonic()
    result = kfin("version", "--kubeconfig", str(fake_kubeconfig), "--request-timeout", "1s")
    assert time.monotonic() - started < 1.8
    assert "did not answer in time" in one_error_line(result, ExitCode.UNREACHABLE)


def test_ctrl_c_during_a_bulk_removal_says_what_was_done(fake, fake_kubeconfig, tmp_path):
    stuck_configmaps(fake, "one", "two")
    fake.faults.append(Fault(path="^/api/v1/namespaces/default/configmaps/two$", method="PATCH", delay=20,
                             dry_run=False))  # the write stalls, not the dry run that checked it
    log = tmp_path / "audit.jsonl"
    process = run_kfin(fake_kubeconfig, "remove", "--all-stuck", "-n", "default", "--finalizer", "example.com/x",
                       "--confirm", "--yes", "--audit-log", str(log))
    deadline = time.monotonic() + 20
    while not any(r.method == "PATCH" and r.path.endswith("/two") and "dryRun" not in r.query
                  for r in fake.requests) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, stderr = process.communicate(timeout=15)
    assert time.monotonic() - sent < 1.0 and process.returncode == ExitCode.INTERRUPTED, stderr
    assert "[1/2] removed: ConfigMap/default/one" in stderr
    # the write in flight is read back (tests/commands/test_trust_interrupt.py): not applied yet, and it may still be
    assert "error: interrupted at [2/2] ConfigMap/default/two while removing example.com/x: read back: " \
           "example.com/x is still there, but the server may still apply the PATCH it received" in stderr
    assert stderr.splitlines()[-1].endswith("done 1, failed 0, not started 0")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["object"]["name"], r["result"]) for r in records] == [("one", "removed"), ("two", "interrupted")]


def kubeconfig_for(tmp_path, server: str) -> Path:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "main",
              "clusters": [{"name": "c", "cluster": {"server": server}}], "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / "kubeconfig-hostile"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_an_error_never_a_success(fake, fake_kubeconfig, status):
    """Issue 27: the API server never redirects; a 3xx was read as success (its body as the answer)."""
    fake.faults.append(Fault(path="^/version$", status=status, body=json.dumps({"gitVersion": "v9.9.9"}).encode()))
    result = kfin("version", "--kubeconfig", str(fake_kubeconfig))
    assert f"answered {status} (a redirect): kfin follows no redirects" in one_error_line(result, ExitCode.API)
    assert "v9.9.9" not in result.stdout


def test_a_silent_server_is_bounded_without_request_timeout(fake, fake_kubeconfig, monkeypatch):
    """Issue 27: without --request-timeout a server that accepts and never answers hung kfin forever; now each
    silence is bounded (120 s by default; shortened here)."""
    from kfin.api import transport

    monkeypatch.setattr(transport, "DEFAULT_READ_TIMEOUT", 0.5)
    fake.faults.append(Fault(path="^/version$", delay=3))
    started = time.monotonic()
    result = kfin("version", "--kubeconfig", str(fake_kubeconfig))
    assert time.monotonic() - started < 2.5
    assert "did not answer in time" in one_error_line(result, ExitCode.UNREACHABLE)


def test_a_password_in_the_server_url_is_never_printed(tmp_path):
    result = kfin("stuck", "--kubeconfig", str(kubeconfig_for(tmp_path, "http://admin:s3cret@127.0.0.1:1")))
    line = one_error_line(result, ExitCode.UNREACHABLE)
    assert "s3cret" not in line and "admin" not in line and "http://<redacted>@127.0.0.1:1" in line


@pytest.mark.parametrize("server", ["https://10.0.0.1:6443/?watch=true", "https://10.0.0.1:6443/#frag"])
def test_a_server_url_with_a_query_or_fragment_is_a_kubeconfig_error(tmp_path, server):
    line = one_error_line(kfin("stuck", "--kubeconfig", str(kubeconfig_for(tmp_path, server))), ExitCode.CONFIG)
    assert "has a query or a fragment" in line


@pytest.mark.parametrize("fault, result, removed", [
    (Fault(path="^/api/v1/namespaces/default/configmaps/held$", method="PATCH", status=500, applied=True),
     "removed", ["example.com/x"]),
    (Fault(path="^/api/v1/namespaces/default/configmaps/held$", method="PATCH", drop=True, applied=True),
     "removed", ["example.com/x"]),
    (Fault(path="^/api/v1/namespaces/default/configmaps/held$", method="PATCH", body=b"<html>proxy</html>",
           applied=True), "removed", ["example.com/x"]),
    (Fault(path="^/api/v1/namespaces/default/configmaps/held$", method="PATCH", status=503), "failed", []),
], ids=["500-after-the-write", "dropped-after-the-write", "junk-after-the-write", "503-before-the-write"])
def test_the_audit_log_records_what_really_changed_when_an_answer_is_lost(fake, fake_kubeconfig, tmp_path, fault,
                                                                         result, removed):
    """Issue 27: when the PATCH went through but its answer was lost, the record said `removed: []`. kfin now
    reads the object again and records what the server really holds."""
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {
        "name": "held", "finalizers": ["example.com/x", "example.com/y"]}})
    api.delete("/api/v1/namespaces/default/configmaps/held")
    fake.faults.append(fault)
    log = tmp_path / "audit.jsonl"
    outcome = kfin("remove", "cm", "held", "--finalizer", "example.com/x", "--confirm", "--audit-log", str(log),
                   "--kubeconfig", str(fake_kubeconfig))
    [record] = [json.loads(line) for line in log.read_text().splitlines()]
    really = api.get("/api/v1/namespaces/default/configmaps/held")["metadata"]["finalizers"]
    assert (record["result"], record["removed"], record["finalizersAfter"]) == (result, removed, really)
    assert [f for f in record["finalizersBefore"] if f not in really] == removed  # the record equals the server
    assert outcome.code == (ExitCode.OK if result == "removed" else ExitCode.API), outcome
    assert "Traceback" not in outcome.stderr
    if result == "failed":
        assert outcome.stderr.splitlines()[0].startswith("error: failed: ConfigMap/default/held: ")
        assert "nothing was removed" in outcome.stderr


@pytest.mark.parametrize("fault", [
    Fault(path="^/api/v1/namespaces/gone/finalize$", method="PUT", drop=True, applied=True, times=1),
    Fault(path="^/api/v1/namespaces/gone/finalize$", method="PUT", status=500, applied=True, times=1),
], ids=["dropped-after-the-write", "500-after-the-write"])
def test_a_lost_answer_to_finalize_is_recorded_as_the_removal_it_was(fake, fake_kubeconfig, tmp_path, fault):
    """Issue 27: the PUT /finalize went through and its answer was lost; the transport repeated it, the repeat
    answered 404 (the namespace had gone because of the first), and the record said `removed: []`, "already
    gone". Writes are never repeated now: kfin reads the namespace again and records its own removal."""
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"metadata": {"name": "gone"}})
    api.create("/api/v1/namespaces/gone/configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    api.delete("/api/v1/namespaces/gone")
    fake.faults.append(fault)
    log = tmp_path / "audit.jsonl"
    outcome = kfin("remove", "ns", "gone", "--finalizer", "kubernetes", "--force", "--confirm", "--audit-log",
                   str(log), "--kubeconfig", str(fake_kubeconfig))
    [record] = [json.loads(line) for line in log.read_text().splitlines()]
    assert not api.exists("/api/v1/namespaces/gone")  # forced: gone, its ConfigMap left in storage
    assert (record["result"], record["removed"], record["finalizersAfter"]) == ("gone", ["kubernetes"], None)
    assert "the answer to the write was lost" in record["message"], record
    assert len([r for r in fake.requests if r.method == "PUT"]) == 1  # never repeated
    assert outcome.code == ExitCode.OK and "Traceback" not in outcome.stderr, outcome


def test_a_tls_handshake_that_never_completes_is_bounded_without_request_timeout(tmp_path, monkeypatch):
    """Issue 27: a server that accepts the connection and never answers the TLS ClientHello. The handshake is
    part of connecting: bounded by the connect timeout (30 s by default; shortened here)."""
    import socket

    from kfin.api import transport

    monkeypatch.setattr(transport, "DEFAULT_CONNECT_TIMEOUT", 0.5)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepted by the kernel, never read
    try:
        server = f"https://127.0.0.1:{listener.getsockname()[1]}"
        started = time.monotonic()
        result = kfin("stuck", "-A", "--kubeconfig", str(kubeconfig_for(tmp_path, server)))
        assert time.monotonic() - started < 5
        assert "did not answer in time" in one_error_line(result, ExitCode.UNREACHABLE)
    finally:
        listener.close()


class _NotKubernetes:
    """Any other HTTP server a kubeconfig may point at: a static file server (HTML 404s), a login page (HTML 200s
    to everything), a web application (JSON errors that are not a Kubernetes Status)."""

    def __init__(self, kind, folder):
        import functools
        import http.server
        import threading

        class Answer(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                code, ctype, body = {
                    "login page": (200, "text/html", b"<!DOCTYPE html><html><body>Sign in</body></html>"),
                    "web app": (404, "application/json", b'{"timestamp": 1, "status": 404, "error": "Not Found"}'),
                }[kind]
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Files(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        handler = functools.partial(Files, directory=str(folder)) if kind == "file server" else Answer
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("kind", ["file server", "login page", "web app"])
def test_a_server_that_is_not_kubernetes_is_said_in_one_line(tmp_path, kind):
    """Issue 41: a kubeconfig pointing at another HTTP server printed its HTML page as the error, exit 7 (as if an
    object were not found); it is one line saying so, exit 9 (the exit codes' 'answered something Kubernetes never
    would')."""
    (tmp_path / "www").mkdir()
    other = _NotKubernetes(kind, tmp_path / "www")
    try:
        kubeconfig = str(kubeconfig_for(tmp_path, other.url))
        for args in (["stuck", "-A"], ["explain", "cm", "x", "-n", "shop"], ["version"]):
            line = one_error_line(kfin(*args, "--kubeconfig", kubeconfig), ExitCode.API)
            assert f"the server at {other.url} does not answer like a Kubernetes API server" in line, line
            assert "<" not in line and "timestamp" not in line and "check the server URL of context" in line
    finally:
        other.close()


@pytest.mark.parametrize("write", ["redirected", "uid changed"])
@pytest.mark.parametrize("bulk", [False, True], ids=["one", "all-stuck"])
def test_a_removal_that_fails_ends_with_an_error_line(fake, fake_kubeconfig, tmp_path, write, bulk):
    """Issue 41: a PATCH answered 307, or an object deleted and created again (another uid) between kfin's read and
    its write, failed; `--all-stuck` then ended with 'done 0, refused 0, failed 1' and no `error:` line."""
    stuck_configmaps(fake, "held")
    if write == "redirected":
        fake.faults.append(Fault(path="^/api/v1/namespaces/default/configmaps/held$", method="PATCH", status=307,
                                 headers={"Location": "https://elsewhere.example/"}))
    else:
        def created_again(method, path):  # the same name, another object: what kfin read is gone
            if method == "PATCH" and path.endswith("/held"):
                fake.before_write.clear()
                fake.cluster.find(fake.cluster.types[("", "configmaps")], "default", "held")["metadata"]["uid"] = "new"
        fake.before_write.append(created_again)
    subject = ["--all-stuck", "-n", "default", "--yes"] if bulk else ["cm", "held", "-n", "default"]
    result = kfin("remove", *subject, "--finalizer", "example.com/x", "--confirm", "--audit-log",
                  str(tmp_path / "audit.jsonl"), "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.API, result
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors, result.stderr
    said = "answered 307 (a redirect)" if write == "redirected" else "it was deleted and created again"
    assert any(said in line for line in result.stderr.splitlines()), result.stderr
    if bulk:
        assert result.stderr.splitlines()[-1] == "error: done 0, refused 0, failed 1 (each failure is named above)"


@pytest.mark.parametrize("args", [["snapshot", "-A", "-f", "/nonexistent/dir/x.json"], ["snapshot", "-A", "-f", "/"],
                                  ["graph", "namespace", "default", "-o", "png"],
                                  ["graph", "namespace", "default", "-o", "svg"],
                                  ["preflight", "-f", "-", "-o", "svg"]])
def test_what_a_command_cannot_do_with_its_output_is_said_before_it_reads_anything(fake, fake_kubeconfig, args,
                                                                                   monkeypatch, tmp_path):
    """A snapshot's file that cannot be written, or a picture without Graphviz: one error line, exit 2, before any
    request (a scan of a large cluster takes minutes, and its warnings would come first)."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no Graphviz dot on it
    fake.requests.clear()
    line = one_error_line(kfin(*args, "--kubeconfig", str(fake_kubeconfig)), ExitCode.USAGE)
    assert ("cannot write the snapshot" in line) if args[0] == "snapshot" else ("Graphviz's dot" in line)
    assert fake.requests == []


def test_kind_slash_name_and_one_more_argument_names_the_extra_argument():
    line = one_error_line(kfin("explain", "pvc/data-postgres-0", "extra", "-n", "shop"), ExitCode.USAGE)
    assert "'extra' is one argument too many" in line


def test_kfin_audit_names_a_custom_kind_with_its_group(tmp_path):
    """kfin audit's OBJECT column said Database/team-a/orders: the kind without its group, which kfin shows
    everywhere else (Database.acme.io), and which tells two Databases of different groups apart."""
    log = tmp_path / "audit.jsonl"
    records = [{"time": "2026-01-01T00:00:00Z", "context": "kind", "user": "admin", "removed": ["acme.io/cleanup"],
                "verdicts": {"acme.io/cleanup": "ORPHANED"}, "forced": False, "result": "removed",
                "object": {"apiVersion": api_version, "kind": kind, "namespace": "team-a", "name": name}}
               for api_version, kind, name in (("acme.io/v1", "Database", "orders"), ("v1", "ConfigMap", "held"))]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = kfin("audit", "--audit-log", str(log))
    assert result.code == ExitCode.OK, result
    objects = [row.split()[3] for row in result.stdout.splitlines()[1:]]
    assert objects == ["Database.acme.io/team-a/orders", "ConfigMap/team-a/held"], result.stdout
