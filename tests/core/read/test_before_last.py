"""Stuck objects are explained while a scan's last list still pages (kfin.core.read.before_last, issue 47), and the answers are
those of a scan that waited for it: when that list adds nothing the explanations asked of, they stand (and a stuck
object it adds is explained with the others); when it adds a dependent, a namespace's content or a failure, they
are worked out again. Each test holds one list
until the early explanations are done (a wait that gives up after 10 s: the test then fails), and compares kfin
stuck's rows and failures with those of a scan that explained only at its end. Nothing is timed."""

import threading
from functools import partial

import pytest

from kfin.api import scan as scan_module
from kfin.api.scan import OwnerEdges
from kfin.api.target import Target
from kfin.core.read import before_last as early
from kfin.core.explain.causes import reads_for
from kfin.core.read.before_last import BeforeLast
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.core.read.contexts import gather
from kfin.core.explain.stuck import EARLY_ROWS, find_all, stuck_in
from kfin.model import Inventory, KubeObject, ResourceType
from tests.fakeapi.rawclient import RawClient
from tests.fakeapi.server import Fault
from tests.api.test_scale import _configmap, populated  # noqa: F401 (a fixture)


def _answers(rows, sources):
    """What kfin stuck -o json reports of them, but for how long each has been stuck (seconds apart)."""
    items = [{k: v for k, v in r.to_dict().items() if k != "terminatingSeconds"} for r in rows]
    return items, sorted((f.what, f.target, f.reason) for s in sources for f in s.inventory.failures)


def _waited(scope):
    """The answers of a scan explained once every list has ended."""
    sources = gather(scope, lean=True, ahead=partial(reads_for, catalog=scope.catalog))
    return _answers(stuck_in(sources), sources)


def _compared(scope, last_held, resource, before=lambda: None):
    """kfin stuck's scan with the list of `resource` held until the early explanations are done: its rows and
    sources, and what happened (last_held), once its answers are checked against those of a scan that waited.
    `before`: called between the two scans."""
    waited = _waited(scope)
    before()
    seen = last_held(resource)
    rows, sources = find_all(scope)
    assert seen["held"] and seen["last"] == resource  # explained while that list was held, the last one
    assert _answers(rows, sources) == waited
    return rows, sources, seen


@pytest.fixture
def last_held(monkeypatch):
    """hold(resource): that type's list waits until the explanations begun before it ended are done; what
    happened is returned: whether they were (`explained`), and the Facts explained early (`facts`)."""
    seen = {"explained": threading.Event(), "facts": None}
    listing, start = scan_module.read_objects, early.BeforeLast.start

    def begun(self, inventory, last):
        start(self, inventory, last)
        seen["facts"] = self.facts
        seen["last"] = last.resource
        seen["explained"].set()

    def hold(resource):
        def listed(kube, r, namespace, *args, **kwargs):
            if r.resource == resource:
                seen["held"] = seen["explained"].wait(timeout=10)
            return listing(kube, r, namespace, *args, **kwargs)

        monkeypatch.setattr(scan_module, "read_objects", listed)
        monkeypatch.setattr(early.BeforeLast, "start", begun)
        return seen

    return hold


def test_what_the_last_list_adds_nothing_to_keeps_the_early_answers(populated, fake, fake_kubeconfig, last_held):  # noqa: F811
    scope = Scope(Target(str(fake_kubeconfig)), all_namespaces=True)
    rows, sources, seen = _compared(scope, last_held, "events", before=fake.requests.clear)
    # the facts explained early are the scan's: their rows were taken (not found again), nothing read twice
    assert sources[0] is seen["facts"] and not sources[0].kept(EARLY_ROWS)
    whole = [(r.path, r.query.get("labelSelector")) for r in fake.requests if not r.metadata_only and r.verb == "list"]
    assert len(whole) == len(set(whole))


def test_a_stuck_object_the_last_list_adds_is_explained_with_the_others(
    populated, fake, fake_kubeconfig, last_held  # noqa: F811
):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/active/secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "late", "namespace": "active", "finalizers": ["example.com/hold"]}})
    api.delete("/api/v1/namespaces/active/secrets/late")
    scope = Scope(Target(str(fake_kubeconfig)), all_namespaces=True)
    try:
        rows, sources, seen = _compared(scope, last_held, "secrets")
        assert sources[0] is seen["facts"]  # what was worked out before stands
        late = next(r for r in rows if r.obj.ref == "Secret/active/late")
        assert "example.com/hold" in late.blocker
    finally:
        api.json_patch("/api/v1/namespaces/active/secrets/late", [{"op": "remove", "path": "/metadata/finalizers"}])


@pytest.mark.parametrize(
    "resource",
    [
        "configmaps",  # stuck ones, the dependents of a stuck owner, and a Terminating namespace's content
        "serviceaccounts",  # a Terminating namespace's content only (its default ServiceAccount)
    ],
)
def test_what_the_last_list_adds_to_the_answers_is_explained_again(
    populated, fake, fake_kubeconfig, last_held, resource  # noqa: F811
):
    scope = Scope(Target(str(fake_kubeconfig)), all_namespaces=True)
    rows, sources, seen = _compared(scope, last_held, resource)
    assert sources[0] is not seen["facts"]
    namespace = next(r for r in rows if r.obj.ref == "Namespace/leaving")
    assert namespace.blocker.startswith("namespace: 4 objects remain")  # left, plain, kube-root-ca.crt, default SA
    if resource == "configmaps":
        assert {r.obj.ref for r in rows} == {"ConfigMap/active/held", "ConfigMap/active/owner", "Namespace/leaving"}


