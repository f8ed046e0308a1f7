import os
from collections import Counter
from pathlib import Path

import pytest

from tests import properties
from tests.control_plane import EnvtestControlPlane, find_assets
from tests.fakeapi import FakeAPIServer
from tests.scenario import (
    ENV_KUBECONFIG,
    ScenarioCluster,
    _kubeconfig_access,
    backends,
    envtest_absent,
    finish_together,
)

# Seconds each real control plane of the session took to be ready, for the summary line: under pytest-xdist each
# worker starts its own and hands its time to the controller (pytest_sessionfinish, pytest_testnodedown).
ENVTEST_READY_IN: list[float] = []


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch, tmp_path_factory):
    """kfin never reads the developer's kubeconfig or discovery cache during tests, nor the width of the terminal
    pytest runs in: $COLUMNS and $LINES are a test's own (GNU readline, once imported, exports 80 and 24 into the
    environment that pytest-xdist's workers inherit, and kfin lays out for $COLUMNS in a pipe)."""
    monkeypatch.setenv("KFIN_CACHE_DIR", str(tmp_path_factory.mktemp("kfin-cache")))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def fake():
    """A fresh in-process fake API server (for tests of fake-only behaviour)."""
    server = FakeAPIServer().start()
    yield server
    server.stop()


@pytest.fixture
def fake_kubeconfig(fake, tmp_path):
    return fake.kubeconfig(tmp_path / "kubeconfig")


class SessionPlane:
    """The real control plane of this process's session: started by the first test that needs it, and stopped as
    soon as none of the tests left can (their files are handed out together, before the many short files that
    need none: pytest_collection_modifyitems), not at the session's end: the minutes of short files at the end of a
    run would otherwise find each worker's plane idling and its scenarios' cleanups still to wait for."""

    def __init__(self) -> None:
        self.plane: EnvtestControlPlane | None = None
        self.failed: BaseException | None = None  # a plane that could not start is not tried again by every test
        self.files: set[Path] = set()  # the files with a test that needs it (collected)

    def get(self) -> EnvtestControlPlane:
        if self.failed is not None:
            raise self.failed
        if self.plane is None:
            try:
                self.plane = started_plane()
            except BaseException as error:
                self.failed = error
                raise
            ENVTEST_READY_IN.append(self.plane.started_in)
        return self.plane

    def stop(self, check: bool = True) -> None:
        """The plane stopped, if one runs (stopped())."""
        plane, self.plane = self.plane, None
        if plane is not None:
            stopped(plane, "real", check)


def started_plane(**options) -> EnvtestControlPlane:
    """A real control plane from find_assets(), ready (`options`: EnvtestControlPlane's); RuntimeError saying why
    there is none."""
    assets, why = find_assets()
    if assets is None:
        raise RuntimeError(why)
    return EnvtestControlPlane(assets, **options).start()


def stopped(plane: EnvtestControlPlane, which: str, check: bool = True) -> None:
    """`plane` stopped once its scenarios' cleanups have finished; `check`: anything of theirs still there fails."""
    try:
        left = finish_together(plane.cleaning) if check else []
        assert not left, f"scenarios left behind on the {which} control plane: {left}"
    finally:
        plane.stop()


SESSION_PLANE = SessionPlane()


@pytest.fixture
def envtest():
    """The real control plane of the session, started at the first scenario that runs on it."""
    return SESSION_PLANE.get()


def _needs_session_plane(item: pytest.Item) -> bool:
    """A test on the session's real control plane: the `envtest` parameter of `cluster`, or the fixture itself."""
    callspec = getattr(item, "callspec", None)
    return "envtest" in getattr(item, "fixturenames", ()) or bool(callspec and callspec.params.get("cluster") == "envtest")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """The session's plane stops after its last test in this process: a failure of its cleanup is this test's."""
    yield
    if nextitem is None or nextitem.path not in SESSION_PLANE.files:
        SESSION_PLANE.stop()


def pytest_sessionfinish(session):
    """A run cut short (Ctrl-C, -x) leaves no control plane running. A pytest-xdist worker hands the controller how
    long its real control plane took to be ready."""
    SESSION_PLANE.stop(check=False)
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["envtest_ready_in"] = list(ENVTEST_READY_IN)


# Alpha features of v1.36 some scenarios need (tests/scenarios/test_alpha_protections.py), off by default on
# clusters and on the session's control plane: PodGroups (scheduling.k8s.io/v1alpha2, their podgroup-protection
# finalizer) and the claims' Unused condition. The `gated_cluster` fixture runs those scenarios on a fake and a real
# control plane with them enabled, started for the module that asks and stopped after it.
ALPHA_GATES = ("GenericWorkload", "PersistentVolumeClaimUnusedSinceTime")
ALPHA_APIS = ("scheduling.k8s.io/v1alpha2",)


@pytest.fixture(scope="module")
def envtest_gated():
    """A real control plane of its own with ALPHA_GATES and ALPHA_APIS, for one module's scenarios."""
    plane = started_plane(feature_gates=ALPHA_GATES, runtime_config=ALPHA_APIS)
    try:
        yield plane
    except BaseException:
        plane.stop()
        raise
    stopped(plane, "gated")


@pytest.fixture(params=backends())
def cluster(request, tmp_path):
    """A scenario cluster: tests/fakeapi, and also KFIN_TEST_KUBECONFIG's or KUBEBUILDER_ASSETS' when given."""
    yield from _scenario(request, tmp_path, "envtest")


