"""A cause is one module: registering it is all that stuck, explain and the blocking graph need."""

import json

import pytest

from kfin.core.explain.causes import registry as core
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin


@pytest.fixture
def lock_cause():
    """A cause defined here, as a new module of kfin/core/explain/causes would define it."""
    @core.explains("test-lock", core.Entry("locks.kfin.test/*", "an object until its lock is released",
                                           "the lock service"))
    def test_lock(ctx: core.Context) -> core.Finding:
        return ctx.finding("the lock service still holds its lock", core.Verdict.HOLDING,
                           fix="release the lock in the lock service", risk="the lock is lost",
                           summary="locked by the lock service",
                           links=[core.Link("lock", "the lock service holds it", actor="lock service",
                                            step=(core.Action("lockctl release", note="releases the lock"),))])
    yield
    core.EXPLAINERS.pop("test-lock")
    core.CATALOG[:] = [(entry, name) for entry, name in core.CATALOG if name != "test-lock"]


def test_a_cause_in_one_module_reaches_every_command(fake, fake_kubeconfig, lock_cause):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "held",
                                                                      "finalizers": ["locks.kfin.test/db"]}})
    api.delete("/api/v1/namespaces/default/configmaps/held")
    base = ("--kubeconfig", str(fake_kubeconfig))
    [item] = json.loads(kfin("stuck", "-A", "-o", "json", *base).stdout)["items"]
    assert item["families"] == ["test-lock"] and item["blocker"] == "test-lock: locked by the lock service"
    assert item["rootCauses"][0]["actor"] == "lock service"
    report = json.loads(kfin("explain", "cm", "held", "-n", "default", "-o", "json", *base).stdout)
    assert report["findings"][0]["protects"] == "an object until its lock is released"
    assert report["plan"]["steps"][0]["command"] == "lockctl release"
    assert report["plan"]["steps"][0]["note"] == "releases the lock"
    refused = kfin("remove", "cm", "held", "-n", "default", "--finalizer", "locks.kfin.test/db", "--confirm", *base)
    assert refused.code == 10 and "locked" not in refused.stdout and "HOLDING" in refused.stdout
