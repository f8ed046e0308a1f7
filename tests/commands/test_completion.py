"""Shell completion as the shell drives it (the completion environment variables), and kubectl's plugin
completion; the committed completion scripts are current."""

import json
import os
import subprocess
import sys
from pathlib import Path

from kfin.commands.outputs import VERDICTS
from kfin.core.explain.causes import Verdict
from kfin.errors import ExitCode
from kfin.render.explanation import VERDICT_STYLE
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT


def complete(words: str, env_extra=None) -> list[str]:
    """What bash would offer after typing `words` (a trailing space means: a new word)."""
    parts = words.split(" ")
    env = dict(os.environ, _KFIN_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(len(parts) - 1),
               **(env_extra or {}))
    done = subprocess.run([sys.executable, "-m", "kfin"], env=env, capture_output=True, text=True, timeout=30)
    assert done.stderr == "", done.stderr  # nothing may reach the shell but candidates
    return [line for line in done.stdout.splitlines() if line]


def test_committed_scripts_are_current(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from generate_completions import generate
    finally:
        sys.path.pop(0)
    for path in generate(tmp_path):
        committed = ROOT / "completions" / path.name
        assert committed.exists() and committed.read_text() == path.read_text(), \
            f"{committed} is out of date: run python scripts/generate_completions.py"


def test_commands_and_options_complete():
    assert {"stuck", "snapshot"} <= set(complete("kfin s"))
    assert "--all-namespaces" in complete("kfin stuck --all")


def test_kinds_complete_from_the_discovery_cache(fake, fake_kubeconfig, tmp_path):
    api = RawClient(fake.url, "admin-token")
    api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget",
                                                                     "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": True, "storage": True}]}})
    env = {"KUBECONFIG": str(fake_kubeconfig)}
    assert "persistentvolumeclaims" in complete("kfin explain persistentv", env)  # built-in table: no cache yet
    assert "widgets.example.com" not in complete("kfin explain wid", env)
    kfin("stuck", "--kubeconfig", str(fake_kubeconfig))  # fills the discovery cache
    requests = len(fake.requests)
    assert complete("kfin explain wid", env) == ["widgets.example.com"]
    assert "wd" in complete("kfin explain w", env)
    assert len(fake.requests) == requests  # kinds came from the cache, not the server


