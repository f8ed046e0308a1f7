import os
from pathlib import Path

import pytest

from tests.fakeapi import FakeAPIServer
from tests.scenario import ENV_ASSETS, ENV_KUBECONFIG, EnvtestControlPlane, ScenarioCluster, _kubeconfig_access, backends


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch, tmp_path_factory):
    """kfin never reads the developer's kubeconfig or discovery cache during tests."""
    monkeypatch.setenv("KFIN_CACHE_DIR", str(tmp_path_factory.mktemp("kfin-cache")))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)


@pytest.fixture
def fake():
    """A fresh in-process fake API server (for tests of fake-only behaviour)."""
    server = FakeAPIServer().start()
    yield server
    server.stop()


@pytest.fixture
def fake_kubeconfig(fake, tmp_path):
    return fake.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture(scope="session")
def envtest():
    plane = EnvtestControlPlane(Path(os.environ[ENV_ASSETS])).start()
    yield plane
    plane.stop()


@pytest.fixture(params=backends())
def cluster(request, tmp_path):
    """A scenario cluster: tests/fakeapi, and also KFIN_TEST_KUBECONFIG's or KUBEBUILDER_ASSETS' when given."""
    backend = request.param
    server = None
    if backend == "fakeapi":
        server = FakeAPIServer().start()
        scenario = ScenarioCluster(backend, server.url, "admin-token", tmp_path, fake=server)
    elif backend == "kubeconfig":
        url, token, tls = _kubeconfig_access(Path(os.environ[ENV_KUBECONFIG]))
        scenario = ScenarioCluster(backend, url, token, tmp_path, tls=tls)
    else:
        plane = request.getfixturevalue("envtest")
        scenario = ScenarioCluster(backend, plane.server, plane.ADMIN_TOKEN, tmp_path, tls={"insecure": True},
                                   has_controllers=plane.has_controller_manager)
    if request.node.get_closest_marker("controllers") and not scenario.has_controllers:
        pytest.skip("needs kube-controller-manager (not in KUBEBUILDER_ASSETS)")
    try:
        yield scenario
    finally:
        scenario.cleanup()
        if server:
            server.stop()


def pytest_configure(config):
    config.addinivalue_line("markers", "controllers: the scenario needs kube-controller-manager's controllers")
