"""Facts (kfin/core/read/facts.py): what an explanation may ask of a snapshot, and None where it cannot know."""

from kfin.core.read.facts import ClusterFacts, Facts
from tests.values import facts, obj, pod


def test_objects_by_type_and_namespace_and_one_by_name():
    a, b = obj("cm", "a", "shop"), obj("cm", "b", "other")
    known = facts(a, b)
    assert [o.name for o in known.objects("", "configmaps", "shop")] == ["a"]
    assert sorted(o.name for o in known.objects("", "configmaps")) == ["a", "b"]
    assert known.find("", "configmaps", "other", "b") is b
    assert known.find("", "configmaps", "shop", "b") is None


def test_what_a_snapshot_does_not_hold_is_unknown_not_empty():
    known = facts(obj("cm", "a", "shop"), unlisted=("pods",))
    assert known.objects("", "pods", "shop") is None
    assert known.objects("", "secrets", "shop") == []  # listed, and there are none
    assert known.listed("shop") is False


def test_blocking_dependents_are_those_with_block_owner_deletion():
    owner = obj("deploy.apps", "web", "shop")
    blocking = obj("rs.apps", "web-1", "shop", owners=(owner,))
    loose = obj("cm", "web-config", "shop", owners=(owner,), block_owner=False)
    known = facts(owner, blocking, loose)
    assert known.blocking_dependents(owner.uid) == [blocking]
    assert {o.name for o in known.dependents(owner.uid)} == {"web-1", "web-config"}


def test_claim_users_are_the_scheduled_pods_that_mount_it_in_any_phase():
    claim = obj("pvc", "data", "shop")
    done = pod("job-1", "shop", claims=("data",), phase="Succeeded")
    unscheduled = pod("job-2", "shop", claims=("data",), node_name=None, phase="Pending")
    elsewhere = pod("web-1", "shop", claims=("other",))
    users = facts(claim, done, unscheduled, elsewhere).claim_users(claim)
    assert [p.name for p in users] == ["job-1"]


def test_facts_are_cluster_facts():
    known: ClusterFacts = facts()  # the protocol causes are written against
    assert isinstance(known, Facts) and known.kube is None and known.warnings_about(obj("cm", "a", "x")) is None
