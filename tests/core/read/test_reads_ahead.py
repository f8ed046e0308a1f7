"""What explaining the stuck objects reads starts while the scan still lists (kfin.core.read.reads_ahead, issue 47): a scan's
wall is its longest list, and explaining waited for it before it read RBAC and the rest. The test holds the
scan's Events list at a barrier that opens only when a read of the explanations is in flight beside it: read
after the scan, as before, it breaks. Nothing is timed."""

import threading

from kfin.api import scan as scan_module
from kfin.api.target import Target
from kfin.core.read import reader
from kfin.core.read.scope import Scope
from kfin.core.explain.stuck import find_all
from tests.api.test_scale import populated  # noqa: F401 (a fixture)

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def test_what_explanations_read_goes_out_while_the_scan_still_lists(populated, fake, fake_kubeconfig, monkeypatch):  # noqa: F811
    barrier = threading.Barrier(2, timeout=10)
    listing, reading = scan_module.read_objects, reader.read_objects

    def listed(kube, r, namespace, *args, **kwargs):  # the scan's lists
        if r.resource == "events":
            barrier.wait()
        return listing(kube, r, namespace, *args, **kwargs)

    def read(kube, r, namespace, *args, **kwargs):  # what explanations will read, started ahead
        if r.resource == "clusterroles":
            barrier.wait()
        return reading(kube, r, namespace, *args, **kwargs)

    monkeypatch.setattr(scan_module, "read_objects", listed)
    monkeypatch.setattr(reader, "read_objects", read)
    fake.requests.clear()
    rows, _ = find_all(Scope(Target(str(fake_kubeconfig)), all_namespaces=True))
    assert {(r.obj.namespace, r.obj.name) for r in rows} == {("active", "held"), ("active", "owner"), ("", "leaving")}
    # the custom finalizer's explanation read RBAC whole, once: what was read ahead is not asked for again
    whole = [r.path for r in fake.requests if r.path.startswith(RBAC) and not r.metadata_only]
    assert sorted(whole) == sorted(
        [f"{RBAC}/clusterroles", f"{RBAC}/clusterrolebindings"]
        + [f"{RBAC}/namespaces/{ns}/{kind}" for ns in ("active",) for kind in ("roles", "rolebindings")]
    )
    assert all("example.com/hold" in r.blocker for r in rows if r.obj.name in ("held", "owner"))
