"""Credentials that come from outside the kubeconfig (exec plugins, token files) are bounded in time and size
and checked before they become a header: a kubeconfig problem is one line and exit 3, never a hang or a
traceback. Exec plugins follow client-go's ExecCredential contract (k8s.io/client-go/plugin/pkg/client/auth/exec)."""

import copy
import json
import os
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfin.api import exec_credential
from kfin.errors import ExitCode
from tests.fakeapi.server import ADMIN_TOKEN
from tests.runner import kfin
from tests.commands.test_trust_input import paths

PLUGIN = """
import json, os, sys, time
mode, pid_file = sys.argv[1], sys.argv[2]
def credential(status):
    print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}))
if mode == "token":
    credential({"token": "%s"})
elif mode == "hang":
    child = os.fork()
    if child == 0:
        time.sleep(600)  # a helper of the plugin's, holding its output open
    open(pid_file, "w").write(f"{os.getpid()} {child}")
    time.sleep(600)
elif mode == "flood":
    while True:
        sys.stdout.write("x" * 65536)
elif mode == "split-token":
    credential({"token": "abc\\r\\nX-Injected: 1"})
elif mode == "fails":
    sys.stderr.write("you are not logged in: run `login`\\n")
    sys.exit(2)
elif mode == "junk":
    print("<html>login</html>")
""" % ADMIN_TOKEN


def kubeconfig(tmp_path: Path, server: str, user: dict) -> Path:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "main",
              "clusters": [{"name": "c", "cluster": {"server": server}}],
              "users": [{"name": "u", "user": user}],
              "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    return path


def exec_user(tmp_path: Path, mode: str) -> dict:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(PLUGIN)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(plugin), mode, str(tmp_path / "pids")], "interactiveMode": "Never"}}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of ours is dead
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def test_an_exec_plugin_credential_is_used(fake, tmp_path):
    path = kubeconfig(tmp_path, fake.url, exec_user(tmp_path, "token"))
    result = kfin("stuck", "-A", "--kubeconfig", str(path))
    assert result.code == ExitCode.OK, result
    assert any(r.path == "/api/v1/namespaces" for r in fake.requests)


def test_an_exec_plugin_that_hangs_is_stopped_at_the_request_timeout_with_its_children(fake, tmp_path):
    path = kubeconfig(tmp_path, fake.url, exec_user(tmp_path, "hang"))
    started = time.monotonic()
    result = kfin("stuck", "-A", "--kubeconfig", str(path), "--request-timeout", "1s")
    assert time.monotonic() - started < 10
    assert result.code == ExitCode.CONFIG, result
    assert result.stderr == 'error: cannot use context "main": exec: plugin python did not finish within 1 s\n' \
        .replace("python", Path(sys.executable).name)
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in pids), "the plugin or its child outlived kfin's deadline"
    assert not fake.requests  # nothing was sent without credentials


