"""Fleets (kfin.core.explain.fleet): many contexts scanned in parallel processes, merged in the parent, one failing
context reported without stopping the others, and the same answer as one process gives."""

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from kfin.api.target import Target
from kfin.core.explain import fleet
from kfin.core.explain import fleet_processes
from kfin.core.read import contexts as sources
from kfin.core.read.scope import Scope
from kfin.core.explain.stuck import find_all
from kfin.errors import ExitCode, UnreachableError
from tests.fakeapi import FakeAPIServer
from tests.fakeapi.server import Gate
from tests.fakeapi.rawclient import RawClient
from tests.paths import PROJECT

ROOT = PROJECT


@pytest.fixture
def four_clusters(tmp_path):
    """Four fake clusters, each with a stuck ConfigMap named after it, and a fifth context nobody answers."""
    servers = [FakeAPIServer().start() for _ in range(4)]
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": [],
              "current-context": "c0"}
    for number, server in enumerate(servers):
        api = RawClient(server.url, "admin-token")
        held = api.create("/api/v1/namespaces/default/configmaps",
                          {"metadata": {"name": f"held-{number}", "finalizers": ["example.com/b"]}})
        # its dependent: a lean scan keeps it thin (an OwnedObject), and a worker sends it to the parent
        api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "child", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": held["metadata"]["name"],
             "uid": held["metadata"]["uid"]}]}})
        api.delete(f"/api/v1/namespaces/default/configmaps/held-{number}")
        own = json.loads(server.kubeconfig(tmp_path / f"k{number}").read_text())
        config["clusters"].append({"name": f"c{number}", "cluster": own["clusters"][0]["cluster"]})
        config["users"].append({"name": f"c{number}", "user": own["users"][0]["user"]})
        config["contexts"].append({"name": f"c{number}", "context": {"cluster": f"c{number}", "user": f"c{number}"}})
    config["clusters"].append({"name": "gone", "cluster": {"server": "https://127.0.0.1:9"}})
    config["contexts"].append({"name": "gone", "context": {"cluster": "gone", "user": "c0"}})
    path = tmp_path / "fleet"
    path.write_text(json.dumps(config))
    yield path
    for server in servers:
        server.stop()


