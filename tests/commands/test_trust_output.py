"""Data from the cluster is never terminal markup nor escape sequences; output stays readable at any width;
odd kubeconfigs are one clear line."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfin.errors import ExitCode
from kfin.render.data import indented
from tests.runner import kfin
from tests.paths import PROJECT

EXAMPLE = PROJECT / "examples" / "stuck-cluster.json"
HOSTILE = "[link=http://evil.example]click[/link][bold red]x[/]\x1b]8;;http://evil\x07\x1b[2J\x9b31m"


def hostile_snapshot(tmp_path) -> Path:
    """The example cluster with markup and escape sequences in a finalizer, a condition message and a label."""
    document = json.loads(EXAMPLE.read_text())
    for obj in document["objects"]:
        meta = obj["metadata"]
        if obj["kind"] == "Database":
            meta["finalizers"] = ["acme.io/" + HOSTILE]
        if obj["kind"] == "Namespace" and meta["name"] == "team-a":
            obj["status"]["conditions"][0]["message"] = HOSTILE
        if obj["kind"] == "Service":
            meta["finalizers"] = [HOSTILE]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("command", [["stuck", "-A"], ["stuck", "-A", "-o", "wide"], ["stuck", "-A", "-o", "name"],
                                     ["graph", "namespace", "team-a"], ["graph", "namespace", "shop"],
                                     ["explain", "databases.acme.io", "orders", "-n", "team-a"],
                                     ["explain", "ns", "team-a"], ["explain", "svc", "frontend", "-n", "shop"]])
@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_cluster_data_is_neither_markup_nor_escape_sequences(tmp_path, monkeypatch, command, terminal):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "400")
    result = kfin(*command, "--from-snapshot", str(hostile_snapshot(tmp_path)), tty=terminal)
    assert result.code in (ExitCode.OK, ExitCode.PARTIAL), result
    raw = result.stdout + result.stderr
    assert "\x1b]8" not in raw  # no hyperlink made of the data
    out = re.sub(r"\x1b\[[0-9;]*m", "", raw)  # the terminal's own bold, the only escape sequence allowed
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    flat = "".join(out.split())
    if "name" not in command:  # -o name lists names only
        assert "[link=http://evil.example]click[/link][boldred]x[/]" in flat, out  # shown as it is
        assert "\\x1b]8;;http://evil\\x07\\x1b[2J\\x9b31m" in flat


def test_errors_show_control_characters_instead_of_sending_them(fake_kubeconfig):
    result = kfin("explain", "cm", "x\x1b[2J", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.USAGE and "\x1b" not in result.stderr and "\\x1b[2J" in result.stderr


@pytest.mark.parametrize("columns", ["abc", "0", "-5", "20", "1", "99999999999"])
def test_any_columns_setting_gives_readable_output(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setenv("NO_COLOR", "1")
    result = kfin("explain", "pvc", "data-postgres-0", "-n", "shop", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.OK, result  # the snapshot's failing metrics.k8s.io does not bear on a claim
    flat = " ".join(result.stdout.split())
    # every value is there in full, not folded away to a column of two characters
    assert "stop what uses the claim: delete Pod shop/postgres-0; the finalizer then goes by itself" in flat, result.stdout
    assert "Safe fix" in flat and "Risk if forced" in flat


@pytest.mark.parametrize("columns", ["99999999", "99999"])
def test_a_huge_columns_setting_on_a_terminal_is_bounded(columns):
    """Issue 41: COLUMNS=99999999 on a terminal laid explain's panels out that wide: 3 GB and minutes (run here
    with 1 GB of address space, so that a regression fails at once instead of taking the machine)."""
    import os
    import pty
    import resource
    import subprocess
    import sys

    from tests.commands.test_terminal import read_to_end

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    controller, terminal = pty.openpty()
    env = dict(os.environ, COLUMNS=columns, NO_COLOR="1", TERM="xterm")
    process = subprocess.Popen([sys.executable, "-m", "kfin", "explain", "pvc", "data-postgres-0", "-n", "shop",
                                "--from-snapshot", str(EXAMPLE)], stdout=terminal, stderr=subprocess.DEVNULL,
                               env=env, cwd=EXAMPLE.parents[1], preexec_fn=limited)
    os.close(terminal)
    screen = read_to_end(controller, process).decode(errors="replace").replace("\r\n", "\n")
    assert process.returncode == ExitCode.OK, screen[-500:]
    lines = re.sub(r"\x1b\[[0-9;]*m", "", screen).splitlines()  # bold stays with NO_COLOR
    assert max(len(line) for line in lines) <= 1000, max(len(line) for line in lines)
    assert "stop what uses the claim: delete Pod shop/postgres-0" in " ".join(screen.split())


def test_a_narrow_terminal_gets_one_block_per_stuck_object(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    monkeypatch.setenv("NO_COLOR", "1")
    result = kfin("stuck", "-A", "--from-snapshot", str(EXAMPLE), tty=True)
    assert result.code == ExitCode.PARTIAL
    shown = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    lines = shown.splitlines()
    # a step's command alone is wider: printed whole, never wrapped, so that it pastes (issue 41, item 7)
    commands = [line for line in lines if re.match(r" *(kubectl|kfin) ", line)]
    assert "   kubectl delete pod -n shop postgres-0" in commands
    assert "NAME: data-postgres-0" in lines and all(len(line) <= 30 for line in lines if line not in commands), shown
    flat = " ".join(shown.split())
    assert "BLOCKER: pvc-protection: in use by Pod shop/postgres-0 (on node ip-10-0-1-17)" in flat.replace("- ", "-")


def kubeconfig(tmp_path, cluster: dict, user: dict) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": cluster}],
                                "users": [{"name": "u", "user": user}],
                                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                                "current-context": "c"}))
    return path


@pytest.mark.parametrize("cluster, user, says", [
    ({"server": "https://127.0.0.1:1"}, {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                   "command": "kfin-no-such-plugin"}}, "kfin-no-such-plugin"),
    ({"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True},
     {"client-certificate": "/nonexistent/c.pem", "client-key": "/nonexistent/k.pem"}, "/nonexistent/c.pem"),
    ({"server": "https://127.0.0.1:1", "certificate-authority": "/nonexistent/ca.pem"}, {"token": "t"},
     "/nonexistent/ca.pem"),
    ({"server": ""}, {"token": "t"}, "no usable server"),
    ({"server": "127.0.0.1:6443"}, {"token": "t"}, "no usable server"),
])
def test_odd_kubeconfigs_are_one_line_and_exit_3(tmp_path, capfd, cluster, user, says):
    result = kfin("version", "--kubeconfig", str(kubeconfig(tmp_path, cluster, user)))
    assert result.code == ExitCode.CONFIG, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], result.stderr
    stray = capfd.readouterr()  # nothing written around kfin's own streams (logging, warnings)
    assert "ERROR:root" not in stray.err + stray.out and "Warning" not in stray.err


@pytest.mark.parametrize("fmt", ["dot", "mermaid", "graphml", "json"])
@pytest.mark.parametrize("namespace", ["team-a", "shop"])
def test_graph_exports_carry_no_control_characters_and_graphml_is_xml(tmp_path, fmt, namespace):
    """Issue 27: DOT, Mermaid and GraphML carried escape sequences and carriage returns raw; the GraphML was not
    even well-formed XML."""
    import xml.etree.ElementTree as ElementTree

    result = kfin("graph", "namespace", namespace, "-o", fmt, "--from-snapshot", str(hostile_snapshot(tmp_path)))
    assert result.code in (ExitCode.OK, ExitCode.PARTIAL), result
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", result.stdout)
    if fmt == "graphml":
        ElementTree.fromstring(result.stdout.encode())
    if fmt == "json":
        json.loads(result.stdout)
    assert "\\x1b" in result.stdout or "\\u001b" in result.stdout  # shown, not dropped


def test_the_server_version_is_shown_never_sent(fake, fake_kubeconfig):
    from tests.fakeapi import Fault

    fake.faults.append(Fault(path="^/version$", body=json.dumps({"gitVersion": "v1.36\x1b[2J\r\x07"}).encode()))
    result = kfin("version", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == 0, result
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", result.stdout)
    assert "v1.36\\x1b[2J\\x0d\\x07" in result.stdout
    fake.faults.append(Fault(path="^/version$", body=json.dumps({"gitVersion": {"not": "a string"}}).encode()))
    assert kfin("version", "--kubeconfig", str(fake_kubeconfig)).code == 0


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


@given(JSON_VALUES)
@settings(max_examples=300, deadline=None)
def test_o_json_is_what_python_s_json_writes_with_an_indent(value):
    """-o json is indented by msgspec from the C encoder's compact text (kfin.render.data.indented), and must
    stay json.dumps(indent=2) byte for byte: every escape (non-ASCII, control characters, U+2028), number
    (1e+16, 2.5e-07, -0.0) and NaN, which only Python's writer takes."""
    assert indented(value) == json.dumps(value, indent=2)


def test_o_json_escapes_what_a_terminal_would_act_on():
    """A name with an escape sequence, a line separator and a right-to-left override stays escaped in -o json."""
    text = indented({"name": "a\x1b[31mred\u2028\u202e", "seconds": 1e16})
    assert text.isascii() and "\\u001b[31m" in text and "\\u2028\\u202e" in text and "1e+16" in text