def test_names_namespaces_and_contexts_complete(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    for name in ("held", "helper", "other"):
        api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": name}})
    env = {"KUBECONFIG": str(fake_kubeconfig)}
    assert complete("kfin explain cm hel", env) == ["held", "helper"]
    assert complete("kfin explain cm ", env) == ["held", "helper", "kube-root-ca.crt", "other"]
    assert complete("kfin stuck -n kube-", env) == ["kube-node-lease", "kube-public", "kube-system"]
    assert complete("kfin stuck --context fake", env) == ["fake", "fake-viewer"]


def test_a_broken_cluster_completes_nothing_and_says_nothing(tmp_path):
    config = tmp_path / "kc"
    config.write_text(json.dumps({"apiVersion": "v1", "kind": "Config",
                                  "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                                  "users": [{"name": "u", "user": {"token": "t"}}],
                                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                                  "current-context": "c"}))
    assert complete("kfin explain cm ", {"KUBECONFIG": str(config)}) == []


def test_kubectl_plugin_completion(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "held"}})
    env = dict(os.environ, KUBECONFIG=str(fake_kubeconfig))
    code = "import sys; from kfin.commands.app import kubectl_complete; sys.argv[0] = 'kubectl_complete-kfin'; " \
           "kubectl_complete()"
    done = subprocess.run([sys.executable, "-c", code, "__complete", "explain", "cm", "he"], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.stdout.splitlines() == ["held", ":4"]
    done = subprocess.run([sys.executable, "-c", code, "__complete", "st"], env=env, capture_output=True, text=True)
    assert done.stdout.splitlines() == ["stuck", ":4"]


def test_kubectl_kfin_help_runs_through_the_plugin_name(tmp_path):
    plugin = tmp_path / "kubectl-kfin"
    plugin.write_text(f"#!{sys.executable}\nfrom kfin.commands.app import main\nmain()\n")
    plugin.chmod(0o755)
    done = subprocess.run([str(plugin), "stuck", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "Usage: kubectl kfin stuck" in done.stdout


def test_every_command_and_option_has_help_and_each_command_an_example():
    from kfin.commands.app import COMMANDS, app
    from typer.main import get_command

    group = get_command(app)
    with group.make_context("kfin", ["--help"], resilient_parsing=True) as ctx:
        names = group.list_commands(ctx)
        assert names == list(COMMANDS) and len(names) == 16  # report joined (issue 28), help (41), guard (42), mcp (45),
        # delete (57)
        loaded = [(name, group.get_command(ctx, name)) for name in names]
    for name, command in loaded:
        assert command.help and "Example" in command.help, name
        # `kfin --help` lists the registry's summary without importing the command: it must be its first line
        assert command.help.splitlines()[0] == COMMANDS[name].summary, name
        for param in command.params:
            if param.param_type_name == "option":
                assert param.help, f"{name} {param.opts}"


def test_unknown_commands_and_kinds_suggest_the_nearest(fake_kubeconfig):
    typo = kfin("explian", "pvc", "x")
    assert typo.code == 2 and "did you mean explain?" in typo.stderr
    kind = kfin("explain", "pvcs", "x", "--kubeconfig", str(fake_kubeconfig))
    assert kind.code == 7 and "did you mean" in kind.stderr


def test_the_bash_script_completes_in_bash(tmp_path):
    """Source the committed script in a real bash and press Tab, as a user would."""
    import shutil

    bash = shutil.which("bash")
    if bash is None:
        import pytest
        pytest.skip("no bash on this machine")
    shim = tmp_path / "kfin"  # the `kfin` the script calls back: this checkout's
    shim.write_text(f"#!{sys.executable}\nfrom kfin.commands.app import main\nmain()\n")
    shim.chmod(0o755)
    script = (f"source {ROOT / 'completions' / 'kfin.bash'}; COMP_WORDS=(kfin st); COMP_CWORD=1; "
              "_kfin_completion kfin; echo \"${COMPREPLY[@]}\"")
    done = subprocess.run([bash, "--norc", "-c", script], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}"))
    assert done.stdout.split() == ["stuck"]


def test_a_partial_discovery_is_cached_with_its_failures_and_kinds_still_complete(fake, fake_kubeconfig):
    """Issue 29: a scan with one failing API group never cached its discovery: kinds did not complete, and
    every run rediscovered everything. Now the cache keeps what failed, and only that is asked again."""
    api = RawClient(fake.url, "admin-token")
    api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": True, "storage": True}]}})
    api.create("/apis/apiregistration.k8s.io/v1/apiservices", {"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {
        "group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
        "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443}}})
    scan = ("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert kfin(*scan).code == ExitCode.PARTIAL
    env = {"KUBECONFIG": str(fake_kubeconfig)}
    assert complete("kfin explain wid", env) == ["widgets.example.com"]
    fake.requests.clear()
    again = kfin(*scan)
    assert again.code == ExitCode.PARTIAL and "discovery of metrics.k8s.io/v1beta1 failed" in again.stderr
    aggregated = [r.status for r in fake.requests if r.path in ("/api", "/apis") and "apidiscovery" in r.accept]
    assert aggregated == [304, 304]  # the cache is current
    group_versions = [r.path for r in fake.requests if r.path.startswith("/apis/") and r.path.count("/") == 3]
    assert group_versions == ["/apis/metrics.k8s.io/v1beta1"]  # only what failed is asked again
    api.send("DELETE", "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io")
    assert kfin(*scan).code == ExitCode.OK  # the documents changed: discovered afresh, complete
    assert kfin(*scan).code == ExitCode.OK


def test_output_formats_and_graph_subjects_complete(fake, fake_kubeconfig):
    """Issue 29: `-o <TAB>` and `graph <TAB>` offered file names."""
    assert complete("kfin stuck -o ") == ["table", "wide", "json", "yaml", "name", "prometheus", "jsonpath=",
                                          "custom-columns="]
    assert complete("kfin graph namespace shop -o m") == ["mermaid"]
    assert complete("kfin explain -o y") == ["yaml"]
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "held"}})
    env = {"KUBECONFIG": str(fake_kubeconfig)}
    assert complete("kfin graph names", env) == ["namespace", "namespaces"]
    assert "configmaps" in complete("kfin graph config", env)
    assert complete("kfin graph cm he", env) == ["held"]
    assert complete("kfin graph cm/he", env) == ["cm/held"]
    assert complete("kfin graph namespace kube-p", env) == ["kube-public"]


def test_verdicts_complete_and_are_every_verdict_kfin_gives():
    """Issue 40: --verdict offers the verdicts (STALLED among them), in the case typed, after those given."""
    assert set(VERDICTS) == {v.value for v in Verdict} == set(VERDICT_STYLE)
    assert complete("kfin stuck --verdict ") == list(VERDICTS)
    assert complete("kfin stuck --verdict st") == ["stalled"]
    assert complete("kfin stuck -A --verdict WAITING,S") == ["WAITING,STALLED"]
