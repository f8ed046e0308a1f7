"""The command line's contract: help, version, and one-line errors with documented exit codes."""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT


@pytest.fixture(autouse=True)
def no_user_kubeconfig(monkeypatch, tmp_path):
    """Never read the developer's own ~/.kube/config or in-cluster settings."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


def test_help_lists_the_kubectl_flags():
    result = kfin("--help")
    assert result.code == 0
    for flag in ("--kubeconfig", "--context", "--namespace", "--all-namespaces", "--output", "--request-timeout"):
        assert flag in result.stdout


# The order an operator needs them in (issue 57): what is stuck and why, delete and remove, then before a
# deletion, pictures and files, what runs in a cluster, and the rest.
OPERATOR_ORDER = ["stuck", "explain", "delete", "remove", "wait", "preflight", "graph", "report", "snapshot",
                  "serve", "guard", "mcp", "catalog", "audit", "version", "help"]


def test_help_starts_the_operator_at_stuck_and_lists_each_command_whole_in_the_order_of_need(monkeypatch):
    """At 80 columns: a "Start here" line before the commands, the commands in the order of OPERATOR_ORDER
    (kfin delete where it exists), and no summary cut short with '...' (Click cuts one that is too long)."""
    monkeypatch.setenv("COLUMNS", "80")
    result = kfin("--help")
    assert result.code == 0
    before, _, listed = result.stdout.partition("\nCommands:\n")
    assert "Start here: kfin stuck -A, then kfin explain KIND NAME" in " ".join(before.split())
    rows = [line.split(None, 1) for line in listed.splitlines() if line.startswith("  ") and line.strip()]
    names = [row[0] for row in rows]
    assert names == [name for name in OPERATOR_ORDER if name in names] and set(names) <= set(OPERATOR_ORDER)
    assert names[:2] == ["stuck", "explain"]
    for name, summary in rows:
        assert not summary.endswith(("...", "…")), f"kfin {name}: its summary is cut: {summary}"


def test_version_flag_names_kfin_and_the_kubernetes_client():
    from importlib.metadata import version

    result = kfin("--version")
    assert result.code == 0
    assert result.stdout.startswith("kfin 0.") and f"kubernetes client {version('kubernetes')}" in result.stdout


def test_help_does_not_import_the_kubernetes_client():
    code = "import sys; from kfin.commands.app import main\ntry:\n main(['--help'])\nexcept SystemExit: pass\n" \
           "print('kubernetes' in sys.modules, file=sys.stderr)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stderr.strip() == "False"


def test_python_dash_m_and_the_plugin_name_run_kfin(tmp_path):
    done = subprocess.run([sys.executable, "-m", "kfin", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "Usage: kfin" in done.stdout
    plugin = tmp_path / "kubectl-kfin"
    plugin.write_text(f"#!{sys.executable}\nfrom kfin.commands.app import main\nmain()\n")
    plugin.chmod(0o755)
    done = subprocess.run([str(plugin), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "Usage: kubectl kfin" in done.stdout


def test_version_reports_the_server(fake_kubeconfig):
    result = kfin("version", "--kubeconfig", str(fake_kubeconfig), "-o", "json")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["serverVersion"] == "v1.36.2" and data["context"] == "fake"


def test_options_before_the_command_work_too(fake_kubeconfig):
    result = kfin("--kubeconfig", str(fake_kubeconfig), "-o", "yaml", "version")
    assert result.code == 0 and "serverVersion: v1.36.2" in result.stdout


def _one_line_error(result, code):
    assert result.code == code, (result.code, result.stderr)
    # `kfin version` prints its own version before it connects, as kubectl does (issue 29)
    assert result.stdout in ("", kfin("version", "--client").stdout)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr
    return lines[0]


def test_no_kubeconfig_is_a_config_error():
    line = _one_line_error(kfin("version"), ExitCode.CONFIG)
    assert "no kubeconfig found" in line


def test_missing_kubeconfig_file_is_a_config_error(tmp_path):
    line = _one_line_error(kfin("version", "--kubeconfig", str(tmp_path / "nope")), ExitCode.CONFIG)
    assert "does not exist" in line


def test_unreadable_kubeconfig_is_a_config_error(tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("clusters: [unclosed")
    _one_line_error(kfin("version", "--kubeconfig", str(bad)), ExitCode.CONFIG)


def test_unknown_context_names_the_available_ones(fake_kubeconfig):
    line = _one_line_error(kfin("version", "--kubeconfig", str(fake_kubeconfig), "--context", "prod"),
                           ExitCode.CONFIG)
    assert 'context "prod" not found' in line and "fake, fake-viewer" in line


def test_kubeconfig_from_the_environment(fake_kubeconfig, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(fake_kubeconfig))
    assert kfin("version").code == 0


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _kubeconfig(tmp_path, server, token="admin-token"):
    path = tmp_path / "kc"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config",
                                "clusters": [{"name": "c", "cluster": {"server": server}}],
                                "users": [{"name": "u", "user": {"token": token}}],
                                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                                "current-context": "c"}))
    return path


def test_unreachable_server(tmp_path):
    server = f"http://127.0.0.1:{_closed_port()}"
    line = _one_line_error(kfin("version", "--kubeconfig", str(_kubeconfig(tmp_path, server))), ExitCode.UNREACHABLE)
    assert server in line and "refused" in line


def test_timeout_is_unreachable(fake, tmp_path):
    from tests.fakeapi import Fault

    fake.faults.append(Fault(path="^/version$", delay=1.5))
    result = kfin("version", "--kubeconfig", str(_kubeconfig(tmp_path, fake.url)), "--request-timeout", "0.3s")
    assert "did not answer in time" in _one_line_error(result, ExitCode.UNREACHABLE)


def test_tls_failure(fake, tmp_path):
    server = fake.url.replace("http://", "https://")  # a TLS client meeting a plain-HTTP server
    line = _one_line_error(kfin("version", "--kubeconfig", str(_kubeconfig(tmp_path, server))), ExitCode.AUTH)
    assert "TLS" in line


def test_rejected_credentials(fake, tmp_path):
    line = _one_line_error(kfin("version", "--kubeconfig", str(_kubeconfig(tmp_path, fake.url, "expired"))),
                           ExitCode.AUTH)
    assert "401" in line


def test_bad_flag_values_are_usage_errors(fake_kubeconfig):
    _one_line_error(kfin("version", "--kubeconfig", str(fake_kubeconfig), "-o", "xml"), ExitCode.USAGE)
    _one_line_error(kfin("version", "--kubeconfig", str(fake_kubeconfig), "--request-timeout", "soon"),
                    ExitCode.USAGE)
    assert kfin("version", "--no-such-flag").code == ExitCode.USAGE


SNAPSHOT = ["--from-snapshot", "examples/stuck-cluster.json"]


@pytest.mark.parametrize("command", [["explain", "-n", "shop"], ["preflight", "-n", "shop"], ["graph", "-n", "shop"]])
def test_kubectls_type_slash_name_names_the_same_object(command, monkeypatch):
    """Issue 29: `kfin explain pvc/data` was refused; kubectl users type TYPE/NAME without thinking."""
    monkeypatch.chdir(ROOT)
    kind, name = ("pvc", "data-postgres-0") if command[0] != "graph" else ("pod", "postgres-0")
    slashed = kfin(*command, f"{kind}/{name}", *SNAPSHOT)
    spaced = kfin(*command, kind, name, *SNAPSHOT)
    assert slashed.code == spaced.code and slashed.stdout == spaced.stdout != "", slashed


def test_type_slash_name_with_a_name_again_is_a_usage_error(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = kfin("explain", "pvc/data-postgres-0", "data-postgres-0", "-n", "shop", *SNAPSHOT)
    assert result.code == ExitCode.USAGE and result.stderr == (  # the extra argument is the problem, not the kind
        "error: kfin explain takes KIND NAME or KIND/NAME: 'pvc/data-postgres-0' names the object already, so "
        "'data-postgres-0' is one argument too many\n"), result
    result = kfin("explain", "pvc/a/b", "data-postgres-0", "-n", "shop", *SNAPSHOT)
    assert result.code == ExitCode.USAGE and result.stderr.startswith('error: invalid resource type "pvc/a/b"')
    assert kfin("explain", "pvc", *SNAPSHOT).stderr == "error: kfin explain needs KIND NAME or KIND/NAME\n"
    assert kfin("explain", "pvc/", *SNAPSHOT).stderr.startswith('error: invalid name "": ')


def test_remove_and_wait_take_type_slash_name(fake, fake_kubeconfig):
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    api.delete("/api/v1/namespaces/default/configmaps/held")
    planned = kfin("remove", "cm/held", "--finalizer", "example.com/x", "--kubeconfig", str(fake_kubeconfig))
    assert planned.code == ExitCode.OK and "example.com/x" in planned.stdout, planned
    waited = kfin("wait", "configmap/held", "--timeout", "1s", "--kubeconfig", str(fake_kubeconfig))
    assert waited.code == ExitCode.FOUND and "ConfigMap/default/held is still there" in waited.stderr, waited


def test_a_snapshot_written_to_stdout_is_read_from_stdin(fake, fake_kubeconfig):
    """Issue 29: `snapshot -f -` wrote stdout but `--from-snapshot -` did not read stdin."""
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    api.delete("/api/v1/namespaces/default/configmaps/held")
    written = subprocess.run([sys.executable, "-m", "kfin", "snapshot", "-A", "-f", "-", "--kubeconfig",
                              str(fake_kubeconfig)], capture_output=True, cwd=ROOT, timeout=60)
    assert written.returncode == 0, written.stderr
    read = subprocess.run([sys.executable, "-m", "kfin", "explain", "cm/held", "-n", "default", "-o", "json",
                           "--from-snapshot", "-"], input=written.stdout, capture_output=True, cwd=ROOT, timeout=60)
    assert read.returncode == 0, read.stderr
    assert [f["finalizer"] for f in json.loads(read.stdout)["findings"]] == ["example.com/x"]
    junk = subprocess.run([sys.executable, "-m", "kfin", "stuck", "--from-snapshot", "-"], input=b"{",
                          capture_output=True, cwd=ROOT, timeout=60)
    assert junk.returncode == ExitCode.USAGE and junk.stderr.decode().startswith("error: standard input is not JSON")


def test_version_shows_kfins_own_first_and_client_needs_no_server(tmp_path):
    """Issue 29: `kfin version` failed outright when the server was down; there was no --client."""
    assert kfin("version", "--client", "--kubeconfig", str(tmp_path / "none")).stdout.startswith("kfin: ")
    down = kfin("version", "--kubeconfig", str(tmp_path / "none"))
    assert down.code == ExitCode.CONFIG and down.stdout.startswith("kfin: ") and down.stderr.startswith("error:")
    as_json = kfin("version", "-o", "json", "--kubeconfig", str(tmp_path / "none"))
    assert json.loads(as_json.stdout)["kfinVersion"] and as_json.code == ExitCode.CONFIG


def test_help_is_true_for_each_command(monkeypatch):
    """Issue 41: each command's -o help lists its own formats (graph's svg and png, report's html only), -v shows
    in the help, and `kfin help COMMAND` is `kfin COMMAND --help`."""
    from kfin.commands.outputs import OUTPUTS

    monkeypatch.setenv("COLUMNS", "200")
    for command, formats in OUTPUTS.items():
        shown = " ".join(kfin(command, "--help").stdout.split())
        listed = ", ".join(f"{f}..." if f.endswith("=") else f for f in formats)
        assert f"-o, --output FORMAT Output format: {listed}. " in shown, (command, shown)
    assert "-v, --v LEVEL" in kfin("--help").stdout
    assert kfin("help", "graph").stdout == kfin("graph", "--help").stdout
    unknown = kfin("help", "nope")
    assert unknown.code == ExitCode.USAGE and unknown.stderr.startswith("error: unknown command")
