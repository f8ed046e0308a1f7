"""The removal saga (kfin/core/remove/apply.py), on a made-up cluster: each plan applied, what came of it recorded in
the audit log; a refused plan never sent; a write that fails recorded and the run going on; Ctrl-C during a write
recorded with what the read back found, and the run stopped there."""

import copy
import json
from datetime import timedelta

import pytest

from kfin.core.remove.apply import apply_plans, recreate_namespace
from kfin.core.explain.causes import explain_object
from kfin.core.remove.plan import plan
from kfin.errors import APIError
from kfin.model import MANAGERS
from tests.values import custom_type, facts, lease, obj, pod

DELETING = timedelta(hours=1)
WIDGETS = custom_type()
DENIED = 'admission webhook "deny.example.com" denied the request: not now'


class Cluster:
    """Stores objects by name and applies a JSON Patch's removals; `interrupt` names an object whose PATCH is
    applied, then Ctrl-C comes before its answer; `refuse` one whose PATCH the server refuses (403)."""

    context = "test-context"
    # a kubeconfig's server may carry a user and password; kfin names it without (Kube.shown)
    server, shown = "https://admin:hunter2@cluster.test", "https://<redacted>@cluster.test"

    def __init__(self, *objects, interrupt=None, refuse=None, race=None):
        self.stored = {o.name: copy.deepcopy(o.raw) for o in objects}
        self.interrupt, self.refuse = interrupt, refuse
        self.race = race  # (name, finalizer): another writer removes that finalizer just before kfin's first PATCH
        self.patched = []

    def whoami(self):
        return "alice"

    def create_namespace(self, name):
        return {"metadata": {"name": name, "uid": "u-1", "resourceVersion": "1"}}

    def bounded(self, _seconds):
        return self

    def read_object_or_none(self, _type, _namespace, name):
        return copy.deepcopy(self.stored.get(name))

    def patch_object(self, _type, _namespace, name, ops, dry_run=False):
        self.patched.append(name)
        if name == self.refuse:
            raise APIError(DENIED, 403, "Forbidden")
        if dry_run:  # the object as the write would leave it, stored nowhere
            answer = copy.deepcopy(self.stored[name])
            for op in ops:
                if op["op"] == "remove":
                    del answer["metadata"]["finalizers"][int(op["path"].rsplit("/", 1)[1])]
            return answer
        finalizers = self.stored[name]["metadata"]["finalizers"]
        if self.race and self.race[0] == name:
            finalizers.remove(self.race[1])
            self.race = None
        for op in ops:
            if op["op"] == "test" and op["path"] == "/metadata/finalizers" and op["value"] != finalizers:
                raise APIError("the test operation failed", 422, "Invalid")
            if op["op"] == "remove":
                del finalizers[int(op["path"].rsplit("/", 1)[1])]
        answer = self.stored[name]
        if not finalizers:  # its last finalizer gone, a deleted object goes, as the API server deletes it
            del self.stored[name]
        if name == self.interrupt:
            raise KeyboardInterrupt
        return answer


def widget(name, *finalizers):
    return obj(WIDGETS, name, "shop", finalizers=finalizers or ("example.com/cleanup",), deleting_for=DELETING)


def orphaned(o):
    """kfin remove's default plan: what kfin proved nothing else will remove."""
    return plan(o, explain_object(o, facts(o, extra_types=(WIDGETS,))).findings, None, force=False, allow_live=False)


def run(cluster, plans, log, *found, **options):
    """The plans applied; `found`: what a read after a race finds beside the object (the facts it is explained
    with again)."""
    return list(apply_plans(plans, kube=cluster, facts_for=lambda o: facts(o, *found, extra_types=(WIDGETS,)),
                            audit_log=log, **options))


def records(log):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_each_applied_plan_is_recorded_with_what_was_read_back(tmp_path):
    one, two = widget("one"), widget("two", "example.com/cleanup", "example.com/other")
    cluster, log = Cluster(one, two), tmp_path / "audit.jsonl"
    ended = run(cluster, [orphaned(one), orphaned(two)], log)
    assert [(a.outcome.result, a.ok, a.recorded, a.log) for a in ended] == [("removed", True, True, log)] * 2
    assert [(r["object"]["name"], r["result"], r["user"], r["removed"], r["finalizersAfter"]) for r in records(log)] \
        == [("one", "removed", "alice", ["example.com/cleanup"], None),
            ("two", "removed", "alice", ["example.com/cleanup", "example.com/other"], None)]