def test_a_last_list_that_fails_is_reported_as_a_scan_that_waited_reports_it(
    populated, fake, fake_kubeconfig, last_held  # noqa: F811
):
    scope = Scope(Target(str(fake_kubeconfig)), all_namespaces=True)
    fake.faults.append(Fault(path=r"^/api/v1/serviceaccounts$", status=500))
    rows, sources, seen = _compared(scope, last_held, "serviceaccounts")
    assert sources[0] is not seen["facts"]
    assert any(f.target == "serviceaccounts" for f in sources[0].inventory.failures)


def test_a_dependent_the_last_list_adds_is_counted_where_the_owner_waits_for_it(
    populated, fake, fake_kubeconfig, last_held  # noqa: F811
):
    api = RawClient(fake.url, "admin-token")
    owner = api.create("/api/v1/namespaces/active/configmaps", _configmap("foreground", "active"))
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "foreground", "uid": owner["metadata"]["uid"],
                 "blockOwnerDeletion": True}
    api.create("/api/v1/namespaces/active/secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "waited-for", "namespace": "active", "ownerReferences": [reference]}})
    api.delete("/api/v1/namespaces/active/configmaps/foreground", propagation="Foreground")
    scope = Scope(Target(str(fake_kubeconfig)), all_namespaces=True)
    rows, sources, seen = _compared(scope, last_held, "secrets")
    assert sources[0] is not seen["facts"]
    row = next(r for r in rows if r.obj.name == "foreground")
    assert "Secret/active/waited-for" in str(row.to_dict())


def _inventory(*objects):
    return Inventory([CONFIGMAPS, SECRETS], list(objects))


CONFIGMAPS = ResourceType("", "v1", "configmaps", "ConfigMap", True)
SECRETS = ResourceType("", "v1", "secrets", "Secret", True)


def _object(rtype, name, namespace="team", **meta):
    return KubeObject(rtype, {"apiVersion": "v1", "kind": rtype.kind,
                              "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", **meta}})


@pytest.mark.parametrize(
    ("asked", "added", "kept"),
    [
        (lambda facts: None, _object(SECRETS, "plain"), True),
        (lambda facts: facts.objects("", "secrets", "elsewhere"), _object(SECRETS, "plain"), False),  # its type
        (lambda facts: facts.objects("", "configmaps", "team"), _object(SECRETS, "plain"), True),
        (lambda facts: facts.everything("team"), _object(SECRETS, "plain"), False),  # its namespace's content
        (lambda facts: facts.everything("elsewhere"), _object(SECRETS, "plain"), True),
        (lambda facts: facts.everything(None), _object(SECRETS, "plain"), False),
        (lambda facts: facts.dependents("uid-held"), _object(SECRETS, "child", ownerReferences=[
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "held", "uid": "uid-held"}]), False),  # its owner
        (lambda facts: facts.blocking_dependents("uid-other"), _object(SECRETS, "child", ownerReferences=[
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "held", "uid": "uid-held"}]), True),
        # stuck itself: explained once the list has ended, with the others
        (lambda facts: None, _object(SECRETS, "leaving", deletionTimestamp="2026-01-01T00:00:00Z"), True),
        (lambda facts: None, _object(SECRETS, "held", finalizers=["example.com/hold"]), True),
    ],
    ids=["nothing asked", "its type", "another type", "its namespace", "another namespace", "the cluster",
         "its owner", "another owner", "being deleted", "with finalizers"],
)
def test_the_early_facts_stand_only_when_nothing_the_last_list_added_was_asked_of(asked, added, kept):
    held = _object(CONFIGMAPS, "held", finalizers=["example.com/hold"], deletionTimestamp="2026-01-01T00:00:00Z")
    before = BeforeLast(Facts, asked)
    before.start(_inventory(held), SECRETS)
    settled = before.settle(_inventory(held, added))
    assert (settled is before.facts) is kept
    assert {o.name for o in settled.inventory.objects} == {"held", added.name}
    assert settled.objects("", "secrets", "team") == [added]


def test_owner_edges_tell_whether_rows_added_since_name_an_owner():
    """What lets a scan keep the dependents it found before its last list ended (kfin.api.inventory.live): the
    rows that list added name none of them as owner."""
    edges = OwnerEdges()
    for i in range(1500):
        edges.add(SECRETS, "ns", f"s-{i}", f"uid-s{i}", [f"uid-{i % 7}"], 1)
    edges.dependents_of({"uid-1"})  # as the scan asks before its last list ends: what was added is closed
    mark = len(edges.chunks)
    assert not edges.names_owner_since(mark, {"uid-1", "uid-s1"})
    edges.add(SECRETS, "ns", "late", "uid-late", ["uid-9"], 0)
    assert not edges.names_owner_since(mark, {"uid-1", "uid-s1"})
    edges.add(SECRETS, "ns", "later", "uid-later", ["uid-8", "uid-s1"], 0)  # several owners, the second asked
    assert edges.names_owner_since(mark, {"uid-1", "uid-s1"})
    assert not edges.names_owner_since(mark, {"uid-2"}) and edges.names_owner_since(0, {"uid-2"})
