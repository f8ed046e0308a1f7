"""Ghosts: objects left in a namespace that was forced through /finalize (kfin/core/explain/causes/ghosts.py)."""

from kfin.core.explain.causes import Verdict, explain_object
from kfin.core.explain.causes.ghosts import missing_namespace
from tests.values import facts, obj


def test_an_object_whose_namespace_is_gone_is_blocked_until_the_namespace_exists_again():
    left = obj("cm", "settings", "gone", finalizers=("example.com/keep",))
    known = facts(left, with_namespaces=False)
    assert missing_namespace(left, known) == "gone"
    [finding] = explain_object(left, known).findings
    assert finding.verdict == Verdict.BLOCKED and finding.family == "ghost"
    assert "kubectl create namespace gone" in finding.fix


def test_an_object_in_a_namespace_that_exists_is_no_ghost():
    cm = obj("cm", "settings", "shop", finalizers=("example.com/keep",))
    known = facts(cm)
    assert missing_namespace(cm, known) is None
    assert all(f.verdict != Verdict.BLOCKED for f in explain_object(cm, known).findings)


def test_when_namespaces_cannot_be_read_nothing_is_called_a_ghost():
    cm = obj("cm", "settings", "shop", finalizers=("example.com/keep",))
    assert missing_namespace(cm, facts(cm, with_namespaces=False, unlisted=("namespaces",))) is None
