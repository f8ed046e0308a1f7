"""Issue 41, item 9: remove, wait and serve from --from-snapshot, without a cluster. `remove` shows the plan of
a dry run with the exact guarded patch, and refuses --confirm; `wait` says what it would wait for and exits 1
(not gone); `serve --once` prints one exposition. None of them connects to anything or records anything."""

import json
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from kfin.api.connection import Kube
from kfin.errors import ExitCode
from kfin.serve import exporter
from tests.runner import kfin
from tests.serve.test_serve import samples
from tests.paths import PROJECT

EXAMPLE = PROJECT / "examples" / "stuck-cluster.json"
SNAPSHOT = json.loads(EXAMPLE.read_text())


def in_snapshot(kind: str, name: str) -> dict:
    [obj] = [o for o in SNAPSHOT["objects"] if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch, tmp_path):
    """Any connection kfin tries is recorded (and fails); the audit log goes where the test can see it."""
    tried = []

    def connect(cls, *args, **kwargs):
        tried.append(args)
        raise AssertionError("kfin tried to connect to a cluster")

    monkeypatch.setattr(Kube, "connect", classmethod(connect))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    yield tried
    assert tried == [], "kfin tried to connect to a cluster"
    assert not (tmp_path / "audit.jsonl").exists(), "kfin recorded something in the audit log"