def test_a_refused_plan_is_neither_sent_nor_recorded(tmp_path):
    claim = obj("pvc", "data", "shop", finalizers=("kubernetes.io/pvc-protection",), deleting_for=DELETING)
    held = plan(claim, explain_object(claim, facts(claim, pod("db-0", "shop", claims=("data",)), lease())).findings,
                ["kubernetes.io/pvc-protection"], force=False, allow_live=False)
    after = widget("after")
    cluster, log = Cluster(claim, after), tmp_path / "audit.jsonl"
    refused, applied = run(cluster, [held, orphaned(after)], log)
    assert refused.outcome.result == "refused" and not refused.ok and refused.record is None
    assert refused.outcome.message.startswith("kubernetes.io/pvc-protection: it is HOLDING: in use by 1 scheduled Pod")
    assert cluster.patched == ["after"] and applied.outcome.result == "removed"
    assert cluster.stored["data"]["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert [r["object"]["name"] for r in records(log)] == ["after"]


def test_a_write_the_server_refuses_is_recorded_as_failed_and_the_run_goes_on(tmp_path):
    one, two = widget("one"), widget("two")
    cluster, log = Cluster(one, two, refuse="one"), tmp_path / "audit.jsonl"
    failed, applied = run(cluster, [orphaned(one), orphaned(two)], log)
    assert failed.outcome.result == "failed" and failed.error.message == DENIED and failed.recorded
    assert applied.outcome.result == "removed"
    assert [(r["object"]["name"], r["result"], r["message"], r["removed"]) for r in records(log)] == [
        ("one", "failed", DENIED, []), ("two", "removed", "removed; the object is gone",
                                                    ["example.com/cleanup"])]


def test_ctrl_c_during_a_write_is_recorded_with_what_the_read_back_found_and_stops_the_run(tmp_path):
    """The PATCH was applied but its answer never came: the read back finds the finalizer gone, and says that
    what the object keeps is still there; the next plan is never started."""
    one, two = widget("one", "example.com/cleanup", "example.com/keep"), widget("two")
    chosen = plan(one, explain_object(one, facts(one, extra_types=(WIDGETS,))).findings, ["example.com/cleanup"],
                  force=False, allow_live=False)
    cluster, log = Cluster(one, two, interrupt="one"), tmp_path / "audit.jsonl"
    [interrupted] = run(cluster, [chosen, orphaned(two)], log)
    assert interrupted.outcome.result == "interrupted" and not interrupted.ok and interrupted.recorded
    assert interrupted.outcome.message == "read back: example.com/cleanup is removed"
    assert cluster.patched == ["one"]
    [record] = records(log)
    assert (record["result"], record["removed"], record["finalizersBefore"], record["finalizersAfter"]) == (
        "interrupted", ["example.com/cleanup"], ["example.com/cleanup", "example.com/keep"], ["example.com/keep"])
    assert record["message"] == interrupted.outcome.message


def test_a_dry_run_records_nothing_and_checks_no_audit_log(tmp_path):
    one = widget("one")
    cluster = Cluster(one)
    unwritable = tmp_path / "a-file" / "audit.jsonl"
    (tmp_path / "a-file").write_text("")
    [applied] = run(cluster, [orphaned(one)], unwritable, dry_run=True)
    assert applied.outcome.result == "dry-run" and applied.ok and applied.record is None
    assert cluster.stored["one"]["metadata"]["finalizers"] == ["example.com/cleanup"]


def test_after_a_race_the_plan_is_made_again_from_what_it_was_asked(tmp_path):
    """Another writer changes the finalizers between kfin's read and its PATCH (the test op fails): kfin reads
    again and plans again with the plan's own --finalizer, so it removes what was named and nothing else."""
    one = widget("one", "example.com/cleanup", "example.com/other", "example.com/keep")
    chosen = plan(one, explain_object(one, facts(one, extra_types=(WIDGETS,))).findings, ["example.com/cleanup"],
                  force=False, allow_live=False)
    assert chosen.asked.patterns == ("example.com/cleanup",)
    cluster = Cluster(one, race=("one", "example.com/other"))
    [applied] = run(cluster, [chosen], tmp_path / "audit.jsonl")
    assert (applied.outcome.result, applied.outcome.attempts) == ("removed", 2)
    assert cluster.stored["one"]["metadata"]["finalizers"] == ["example.com/keep"]
    assert applied.record["attempts"] == 2 and applied.record["removed"] == ["example.com/cleanup"]


@pytest.mark.parametrize("proven_only", [True, False], ids=["kfin-mcp", "kfin-remove-finalizer"])
def test_after_a_race_kfin_mcp_still_removes_only_what_kfin_proved(proven_only, tmp_path):
    """Planned ORPHANED (no controller found); after a race, the read again finds its controller installed but scaled
    to zero: STALLED. kfin mcp's plan leaves it (it made its plan again with the names it had selected as
    --finalizer, so the finalizer went); a person's --finalizer takes it, as kfin remove does."""
    one = obj(WIDGETS, "one", "shop", finalizers=("example.com/cleanup", "example.com/other"), deleting_for=DELETING,
              **{MANAGERS: {"example.com/cleanup": "widget-operator"}})
    findings = explain_object(one, facts(one, extra_types=(WIDGETS,))).findings
    chosen = plan(one, findings, None if proven_only else ["example.com/cleanup"], force=False, allow_live=False,
                  proven_only=proven_only)
    assert "example.com/cleanup" in [f.finalizer for f in chosen.selected]
    operator = obj("deploy.apps", "widget-operator", "operators", spec={"replicas": 0, "template": {"spec": {}}},
                   status={})
    cluster = Cluster(one, race=("one", "example.com/other"))
    [applied] = run(cluster, [chosen], tmp_path / "audit.jsonl", operator)
    if proven_only:
        assert applied.outcome.result == "unchanged"
        assert cluster.stored["one"]["metadata"]["finalizers"] == ["example.com/cleanup"]
    else:
        assert applied.outcome.result == "removed" and "one" not in cluster.stored


def test_no_audit_record_carries_the_password_of_the_server_url(tmp_path):
    """The removal's record and --recreate-namespace's name the server as kfin shows it; the latter wrote the URL
    as the kubeconfig gave it, password and all."""
    one = widget("one")
    cluster, log = Cluster(one), tmp_path / "audit.jsonl"
    [applied] = run(cluster, [orphaned(one)], log)
    created = recreate_namespace(cluster, "shop")
    for record in (applied.record, created):
        assert record["server"] == "https://<redacted>@cluster.test" and "hunter2" not in json.dumps(record)
