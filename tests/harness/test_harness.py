"""The scenario harness switches between tests/fakeapi, KFIN_TEST_KUBECONFIG and KUBEBUILDER_ASSETS."""

import contextlib
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest, control_plane
from tests.control_plane import EnvtestControlPlane
from tests.fakeapi.rawclient import RawClient
from tests.scenario import backends, envtest_absent
from tests.paths import PROJECT

ROOT = PROJECT


def test_backends_follow_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("KFIN_TEST_KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.delenv("KFIN_TEST_ENVTEST", raising=False)
    monkeypatch.setattr(control_plane, "SHARED_CONTROL_PLANE", tmp_path / "no-shared")
    monkeypatch.setattr("tests.scenario.SHARED_CONTROL_PLANE", tmp_path / "no-shared")
    assert backends() == ["fakeapi"]
    assert envtest_absent() == f"{tmp_path / 'no-shared'} not found and KUBEBUILDER_ASSETS not set"
    monkeypatch.setenv("KFIN_TEST_KUBECONFIG", "/some/kubeconfig")
    assert backends() == ["fakeapi", "kubeconfig"]
    monkeypatch.setenv("KUBEBUILDER_ASSETS", "/some/bin")
    assert backends() == ["fakeapi", "kubeconfig", "envtest"]
    monkeypatch.setenv("KFIN_TEST_ENVTEST", "0")
    assert backends() == ["fakeapi", "kubeconfig"]


def test_the_shared_control_plane_is_the_default_real_tier(monkeypatch, tmp_path):
    """Without KUBEBUILDER_ASSETS, ../shared/control-plane beside the checkout is the real tier (what .ci/run
    relies on); its unpack.sh runs at the first scenario, and a failure says why."""
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.delenv("KFIN_TEST_ENVTEST", raising=False)
    shared = tmp_path / "control-plane"
    shared.mkdir()
    (shared / "unpack.sh").write_text(f"echo {tmp_path / 'bin'}\n")
    monkeypatch.setattr(control_plane, "SHARED_CONTROL_PLANE", shared)
    monkeypatch.setattr("tests.scenario.SHARED_CONTROL_PLANE", shared)
    assert backends() == ["fakeapi", "envtest"]
    assert control_plane.find_assets() == (tmp_path / "bin", "")
    (shared / "unpack.sh").write_text("echo 'unpack.sh: no xz' >&2; exit 1\n")
    assert control_plane.find_assets() == (None, f"{shared / 'unpack.sh'} failed: unpack.sh: no xz")


def test_envtest_without_binaries_says_what_is_missing(tmp_path):
    with pytest.raises(RuntimeError, match="has no etcd"):
        EnvtestControlPlane(tmp_path).start()


def test_scenarios_run_on_a_cluster_behind_a_kubeconfig_and_clean_up(tmp_path):
    """A fake API server in another process stands in for a real cluster reached through a kubeconfig."""
    kubeconfig = tmp_path / "real-kubeconfig"
    server = subprocess.Popen([sys.executable, "-m", "tests.fakeapi", "--kubeconfig", str(kubeconfig)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        env = {k: v for k, v in os.environ.items() if k != "KUBEBUILDER_ASSETS"}
        env["KFIN_TEST_KUBECONFIG"] = str(kubeconfig)
        env["KFIN_TEST_ENVTEST"] = "0"
        # -n 0: one process, not the addopts' four workers of its own beside the suite's. test_stuck's scenarios on
        # the kubeconfig's cluster alone: the suite runs them on the fake already.
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-rA",
                               "tests/scenarios/test_cluster_rules.py", "tests/scenarios/test_stuck.py",
                               "-k", "test_cluster_rules or kubeconfig"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:]
        assert "[kubeconfig]" in done.stdout and "[fakeapi]" in done.stdout
        stuck = [line for line in done.stdout.splitlines() if line.startswith("PASSED tests/scenarios/test_stuck.py::")]
        assert stuck and all(line.endswith("[kubeconfig]") for line in stuck), stuck
        assert "PASSED tests/scenarios/test_cluster_rules.py::test_kfin_talks_to_the_scenario_cluster[kubeconfig]" \
            in done.stdout
        namespaces = RawClient(url, "admin-token").get("/api/v1/namespaces")["items"]
        left = [n["metadata"]["name"] for n in namespaces if n["metadata"]["name"].startswith("kfin-")]
        assert left == [], f"scenarios left namespaces behind: {left}"
        roles = RawClient(url, "admin-token").get("/apis/rbac.authorization.k8s.io/v1/clusterroles")["items"]
        assert not [r for r in roles if r["metadata"]["name"].startswith("reader-")]
    finally:
        server.terminate()
        server.wait(timeout=10)


def _marks(nodes: list, name: str) -> list:
    """The calls `pytest.mark.<name>(...)` among `nodes` (decorators, or a module's `pytestmark` value)."""
    import ast

    return [n for n in nodes if isinstance(n, ast.Call) and ast.unparse(n.func) == f"pytest.mark.{name}"]


def test_every_scenario_runs_on_both_tiers_or_says_why_not():
    """A test in tests/scenarios that needs a cluster takes the `cluster` fixture (tests/fakeapi, and the real
    control plane), or takes the fake and is marked fake_only with the reason a real one cannot be made to show it,
    or takes `cluster` and is marked real_only (itself, one of its parameters, or its module's `pytestmark`) with the
    reason the fake cannot serve it (docs/development.md: the tiers). Tests of a file (a snapshot) need neither."""
    import ast

    fake_only, real_only = {}, {}
    for path in sorted((ROOT / "tests" / "scenarios").glob("test_*.py")):
        module = ast.parse(path.read_text())
        module_marks = [mark for node in module.body if isinstance(node, ast.Assign)
                        and [ast.unparse(t) for t in node.targets] == ["pytestmark"]
                        for mark in _marks(list(ast.walk(node.value)), "real_only")]
        for node in module.body:
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
                continue
            arguments = {a.arg for a in node.args.args}
            real = module_marks + _marks([n for d in node.decorator_list for n in ast.walk(d)], "real_only")
            if real:
                assert all(mark.args for mark in real), f"{path.name}::{node.name} is real_only and does not say why"
                assert "cluster" in arguments, f"{path.name}::{node.name} is real_only but does not take `cluster`"
                real_only[(path.name, node.name)] = ast.unparse(real[0].args[0])
            if not arguments & {"fake", "fake_kubeconfig"}:
                continue
            reasons = [d.args[0] for d in _marks(node.decorator_list, "fake_only") if d.args]
            assert reasons, f"{path.name}::{node.name} takes the fake, not `cluster`, and does not say why (fake_only)"
            fake_only[node.name] = ast.unparse(reasons[0])
    assert len(fake_only) == 4, fake_only  # docs/development.md's count of fake-only scenarios
    # and of real-only ones: two of the kopf operator's, and the Helm chart's with real Helm (its rendering
    # compared with the kustomizations', its releases), however many they are
    by_file = Counter(file for file, _ in real_only)
    assert by_file.pop("test_kopf_operator.py") == 2, real_only
    assert set(by_file) == {"test_chart_render.py", "test_chart_release.py"}, real_only


def test_a_real_only_scenario_is_skipped_on_the_fake_with_its_reason(tmp_path):
    """real_only keeps a scenario off tests/fakeapi, and says why in the skip."""
    scenario = tmp_path / "test_one_tier.py"
    scenario.write_text("import pytest\n\n"
                        "@pytest.mark.real_only('the fake cannot')\n"
                        "def test_it(cluster):\n"
                        "    assert not cluster.is_fake\n")
    env = {k: v for k, v in os.environ.items() if k not in ("KUBEBUILDER_ASSETS", "KFIN_TEST_KUBECONFIG")}
    env["KFIN_TEST_ENVTEST"] = "0"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-rs", "-c",
                           str(ROOT / "pyproject.toml"), "-p", "tests.conftest", str(scenario)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    [skipped] = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skipped.endswith("test_one_tier.py:3: the real tier only: the fake cannot"), done.stdout[-2000:]


def _item(path: str, cluster: str | None = None, fixtures: tuple[str, ...] = ()) -> SimpleNamespace:
    """What tests/conftest.py reads of a collected test: its file, its `cluster` parameter, its fixtures."""
    return SimpleNamespace(path=ROOT / path, nodeid=f"{path}::test", fixturenames=fixtures,
                           callspec=SimpleNamespace(params={"cluster": cluster} if cluster else {}))


def test_files_on_the_sessions_control_plane_are_handed_out_together_after_the_longest(monkeypatch):
    """A file outside tests/scenarios with a test on the session's real control plane goes with the scenarios, so
    that a worker whose plane has stopped is never handed one; the many short files come last."""
    monkeypatch.setattr(conftest, "SESSION_PLANE", conftest.SessionPlane())
    items = [_item("tests/api/test_short.py"), _item("tests/api/test_real_pages.py", fixtures=("envtest",)),
             _item("tests/scenarios/test_a.py", "fakeapi"), _item("tests/scenarios/test_a.py", "envtest"),
             _item("tests/project/test_executable.py"), _item("tests/scenarios/test_gated.py")]
    conftest.pytest_collection_modifyitems(items)
    assert [item.nodeid.split("::")[0] for item in items] == [
        "tests/project/test_executable.py", "tests/api/test_real_pages.py", "tests/scenarios/test_a.py",
        "tests/scenarios/test_a.py", "tests/scenarios/test_gated.py", "tests/api/test_short.py"]
    assert conftest.SESSION_PLANE.files == {ROOT / "tests/api/test_real_pages.py", ROOT / "tests/scenarios/test_a.py"}


def test_the_sessions_control_plane_stops_after_its_last_file_and_not_before(monkeypatch):
    """It stops once the next test is in a file that needs none (or there is none), after its scenarios' cleanups,
    and not while the next test's file may still need it."""
    stopped = []

    class Plane:  # an EnvtestControlPlane whose scenarios have all gone
        cleaning: list = []

        def stop(self) -> None:
            stopped.append(True)

    session = conftest.SessionPlane()
    session.files, session.plane = {ROOT / "tests/scenarios/test_a.py", ROOT / "tests/scenarios/test_b.py"}, Plane()
    monkeypatch.setattr(conftest, "SESSION_PLANE", session)

    def tear_down(nextitem) -> None:
        hook = conftest.pytest_runtest_teardown(_item("tests/scenarios/test_a.py"), nextitem)
        next(hook)
        with contextlib.suppress(StopIteration):
            hook.send(None)

    tear_down(_item("tests/scenarios/test_a.py"))
    tear_down(_item("tests/scenarios/test_b.py"))
    assert not stopped and session.plane is not None
    tear_down(_item("tests/api/test_short.py"))
    assert stopped == [True] and session.plane is None
    session.plane = Plane()
    tear_down(None)  # the session's last test
    assert stopped == [True, True]