def test_without_a_request_timeout_an_exec_plugin_still_has_a_deadline(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(exec_credential, "DEFAULT_DEADLINE", 1.0)
    path = kubeconfig(tmp_path, fake.url, exec_user(tmp_path, "hang"))
    started = time.monotonic()
    result = kfin("stuck", "-A", "--kubeconfig", str(path))
    assert time.monotonic() - started < 10
    assert result.code == ExitCode.CONFIG and "did not finish within 1 s" in result.stderr, result


@pytest.mark.parametrize("mode, says", [
    ("flood", "printed more than 1024 KiB"),
    ("split-token", "returned a token with a line break, a control character or a character outside Latin-1"),
    ("fails", "exited with 2: you are not logged in: run `login`"),
    ("junk", "printed something that is not an ExecCredential"),
])
def test_an_exec_plugin_that_misbehaves_is_one_kubeconfig_error(fake, tmp_path, mode, says):
    path = kubeconfig(tmp_path, fake.url, exec_user(tmp_path, mode))
    result = kfin("stuck", "-A", "--kubeconfig", str(path), "--request-timeout", "20s")
    assert result.code == ExitCode.CONFIG, result
    assert result.stderr.startswith('error: cannot use context "main": exec: plugin ') and says in result.stderr
    assert result.stderr.count("\n") == 1 and "X-Injected" not in result.stderr
    assert not fake.requests


def test_a_token_file_ending_in_a_line_break_is_read_as_kubectl_reads_it(fake, tmp_path):
    (tmp_path / "token").write_text(ADMIN_TOKEN + "\n")
    path = kubeconfig(tmp_path, fake.url, {"tokenFile": "token"})  # relative to the kubeconfig
    result = kfin("stuck", "-A", "--kubeconfig", str(path))
    assert result.code == ExitCode.OK, result


@pytest.mark.parametrize("token_file, says", [
    ("/dev/zero", "its tokenFile /dev/zero is not a regular file"),
    ("fifo", "is not a regular file"),
    ("big", "is larger than 1024 KiB: not a token"),
    ("missing", "cannot be read: No such file or directory"),
])
def test_a_token_file_that_never_ends_or_is_not_there_is_refused_before_it_is_read(fake, tmp_path, token_file,
                                                                                   says):
    if token_file == "fifo":
        os.mkfifo(tmp_path / "fifo")  # reading it would wait for a writer forever
    if token_file == "big":
        with (tmp_path / "big").open("wb") as out:
            out.truncate(2 * 1024 * 1024)
    path = kubeconfig(tmp_path, fake.url, {"tokenFile": token_file})
    started = time.monotonic()
    result = kfin("stuck", "-A", "--kubeconfig", str(path))
    assert time.monotonic() - started < 10
    assert result.code == ExitCode.CONFIG and result.stderr.startswith('error: context "main": its tokenFile ')
    assert says in result.stderr and result.stderr.count("\n") == 1, result
    assert not fake.requests


def test_a_token_file_with_a_line_break_inside_is_refused_and_never_printed(fake, tmp_path):
    (tmp_path / "token").write_text("secret\r\nX-Injected: 1\n")
    path = kubeconfig(tmp_path, fake.url, {"tokenFile": "token"})
    result = kfin("stuck", "-A", "--kubeconfig", str(path))
    assert result.code == ExitCode.CONFIG, result
    assert result.stderr == ('error: the credentials of context "main" hold a line break, a control character or a '
                             "character outside Latin-1: they cannot be sent in an HTTP header\n")
    assert not fake.requests


# ----- any kubeconfig --------------------------------------------------------------------------------------
SECRET = "s3cret-token-kfin"
VALID = {"apiVersion": "v1", "kind": "Config", "current-context": "main",
         "clusters": [{"name": "c", "cluster": {"server": "SERVER", "insecure-skip-tls-verify": False,
                                                "tls-server-name": "kubernetes"}}],
         "users": [{"name": "u", "user": {"token": SECRET, "username": "ann", "as": "bob", "as-groups": ["g"]}}],
         "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u", "namespace": "team"}}]}
TEXT_JUNK = st.text(st.sampled_from(["a", "-", ".", "/", ":", "\r", "\n", "\x00", "\x1b", "é", "ü", "💥", " "]),
                    max_size=6)
VALUE_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=True), TEXT_JUNK,
                       st.just([]), st.just({}), st.just(["a", 1]), st.just({"name": 5}), st.just("false"),
                       st.just("https://h/?q=1"), st.just("http://user:" + SECRET + "@127.0.0.1:1"))


CONFIG_PATHS = [p for p in paths(VALID) if p]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(st.tuples(st.sampled_from(CONFIG_PATHS), st.one_of(VALUE_JUNK, st.just("<delete>"))),
                        min_size=1, max_size=3))
def test_any_kubeconfig_is_used_or_refused_in_one_line_and_never_leaks_the_token(fake, tmp_path, changes):
    document = json.loads(json.dumps(VALID).replace("SERVER", fake.url))
    for path, value in changes:
        node = document
        try:
            for step in path[:-1]:
                node = node[step]
            if value == "<delete>":
                del node[path[-1]]
            elif isinstance(value, str) and SECRET in value and path[-1] != "server":
                node[path[-1]] = "http://user:pw@127.0.0.1:1"  # a password is secret in a server URL only
            else:
                node[path[-1]] = copy.deepcopy(value)  # st.just's values are shared between examples
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed or replaced the parent
    file = tmp_path / "kubeconfig"
    file.write_text(json.dumps(document))
    started = time.monotonic()
    result = kfin("stuck", "-n", "default", "--kubeconfig", str(file), "--request-timeout", "5s")
    assert time.monotonic() - started < 10
    assert result.code in {ExitCode.OK, ExitCode.USAGE, ExitCode.CONFIG, ExitCode.UNREACHABLE, ExitCode.AUTH,
                           ExitCode.FORBIDDEN, ExitCode.PARTIAL}, result
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) <= 1 and (result.code == ExitCode.OK or errors), result
    assert SECRET not in result.stdout + result.stderr
    assert all(c == "\n" or c.isprintable() for c in result.stdout + result.stderr), result
