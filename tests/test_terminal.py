"""On a terminal kfin shows colour and a progress bar on stderr; piped or with NO_COLOR, plain text."""

import os
import pty
import re
import subprocess
import sys

from tests.fakeapi import Fault
from tests.fakeapi.rawclient import RawClient


def run_on_terminal(args, env_extra=None):
    """Run kfin with stdout and stderr on a pseudo-terminal; returns everything it wrote there."""
    controller, terminal = pty.openpty()
    env = dict(os.environ, COLUMNS="200", TERM="xterm-256color", **(env_extra or {}))
    if "NO_COLOR" not in (env_extra or {}):
        env.pop("NO_COLOR", None)
    process = subprocess.Popen([sys.executable, "-m", "kfin", *args], stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
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
    return process.returncode, b"".join(chunks).decode(errors="replace")


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
    table = screen[screen.index("NAMESPACE"):]
    # NO_COLOR (no-color.org) forbids colour; emphasis such as bold may stay.
    assert not re.search(r"\x1b\[(?:\d+;)*(?:3[0-9]|9[0-7])m", table)
