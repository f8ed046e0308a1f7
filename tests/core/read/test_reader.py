"""The reader and the questions (kfin.core.read.reader, kfin.core.read.facts): what the server answered survives a scan's
last list into the facts of the whole scan, what was worked out of the objects does not; each kind of answer
worked out is a cache of its own, known by its name (a fleet's facts cross a process boundary)."""

import pickle
from datetime import timedelta

from kfin.core.explain.causes.registry import EXPLANATIONS, explain_cached
from kfin.core.read.facts import Facts, Worked
from kfin.core.read.reader import Reader
from kfin.model import Answer, Write
from tests.values import facts, kind, obj

COUNTED: Worked[str, int] = Worked("objects counted, in a test")


def test_what_the_server_answered_survives_the_last_list_and_what_was_worked_out_does_not():
    held = obj("configmaps", "held", "team", finalizers=("example.com/hold",), deleting_for=timedelta(hours=1))
    before = facts(held)
    write = Write.patch(kind("configmaps"), "team", "held", [{"op": "remove", "path": "/metadata/finalizers/0"}])
    answer = Answer(200, "", "", None, {}, [])
    before.reader.answers.dry_runs[write] = answer
    before.remember(COUNTED, "team", lambda: 1)
    explain_cached(held, before)
    assert before.kept(COUNTED) and before.kept(EXPLANATIONS)

    after = before.succeeding(before.inventory)
    assert after.dry_run(write) == answer  # not sent again: the reader took it
    assert not after.kept(COUNTED) and not after.kept(EXPLANATIONS)  # worked out again from the whole scan
    assert after.remember(COUNTED, "team", lambda: 2) == 2


def test_what_was_worked_out_is_found_again_after_the_facts_crossed_a_process():
    held = obj("configmaps", "held", "team", finalizers=("example.com/hold",), deleting_for=timedelta(hours=1))
    known = facts(held)
    explained = explain_cached(held, known)
    back: Facts = pickle.loads(pickle.dumps(known))
    assert back.kept(EXPLANATIONS)  # the worker's explanation, not one worked out again
    again = next(o for o in back.inventory.objects if o.name == "held")
    assert back.kept(EXPLANATIONS)[("", "configmaps", "team", "held")].findings == explained.findings
    assert explain_cached(again, back) is back.kept(EXPLANATIONS)[("", "configmaps", "team", "held")]
    assert back.reader.kube is None and isinstance(back.reader, Reader)
