"""Ctrl-C stops at once (issue 41, item 3): exit 130 within a second and one `error:` line, also while a write's
answer is pending (the object is read back, briefly, and what that found is said and recorded) and in
`kfin stuck -w`.

kfin runs as a process against the in-process fake, which stalls the request a test names; SIGINT is sent once
that request has arrived. The bounds are generous (5 s) to stay deterministic on a loaded machine: the fault
being interrupted takes 20 s, so a kfin that waits for it fails them.
"""

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
from tests.paths import PROJECT

ROOT = PROJECT
STALL = 20  # seconds the fake holds the answer: far past any bound below
BOUND = 5.0  # seconds from SIGINT to exit


def stuck_configmaps(fake, *names, finalizers=("example.com/x",)):
    api = RawClient(fake.url, "admin-token")
    for name in names:
        api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": name,
                                                                          "finalizers": list(finalizers)}})
        api.delete(f"/api/v1/namespaces/default/configmaps/{name}")
    return api


def interrupt(fake, kubeconfig, args, arrived, settle=0.2):
    """Run kfin, send SIGINT once `arrived(fake)` holds; (exit code, seconds from SIGINT to exit, stderr)."""
    process = subprocess.Popen([sys.executable, "-m", "kfin", *args, "--kubeconfig", str(kubeconfig)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)
    try:
        deadline = time.monotonic() + 30
        while not arrived(fake):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the request to interrupt never came"
            time.sleep(0.05)
        time.sleep(settle)  # kfin is now waiting on the answer
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, stderr = process.communicate(timeout=STALL + 15)
        return process.returncode, time.monotonic() - sent, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def patched(name):
    """The removal's PATCH of the ConfigMap has reached the fake (not the dry run that checked it before)."""
    return lambda fake: any(r.method == "PATCH" and r.path.endswith(f"/configmaps/{name}") and "dryRun" not in r.query
                            for r in fake.requests)


def one_line(stderr):
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize("applied", [True, False], ids=["write-applied", "write-not-applied"])
def test_ctrl_c_while_a_removal_is_answered_reads_the_object_back(fake, fake_kubeconfig, tmp_path, applied):
    """The PATCH reached the server (applied, or still pending), its answer never came: Ctrl-C exits 130 at
    once, after one bounded read of the object, and says and records what that read found. A second finalizer
    keeps the object, so that the read finds it either way."""
    api = stuck_configmaps(fake, "one", finalizers=("example.com/x", "example.com/keep"))
    fake.faults.append(Fault(path="^/api/v1/namespaces/default/configmaps/one$", method="PATCH", delay=STALL,
                             dry_run=False, applied=applied))
    log = tmp_path / "audit.jsonl"
    code, took, stderr = interrupt(fake, fake_kubeconfig, ["remove", "cm", "one", "-n", "default", "--finalizer",
                                                           "example.com/x", "--confirm", "--audit-log", str(log)],
                                   patched("one"))
    assert code == ExitCode.INTERRUPTED and took < BOUND, (code, took, stderr)
    line = one_line(stderr)
    assert line.startswith("error: interrupted while removing example.com/x from ConfigMap/default/one: "), line
    after = (api.get("/api/v1/namespaces/default/configmaps/one")["metadata"].get("finalizers") or [])
    assert after == (["example.com/keep"] if applied else ["example.com/x", "example.com/keep"])
    read_back = [r for r in fake.requests if r.method == "GET" and r.path.endswith("/configmaps/one")]
    assert read_back and fake.requests.index(read_back[-1]) > fake.requests.index(
        [r for r in fake.requests if r.method == "PATCH"][0])
    if applied:
        assert "read back: example.com/x is removed" in line, line
    else:
        assert "read back: example.com/x is still there" in line and "may still apply" in line, line
    assert f"recorded in {log}" in line
    [record] = [json.loads(text) for text in log.read_text().splitlines()]
    assert record["result"] == "interrupted" and record["object"]["name"] == "one"
    assert record["removed"] == (["example.com/x"] if applied else [])
    assert record["finalizersAfter"] == after
    assert record["message"] == line.removeprefix("error: interrupted while removing example.com/x from "
                                                  "ConfigMap/default/one: ").removesuffix(f" (recorded in {log})")


def test_ctrl_c_while_a_bulk_removal_is_answered_reads_the_object_back(fake, fake_kubeconfig, tmp_path):
    stuck_configmaps(fake, "one", "two")
    fake.faults.append(Fault(path="^/api/v1/namespaces/default/configmaps/two$", method="PATCH", delay=STALL,
                             dry_run=False, applied=True))
    log = tmp_path / "audit.jsonl"
    code, took, stderr = interrupt(fake, fake_kubeconfig, ["remove", "--all-stuck", "-n", "default", "--finalizer",
                                                           "example.com/x", "--confirm", "--yes", "--audit-log",
                                                           str(log)], patched("two"))
    assert code == ExitCode.INTERRUPTED and took < BOUND, (code, took, stderr)
    heading, *lines = stderr.splitlines()
    assert heading == "Stuck objects in namespace default of context fake, and what kfin would do to each:", stderr
    assert lines[0].startswith("[1/2] removed: ConfigMap/default/one"), stderr
    assert len(lines) == 2 and "Traceback" not in stderr, stderr
    # its last finalizer removed, the object went away: the read finds it gone
    assert lines[1].startswith("error: interrupted at [2/2] ConfigMap/default/two while removing example.com/x: "
                               "read back: the object is gone"), lines[1]
    assert lines[1].endswith("done 1, failed 0, not started 0"), lines[1]
    records = [json.loads(text) for text in log.read_text().splitlines()]
    assert [(r["object"]["name"], r["result"], r["removed"]) for r in records] == [
        ("one", "removed", ["example.com/x"]), ("two", "interrupted", ["example.com/x"])]


def test_ctrl_c_ends_stuck_watch_with_130(fake, fake_kubeconfig):
    """`kubectl get -w` ends by the signal (130 in a shell); `kfin stuck -w` exited 0, as if it had finished."""
    stuck_configmaps(fake, "one")
    code, took, stderr = interrupt(fake, fake_kubeconfig, ["stuck", "-A", "-w"],
                                   lambda fake: any("watch" in r.query for r in fake.requests), settle=1.0)
    assert code == ExitCode.INTERRUPTED and took < BOUND, (code, took, stderr)
    assert one_line(stderr) == "error: interrupted"


@pytest.mark.parametrize("args", [["stuck", "-A"], ["remove", "--all-stuck", "-A", "--confirm", "--yes"]],
                         ids=["stuck", "remove-all-stuck"])
def test_ctrl_c_while_every_request_is_slow_exits_at_once(fake, fake_kubeconfig, tmp_path, args):
    """Every request 20 s away (discovery included): interrupted while the lists are pending."""
    stuck_configmaps(fake, "one")
    fake.latency = STALL
    code, took, stderr = interrupt(fake, fake_kubeconfig, [*args, "--audit-log", str(tmp_path / "audit.jsonl")]
                                   if "remove" in args else args, lambda fake: fake.in_flight >= 1)
    assert code == ExitCode.INTERRUPTED and took < BOUND, (code, took, stderr)
    assert one_line(stderr) == "error: interrupted"
    assert not (tmp_path / "audit.jsonl").exists()