def test_remove_from_a_snapshot_shows_the_plan_and_the_exact_guarded_patch():
    result = kfin("remove", "databases.acme.io", "orders", "-n", "team-a", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.OK, result
    lines = result.stdout.splitlines()
    assert lines[0] == "Database.acme.io/team-a/orders (Terminating), finalizers: acme.io/database-cleanup"
    assert lines[1].startswith("  remove   acme.io/database-cleanup  [ORPHANED] ")
    assert "PATCH /apis/acme.io/v1/namespaces/team-a/databases/orders (application/json-patch+json)" in lines[-2]
    orders = in_snapshot("Database", "orders")
    assert json.loads(lines[-1]) == [  # the uid and the list as the snapshot has them, then the removal
        {"op": "test", "path": "/metadata/uid", "value": orders["metadata"]["uid"]},
        {"op": "test", "path": "/metadata/finalizers", "value": ["acme.io/database-cleanup"]},
        {"op": "remove", "path": "/metadata/finalizers/0"},
    ]
    assert result.stderr.startswith("Dry run from the snapshot ")
    assert "(taken 2026-11-23T02:05:01Z): nothing was sent" in result.stderr


def test_remove_from_a_snapshot_refuses_what_holds_with_its_safe_fix():
    result = kfin("remove", "pvc", "data-postgres-0", "-n", "shop", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.REFUSED, result
    assert "keep     kubernetes.io/pvc-protection  [HOLDING]" in result.stdout
    assert "PATCH" not in result.stdout
    assert "error: refused to remove finalizers from PersistentVolumeClaim/shop/data-postgres-0" in result.stderr
    assert "Safe fix: stop what uses the claim: delete Pod shop/postgres-0" in result.stderr


def test_remove_all_stuck_from_a_snapshot_shows_the_table_it_would_act_on():
    result = kfin("remove", "-A", "--all-stuck", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.REFUSED, result  # as a live dry run: some are refused
    rows = {line.split()[2]: line for line in result.stdout.splitlines()[1:] if len(line.split()) > 2}
    assert "acme.io/database-cleanup  ORPHANED  remove" in rows["orders"]
    assert "refused: no finalizer is safe to remove" in rows["data-postgres-0"]
    assert len(rows) == 10
    assert "nothing was sent. 1 to change, 9 refused." in result.stderr
    narrowed = kfin("remove", "-n", "team-a", "--all-stuck", "--verdict", "ORPHANED", "--from-snapshot", str(EXAMPLE))
    assert narrowed.code == ExitCode.OK, narrowed
    # one namespace (-n): no NAMESPACE column, as kubectl; every namespace (-A): the column
    assert narrowed.stdout.splitlines()[0].split() == ["KIND", "NAME", "FINALIZER", "VERDICT", "ACTION"]
    assert [line.split()[1] for line in narrowed.stdout.splitlines()[1:]] == ["orders"]
    assert result.stdout.splitlines()[0].split() == ["NAMESPACE", "KIND", "NAME", "FINALIZER", "VERDICT", "ACTION"]


@pytest.mark.parametrize("flags, named", [(["--confirm"], "--confirm"), (["--server-dry-run"], "--server-dry-run"),
                                          (["--confirm", "--yes"], "--confirm")])
@pytest.mark.parametrize("subject", [["db", "orders", "-n", "team-a"], ["-A", "--all-stuck"]])
def test_remove_from_a_snapshot_refuses_to_write_in_one_line(subject, flags, named):
    result = kfin("remove", *subject, *flags, "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.USAGE, result
    assert result.stderr.startswith("error: --from-snapshot shows the plan only: a snapshot cannot be written")
    assert named in result.stderr and len(result.stderr.splitlines()) == 1 and result.stdout == ""


def test_wait_from_a_snapshot_says_what_it_would_wait_for_and_is_not_gone():
    result = kfin("wait", "pvc", "data-postgres-0", "-n", "shop", "--timeout", "10m", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.FOUND, result  # not gone: never 0
    lines = result.stdout.splitlines()
    assert lines[0] == (f"PersistentVolumeClaim/shop/data-postgres-0 is not gone: Terminating for 3d in the snapshot "
                        f"{EXAMPLE} (taken 2026-11-23T02:05:01Z).")
    assert lines[1] == "  HOLDING: pvc-protection: in use by Pod shop/postgres-0 (on node ip-10-0-1-17)"
    assert lines[2:4] == ["It goes once:", "  1. kubectl delete pod -n shop postgres-0"]
    assert "kfin wait does not wait on a snapshot" in lines[-1] and "(up to 10m)" in lines[-1]


def test_wait_from_a_snapshot_names_the_root_cause_deeper_down():
    result = kfin("wait", "pv", "pvc-7f3a91", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.FOUND, result
    assert "HOLDING: pv-protection: still Bound to claim shop/data-postgres-0" in result.stdout
    assert "root cause: Pod/shop/postgres-0" in result.stdout
    assert "its disk is deleted with it, data included" in result.stdout


def test_wait_from_a_snapshot_on_a_live_object_is_not_gone_either():
    result = kfin("wait", "ns", "shop", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.FOUND, result
    assert result.stdout.startswith("Namespace/shop is not being deleted in the snapshot")


def test_wait_from_a_snapshot_on_a_typo_is_exit_7_never_gone():
    for args in (["db", "ordrs", "-n", "team-a"], ["dbx", "orders", "-n", "team-a"],
                 ["db", "orders", "-n", "team-b"]):
        result = kfin("wait", *args, "--from-snapshot", str(EXAMPLE))
        assert result.code == ExitCode.NOT_FOUND, (args, result)
        assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1


def test_wait_from_a_snapshot_for_a_uid_replaced_by_another_object_is_gone():
    result = kfin("wait", "ns", "team-a", "--uid", "0000", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.OK, result
    assert "Namespace/team-a of uid 0000 is gone in the snapshot" in result.stdout
    same = kfin("wait", "ns", "team-a", "--uid", in_snapshot("Namespace", "team-a")["metadata"]["uid"],
                "--from-snapshot", str(EXAMPLE))
    assert same.code == ExitCode.FOUND, same


def test_serve_once_from_a_snapshot_prints_one_exposition_and_opens_no_port(monkeypatch):
    monkeypatch.setattr(exporter, "http_server", lambda *a: pytest.fail("kfin serve --once opened a port"))
    result = kfin("serve", "--once", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.PARTIAL, result  # as kfin stuck: the snapshot could not read one API group
    assert "warning: discovery of metrics.k8s.io/v1beta1 failed" in result.stderr
    text = result.stdout
    assert sum(value for _, value in samples(text, "kfin_stuck_objects")) == 10
    [(labels, one)] = [s for s in samples(text, "kfin_stuck_object_info") if s[0]["name"] == "orders"]
    assert one == 1 and labels["verdict"] == "ORPHANED" and labels["namespace"] == "team-a"
    assert samples(text, "kfin_scan_complete") == [({"context": "prod-eu"}, 0)]
    assert samples(text, "kfin_scan_failures") == [({"context": "prod-eu", "reason": "ServiceUnavailable"}, 1)]
    assert samples(text, "kfin_scans_total") == [({}, 1)] and samples(text, "kfin_last_scan_success") == [({}, 1)]
    taken = datetime.fromisoformat(SNAPSHOT["observedAt"].replace("Z", "+00:00")).timestamp()
    assert samples(text, "kfin_scan_timestamp_seconds") == [({}, taken)]  # when the snapshot was taken
    assert samples(text, "kfin_result_age_seconds")[0][1] >= 2 * 86400  # as old as the snapshot (2026-11-23)
    if shutil.which("promtool"):
        checked = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_serve_once_narrows_to_a_namespace_as_serve_does():
    text = kfin("serve", "--once", "-n", "team-a", "--from-snapshot", str(EXAMPLE)).stdout
    assert {labels["name"] for labels, _ in samples(text, "kfin_stuck_object_info")} == {"team-a", "orders"}


def test_serve_from_a_snapshot_without_once_is_a_usage_error():
    result = kfin("serve", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.USAGE, result
    assert result.stderr.startswith("error: --from-snapshot needs --once") and len(result.stderr.splitlines()) == 1
