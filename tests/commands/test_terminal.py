"""On a terminal kfin shows colour and a progress bar on stderr; piped or with NO_COLOR, plain text."""

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from tests.fakeapi import Fault
from tests.fakeapi.rawclient import RawClient
from tests.paths import PROJECT

ROOT = PROJECT


def read_to_end(controller: int, process) -> bytes:
    """Everything written on the pseudo-terminal until the program ends (then it is closed)."""
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(controller)
    return b"".join(chunks)


def run_on_terminal(args, env_extra=None):
    """Run kfin with stdout and stderr on a pseudo-terminal; returns everything it wrote there."""
    controller, terminal = pty.openpty()
    env = dict(os.environ, COLUMNS="200", TERM="xterm-256color", **(env_extra or {}))
    if "NO_COLOR" not in (env_extra or {}):
        env.pop("NO_COLOR", None)
    process = subprocess.Popen([sys.executable, "-m", "kfin", *args], stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    written = read_to_end(controller, process)
    return process.returncode, written.decode(errors="replace")


def stuck_configmap(fake):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/b"]}})
    api.delete("/api/v1/namespaces/default/configmaps/held")


def test_colour_and_progress_on_a_terminal(fake, fake_kubeconfig):
    stuck_configmap(fake)
    fake.faults.append(Fault(path="/configmaps$", delay=0.5))  # keep the scan on screen a moment
    code, screen = run_on_terminal(["stuck", "--kubeconfig", str(fake_kubeconfig)])
    assert code == 0, screen
    assert "\x1b[" in screen and "held" in screen
    assert "scanning fake" in screen  # the progress bar's label


def test_no_colour_with_no_color(fake, fake_kubeconfig):
    stuck_configmap(fake)
    code, screen = run_on_terminal(["stuck", "--kubeconfig", str(fake_kubeconfig)], {"NO_COLOR": "1"})
    assert code == 0 and "held" in screen
    # NO_COLOR (no-color.org): no colour, and no emphasis either (issue 41: bold stayed), on stdout or stderr
    assert not re.search(r"\x1b\[[0-9;]*m", screen), screen


def run_in_window(args, columns, rows=50):
    """kfin on a pseudo-terminal of `columns`, measured by kfin itself (no $COLUMNS)."""
    import fcntl
    import struct
    import termios

    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update(TERM="xterm-256color", NO_COLOR="1")
    process = subprocess.Popen([sys.executable, "-m", "kfin", *args], stdout=terminal, stderr=subprocess.DEVNULL,
                               env=env, cwd=ROOT)
    os.close(terminal)
    written = read_to_end(controller, process)
    screen = re.sub(r"\x1b\[[0-9;]*m", "", written.decode())
    return process.returncode, screen.replace("\r\n", "\n").splitlines()


NAMES = ["kubernetes.io/pvc-protection", "kubernetes.io/pv-protection", "service.kubernetes.io/load-balancer-cleanup",
         "acme.io/database-cleanup", "data-postgres-0", "web-6d4b9c-q8w4n", "monitoring-old", "PersistentVolumeClaim",
         "Database.acme.io"]


def objects_table(lines):
    """kfin stuck's table of objects, below the root causes that lead (issue 41)."""
    return lines[next(i for i, line in enumerate(lines) if line.split()[:1] in (["NAMESPACE"], ["KIND"])):]


def test_at_80_columns_every_name_and_finalizer_is_whole_and_the_verdict_shows():
    """Issue 29: at exactly 80 columns names and finalizers broke mid-word ("kubernetes.i/o/pvc-protec/tion")."""
    code, lines = run_in_window(["stuck", "-A", "--from-snapshot", "examples/stuck-cluster.json"], 80)
    lines = objects_table(lines)
    assert code == 8, lines  # the snapshot's failing APIService
    assert lines[0].split() == ["NAMESPACE", "KIND", "NAME", "TERMINATING", "VERDICT"]
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    for name in NAMES:
        assert any(name in line for line in lines), name
    claim = next(i for i, line in enumerate(lines) if "data-postgres-0" in line)
    assert lines[claim].split() == ["shop", "PersistentVolumeClaim", "data-postgres-0", "3d", "HOLDING"]
    assert lines[claim + 1].strip() == "kubernetes.io/pvc-protection"
    assert lines[claim + 2].strip().startswith("pvc-protection: in use by Pod shop/postgres-0")


def test_at_120_columns_each_object_is_a_row_with_its_finalizers_whole():
    code, lines = run_in_window(["stuck", "-A", "--from-snapshot", "examples/stuck-cluster.json"], 120)
    lines = objects_table(lines)
    assert lines[0].split() == ["NAMESPACE", "KIND", "NAME", "TERMINATING", "VERDICT", "FINALIZERS"]
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)
    service = next(line for line in lines if " frontend " in line)
    # no cloud controller manager in the snapshot: nobody is shown to delete its load balancer (issue 56)
    assert service.split() == ["shop", "Service", "frontend", "26h", "UNKNOWN",
                               "service.kubernetes.io/load-balancer-cleanup"]
    for name in NAMES:
        assert any(name in line for line in lines), name


def test_on_a_phone_sized_terminal_each_object_is_a_block_wrapped_between_words():
    code, lines = run_in_window(["stuck", "-A", "--from-snapshot", "examples/stuck-cluster.json"], 40)
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("NAMESPACE: ")):]
    assert all(len(line) <= 40 for line in lines), max(lines, key=len)
    assert "NAME: data-postgres-0" in lines and "VERDICT: HOLDING" in lines
    words = " ".join(lines).split()
    assert "in use by Pod" in " ".join(words)  # wrapped between words, never inside one
    assert "shop/postgres-0" in words or any("shop/postgres-0" in w for w in words)


def test_with_one_namespace_there_is_no_namespace_column():
    code, lines = run_in_window(["stuck", "-n", "shop", "--from-snapshot", "examples/stuck-cluster.json"], 120)
    lines = objects_table(lines)
    assert lines[0].split()[0] == "KIND" and "NAMESPACE" not in lines[0]


def test_the_verdict_column_is_in_its_verdicts_colour():
    """Issue 40: the VERDICT column is read first; on a terminal each verdict has the colour `explain` gives it."""
    _, screen = run_on_terminal(["stuck", "-A", "--from-snapshot", str(ROOT / "examples" / "stuck-cluster.json")])
    assert re.search(r"\x1b\[1;31mHOLDING\x1b\[0m", screen), screen  # bold red: removing it breaks something
    assert re.search(r"\x1b\[1;33mWAITING\x1b\[0m", screen), screen  # bold yellow: progress expected
