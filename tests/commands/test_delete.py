"""kfin delete on the command line: it asks before it deletes (a terminal, or --yes; no terminal and no --yes is a
usage error before anything is read), --dry-run=server sends only dryRun=All, and Ctrl-C leaves the deletion in
place. The scenarios of tests/scenarios/test_delete.py follow deletions on both tiers."""

import io
import signal
import subprocess
import sys
import time
from pathlib import Path

from kfin.errors import ExitCode
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT
CMS = "/api/v1/namespaces/default/configmaps"


class Keyboard(io.StringIO):
    """stdin that is a terminal, with what the user types."""

    def isatty(self):
        return True


def configmap(fake, name, finalizers=()):
    api = RawClient(fake.url, "admin-token")
    api.create(CMS, {"metadata": {"name": name, "finalizers": list(finalizers)}})
    return api


def deletes(fake, name):
    return [r for r in fake.requests if r.method == "DELETE" and r.path == f"{CMS}/{name}"]


def real_deletes(fake, name):
    """The DELETEs that delete (the prediction asks the server too, with dryRun=All)."""
    return [r for r in deletes(fake, name) if not r.dry_run]


def test_without_a_terminal_and_without_yes_it_refuses_before_reading(fake, fake_kubeconfig, monkeypatch):
    api = configmap(fake, "kept")
    fake.requests.clear()
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # a pipe that says yes is no terminal
    result = kfin("delete", "cm", "kept", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.USAGE, result
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: kfin delete asks before it deletes, "
                                                                        "and stdin is no terminal: pass --yes")
    assert result.stdout == "" and fake.requests == [] and api.exists(f"{CMS}/kept")