@pytest.fixture(params=backends())
def gated_cluster(request, tmp_path):
    """A scenario cluster with ALPHA_GATES: the fake with them, and a real control plane started with them (a
    cluster behind KFIN_TEST_KUBECONFIG is not: its scenarios are skipped there)."""
    if request.param == "kubeconfig":
        pytest.skip(f"needs the alpha features {', '.join(ALPHA_GATES)}, which a given cluster may not have")
    yield from _scenario(request, tmp_path, "envtest_gated", ALPHA_GATES)


def _scenario(request, tmp_path, plane_fixture: str, gates: tuple[str, ...] = ()):
    backend = request.param
    real_only = request.node.get_closest_marker("real_only")
    if real_only and backend == "fakeapi":
        pytest.skip(f"the real tier only: {real_only.args[0]}")
    server = None
    if backend == "fakeapi":
        server = FakeAPIServer(feature_gates=gates).start()
        scenario = ScenarioCluster(backend, server.url, "admin-token", tmp_path, fake=server)
    elif backend == "kubeconfig":
        url, token, tls = _kubeconfig_access(Path(os.environ[ENV_KUBECONFIG]))
        scenario = ScenarioCluster(backend, url, token, tmp_path, tls=tls)
    else:
        plane = request.getfixturevalue(plane_fixture)
        scenario = ScenarioCluster(backend, plane.server, plane.ADMIN_TOKEN, tmp_path, tls={"ca_file": plane.ca_file},
                                   has_controllers=plane.has_controller_manager)
    if request.node.get_closest_marker("controllers") and not scenario.has_controllers:
        pytest.skip("needs kube-controller-manager (not in KUBEBUILDER_ASSETS)")
    properties.ACTIVE.append(scenario)
    try:
        yield scenario
    finally:
        properties.ACTIVE.remove(scenario)
        scenario.cleanup()
        if backend == "envtest":  # a control plane of our own: its namespaces go while the next scenarios run
            plane.cleaning.append(scenario)
        else:  # somebody's cluster: nothing of ours is left when the scenario ends
            scenario.finish()
        if server:
            server.stop()


def pytest_configure(config):
    config.addinivalue_line("markers", "controllers: the scenario needs kube-controller-manager's controllers")
    config.addinivalue_line("markers", "fake_only(why): a scenario that runs on tests/fakeapi only, and why a real "
                                       "control plane cannot be made to show it")
    config.addinivalue_line("markers", "real_only(why): a scenario that runs on a real control plane only, and why "
                                       "tests/fakeapi cannot serve it faithfully")


# The files that take longest, handed out first, and the many short ones last, to even out the workers' ends:
# pytest-xdist hands whole files to workers (--dist loadfile) in collection order, given --no-loadscope-reorder
# (pyproject.toml's addopts); by default it hands out the files with the most tests first, which put these few-test,
# long files last, each the run's tail while the other workers idled. The executable's build (PyInstaller), the
# benchmarks' smoke runs, the nested run behind a kubeconfig and a fresh machine's install are a minute or more
# each; the scenarios wait on a real control plane.
LONGEST_FIRST = ("tests/project/test_executable.py", "tests/project/test_bench.py", "tests/harness/test_harness.py",
                 "tests/project/test_fresh_machine.py", "tests/scenarios/")


def pytest_collection_modifyitems(items):
    """The longest files first, in the same order in every worker (a stable sort on their paths alone); a file
    elsewhere with a test on the session's real control plane goes with the scenarios, so that no worker starts one
    again for it after its own has stopped."""
    SESSION_PLANE.files = {item.path for item in items if _needs_session_plane(item)}
    scenarios = LONGEST_FIRST.index("tests/scenarios/")

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        first = next((i for i, start in enumerate(LONGEST_FIRST) if path.startswith(start)), len(LONGEST_FIRST))
        return min(first, scenarios) if item.path in SESSION_PLANE.files else first

    items.sort(key=rank)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: called on the controller as each worker ends
def pytest_testnodedown(node, error):
    ENVTEST_READY_IN.extend(getattr(node, "workeroutput", {}).get("envtest_ready_in", ()))


def pytest_terminal_summary(terminalreporter):
    """One line on the real control plane tier: what its scenarios gave and how long it took to start, or why
    it did not run."""
    absent = envtest_absent()
    if absent:
        terminalreporter.write_line(f"real control plane tier (envtest) skipped: {absent}")
        return
    outcomes: Counter = Counter()  # a test's call, or the setup or teardown that failed or skipped it
    for key, reports in terminalreporter.stats.items():
        for report in reports:
            when, outcome = getattr(report, "when", ""), getattr(report, "outcome", "")
            if "[envtest" in getattr(report, "nodeid", "") and (when == "call" or outcome in ("failed", "skipped")):
                outcomes[key] += 1
    if ENVTEST_READY_IN:
        counts = ", ".join(f"{n} {key}" for key, n in sorted(outcomes.items()))
        fastest, slowest = min(ENVTEST_READY_IN), max(ENVTEST_READY_IN)
        ready = (f"ready in {slowest:.1f} s" if len(ENVTEST_READY_IN) == 1 else
                 f"{len(ENVTEST_READY_IN)} control planes, one per worker, ready in {fastest:.1f} to {slowest:.1f} s")
        terminalreporter.write_line(f"real control plane tier (envtest): {counts}; {ready}")