def test_contexts_are_scanned_in_processes_with_the_answer_of_one_process(four_clusters, monkeypatch):
    scope = Scope(Target(str(four_clusters), request_timeout=5), all_namespaces=True,
                  contexts=("c0", "c1", "c2", "c3", "gone"))
    pools = []

    class CountingPool(fleet_processes.ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            pools.append(self)

    monkeypatch.setattr(fleet_processes, "ProcessPoolExecutor", CountingPool)
    monkeypatch.setattr(fleet, "workers_for", lambda contexts: 2)
    rows, sources = fleet.find_all_contexts(scope)
    assert len(pools) == 1
    one_process, _ = find_all(scope)
    # (the order of rows stuck for the same time depends on each context's moment of scan: compared sorted)
    assert sorted((r.context, r.obj.ref, r.blocker, r.verdict) for r in rows) == \
           sorted((r.context, r.obj.ref, r.blocker, r.verdict) for r in one_process)
    assert {r.context for r in rows} == {"c0", "c1", "c2", "c3"}
    assert [f.inventory.context for f in sources] == ["c0", "c1", "c2", "c3", "gone"]
    [gone] = sources[-1].inventory.failures
    assert gone.what == "context" and gone.reason == "UnreachableError"
    assert all(f.kube is not None for f in sources[:4])  # connected again for what a command reads next
    assert all(any(o.name == "child" for o in f.inventory.objects) for f in sources[:4])


def test_a_fleet_where_nothing_answers_is_an_error(tmp_path, monkeypatch):
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
              "clusters": [{"name": n, "cluster": {"server": "https://127.0.0.1:9"}} for n in "abcd"],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": n, "context": {"cluster": n, "user": "u"}} for n in "abcd"]}
    (tmp_path / "k").write_text(json.dumps(config))
    monkeypatch.setattr(fleet, "workers_for", lambda contexts: 2)
    scope = Scope(Target(str(tmp_path / "k"), request_timeout=5), all_namespaces=True, contexts=tuple("abcd"))
    with pytest.raises(UnreachableError, match="no context could be read: a: .*; d: "):
        fleet.find_all_contexts(scope)


def test_kfin_stuck_all_contexts_from_the_command_line(four_clusters, tmp_path):
    """As a user runs it: a separate process, which forks its workers."""
    result = subprocess.run([sys.executable, "-m", "kfin", "stuck", "--all-contexts", "-o", "json",
                             "--kubeconfig", str(four_clusters), "--request-timeout", "5s"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "KFIN_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == ExitCode.PARTIAL, result.stderr
    report = json.loads(result.stdout)
    assert sorted((i["context"], i["name"]) for i in report["items"]) == [
        ("c0", "held-0"), ("c1", "held-1"), ("c2", "held-2"), ("c3", "held-3")]
    assert [f["context"] for f in report["failures"]] == ["gone"] and "Traceback" not in result.stderr


def test_one_cluster_scan_does_not_load_the_fleets_worker_processes(fake_kubeconfig, four_clusters, tmp_path):
    """multiprocessing is 7 ms of start-up (bench/PROFILE.md): a scan of one cluster does without it; a fleet
    large enough for processes loads it, and answers from them."""
    code = ("import sys\nfrom kfin.commands.app import main\ntry:\n main(sys.argv[1:])\nexcept SystemExit: pass\n"
            "print('multiprocessing' in sys.modules, 'concurrent.futures.process' in sys.modules, file=sys.stderr)")
    env = {**os.environ, "KFIN_CACHE_DIR": str(tmp_path / "cache")}
    one = subprocess.run([sys.executable, "-c", code, "stuck", "-A", "-o", "json", "--kubeconfig",
                          str(fake_kubeconfig)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert one.returncode == ExitCode.OK and json.loads(one.stdout)["complete"], one.stderr
    assert one.stderr.splitlines()[-1] == "False False"
    fleet_run = subprocess.run([sys.executable, "-c", code, "stuck", "--all-contexts", "-o", "json", "--kubeconfig",
                                str(four_clusters), "--request-timeout", "5s"], capture_output=True, text=True,
                               cwd=ROOT, env=env, timeout=120)
    assert len(json.loads(fleet_run.stdout)["items"]) == 4, fleet_run.stderr
    assert fleet_run.stderr.splitlines()[-1] == ("True True" if fleet.workers_for(5) >= 2 else "False False")


def test_all_contexts_reads_the_kubeconfig_without_the_kubernetes_package(four_clusters):
    """Listing the contexts once went through the kubernetes package: 0.3 s of imports before any context was
    read, a sixth of a 20-context fleet's scan (bench/RESULTS.md, fleet). The contexts come in kubectl's order."""
    code = ("import sys\nfrom kfin.api.connect import context_names\nprint(context_names(sys.argv[1]))\n"
            "print('kubernetes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(four_clusters)], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.splitlines() == ["['c0', 'c1', 'c2', 'c3', 'gone']", "False"], done.stderr


def test_all_contexts_of_a_kubeconfig_without_contexts_is_a_kubeconfig_error(tmp_path):
    (tmp_path / "k").write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "contexts": [],
                                            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}]}))
    result = subprocess.run([sys.executable, "-m", "kfin", "stuck", "--all-contexts", "--kubeconfig",
                             str(tmp_path / "k")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == ExitCode.CONFIG, result.stderr
    assert result.stderr.strip() == f"error: kubeconfig {tmp_path / 'k'} has no contexts"


def test_contexts_scanned_together_share_the_lists_in_flight(tmp_path):
    """Each context of a fleet lists fewer types at once, so that more contexts go at once for the same
    requests in flight: fewer connections, TLS handshakes and threads per context (bench/RESULTS.md, fleet).
    Twelve contexts of one server 30 ms away: never more than the budget in flight, all of them at once."""
    server = FakeAPIServer().start()
    try:
        own = json.loads(server.kubeconfig(tmp_path / "own").read_text())
        names = [f"c{n}" for n in range(12)]
        config = {**own, "contexts": [{"name": n, "context": own["contexts"][0]["context"]} for n in names],
                  "current-context": "c0"}
        (tmp_path / "fleet").write_text(json.dumps(config))
        scope = Scope(Target(str(tmp_path / "fleet"), request_timeout=30), all_namespaces=True,
                      contexts=tuple(names))
        at_once, per_context = sources.fleet_shares(12, scope.concurrency)
        assert (at_once, per_context) == (12, 5)
        # the lists of types (pages: a limit; not the Namespaces, which each context reads first) are held until
        # more than eight contexts' worth are in flight at once: they open only if twelve contexts list together
        server.gate = Gate(8 * per_context + 1, lambda method, path: method == "GET" and "limit=" in path
                           and not urlsplit(path).path.endswith("/namespaces"))
        read = sources.gather(scope, lean=True)
        assert all(not f.inventory.failures for f in read) and len(read) == 12
        assert server.gate.opened, f"at most {server.gate.most} lists of types were in flight at once"
        # and never more than the budget: five types at a time for each of the twelve
        assert server.most_in_flight <= 12 * per_context <= sources.LISTS_IN_FLIGHT, server.most_in_flight
    finally:
        server.stop()


COUNTING_PLUGIN = """
import json, sys
with open(sys.argv[1], "a") as runs:
    runs.write(sys.argv[2] + "\\n")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": "admin-token"}}))
"""


def test_a_fleet_runs_each_contexts_exec_plugin_once(fake, tmp_path):
    """A cloud fleet's contexts get their credentials from exec plugins (aws eks get-token, gke-gcloud-auth-plugin:
    about a second each). Each runs once, in the worker that scans its context; the parent connects again only
    for what a command reads afterwards, which `kfin stuck` does not when nothing it needs is missing."""
    plugin, runs = tmp_path / "plugin.py", tmp_path / "runs"
    plugin.write_text(COUNTING_PLUGIN)
    names = [f"c{n}" for n in range(4)]
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c0",
              "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
              "users": [{"name": n, "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                      "command": sys.executable, "args": [str(plugin), str(runs), n],
                                                      "interactiveMode": "Never"}}} for n in names],
              "contexts": [{"name": n, "context": {"cluster": "fake", "user": n}} for n in names]}
    (tmp_path / "fleet").write_text(json.dumps(config))
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/b"]}})
    api.delete("/api/v1/namespaces/default/configmaps/held")
    result = subprocess.run([sys.executable, "-m", "kfin", "stuck", "--all-contexts", "-o", "json",
                             "--kubeconfig", str(tmp_path / "fleet")], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, env={**os.environ, "KFIN_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == ExitCode.OK, result.stderr
    assert sorted((i["context"], i["name"]) for i in json.loads(result.stdout)["items"]) == [
        (n, "held") for n in names]
    assert sorted(runs.read_text().split()) == names