def test_on_a_terminal_it_asks_and_a_no_deletes_nothing(fake, fake_kubeconfig, monkeypatch):
    api = configmap(fake, "asked")
    monkeypatch.setattr(sys, "stdin", Keyboard("n\n"))
    result = kfin("delete", "cm", "asked", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.REFUSED, result
    assert "Deleting ConfigMap/default/asked would delete 0 objects." in result.stdout
    assert "Delete ConfigMap/default/asked in context" in result.stderr and "Nothing was deleted." in result.stderr
    assert real_deletes(fake, "asked") == [] and api.exists(f"{CMS}/asked")
    monkeypatch.setattr(sys, "stdin", Keyboard("y\n"))
    result = kfin("delete", "cm", "asked", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.OK, result
    assert "ConfigMap/default/asked is gone" in result.stdout and not api.exists(f"{CMS}/asked")
    [sent] = real_deletes(fake, "asked")
    assert sent.body["preconditions"]["uid"]  # the object predicted for, not one made again since


def test_server_dry_run_sends_no_real_delete(fake, fake_kubeconfig):
    api = configmap(fake, "held", finalizers=["example.com/x"])
    fake.requests.clear()
    result = kfin("delete", "cm", "held", "--kubeconfig", str(fake_kubeconfig), "--dry-run=server")
    assert result.code == ExitCode.OK, result
    assert ("server dry run: the API server accepts the DELETE of ConfigMap/default/held (dryRun=All): nothing was "
            "deleted; it would stay Terminating until these finalizers go: example.com/x") in result.stderr
    sent = deletes(fake, "held")
    assert sent and all(r.dry_run for r in sent), sent
    assert [r for r in fake.requests if r.method not in ("GET", "HEAD") and not r.dry_run] == []
    assert "deletionTimestamp" not in api.get(f"{CMS}/held")["metadata"]


def test_bad_flags_are_usage_errors(fake, fake_kubeconfig):
    configmap(fake, "x")
    base = ("delete", "cm", "x", "--kubeconfig", str(fake_kubeconfig), "--yes")
    for extra, said in ((("--dry-run=client",), "--dry-run takes server or none, not client"),
                        (("--cascade", "sideways"), "--cascade takes background, foreground or orphan"),
                        (("--timeout", "0s"), '--timeout: "0s" must be more than 0'),
                        (("-o", "yaml"), '--output "yaml" is not supported here (use one of: table, json)'),
                        (("--interval", "0s"), "--interval must be at least 0.2s")):
        result = kfin(*base, *extra)
        assert result.code == ExitCode.USAGE and result.stderr.startswith(f"error: {said}"), (extra, result)
        assert result.stderr.count("\n") == 1
    for args, said in ((("delete", "cm", "x", "-f", "x.yaml"), "kfin delete takes KIND NAME, KIND -l SELECTOR or -f FILE"),
                       (("delete", "-f", "-"), "-f - reads the manifests from stdin, where kfin delete would ask"),
                       (("delete", "cm", "x", "-R"), "-R goes with -f DIR"),
                       (("delete",), "kfin delete needs KIND NAME, KIND -l SELECTOR or -f FILE")):
        result = kfin(*args, "--kubeconfig", str(fake_kubeconfig))
        assert result.code == ExitCode.USAGE and result.stderr.startswith(f"error: {said}"), (args, result)
    assert real_deletes(fake, "x") == []


def test_ctrl_c_leaves_the_deletion_in_place(fake, fake_kubeconfig):
    api = configmap(fake, "held", finalizers=["example.com/x"])
    process = subprocess.Popen([sys.executable, "-m", "kfin", "delete", "cm", "held", "--yes", "--kubeconfig",
                                str(fake_kubeconfig)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, cwd=ROOT, text=True)
    try:
        deadline = time.monotonic() + 30
        # following it: the DELETE was sent and the watches are open
        while not (real_deletes(fake, "held") and any(r.verb == "watch" for r in fake.requests)):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "kfin never followed the deletion"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == ExitCode.INTERRUPTED, (stdout, stderr)
    last = stderr.splitlines()[-1]
    assert last.startswith("error: interrupted: the deletion of ConfigMap/default/held stays in place (kfin stopped "
                           "following it and removed nothing); follow it again with kfin wait configmaps held -n "
                           "default --uid "), stderr
    assert "Traceback" not in stderr
    meta = api.get(f"{CMS}/held")["metadata"]
    assert meta["deletionTimestamp"] and meta["finalizers"] == ["example.com/x"]


def test_cascade_is_the_deletes_propagation_policy(fake, fake_kubeconfig):
    configmap(fake, "owner")
    result = kfin("delete", "cm", "owner", "--kubeconfig", str(fake_kubeconfig), "--yes", "--cascade", "orphan")
    assert result.code == ExitCode.OK, result
    assert "deleted ConfigMap/default/owner --cascade=orphan" in result.stderr
    [sent] = real_deletes(fake, "owner")
    assert sent.body["propagationPolicy"] == "Orphan"


def test_on_a_real_terminal_a_yes_deletes_and_it_follows_the_object_until_it_is_gone(fake, fake_kubeconfig):
    """On a pseudo-terminal (stdin, stdout and stderr): the question is asked there, `y` answers it, the
    DELETE is sent and kfin exits 0 once the object is gone."""
    import os
    import pty
    import select

    configmap(fake, "plain")
    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "kfin", "delete", "cm", "plain", "--kubeconfig",
                                str(fake_kubeconfig)], stdin=terminal, stdout=terminal, stderr=terminal, cwd=ROOT,
                               env=dict(os.environ, COLUMNS="200", NO_COLOR="1"))
    os.close(terminal)
    screen, answered = b"", False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # the terminal closed: kfin exited
                    break
                if not chunk:
                    break
                screen += chunk
            if not answered and b"[y/N]" in screen:
                assert not real_deletes(fake, "plain"), "deleted before the answer"
                os.write(controller, b"y\n")
                answered = True
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    text = screen.decode(errors="replace")
    assert answered, text
    assert process.returncode == ExitCode.OK, text
    assert len(real_deletes(fake, "plain")) == 1
    assert not RawClient(fake.url, "admin-token").exists(f"{CMS}/plain")


def test_confirm_answers_the_question_as_kfin_remove_takes_it(fake, fake_kubeconfig):
    configmap(fake, "scripted")
    result = kfin("delete", "cm", "scripted", "--confirm", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.OK, result
    assert len(real_deletes(fake, "scripted")) == 1
