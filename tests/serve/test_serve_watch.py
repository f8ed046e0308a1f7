"""kfin serve by watch (kfin.api.informer, kfin.core.explain.watching): list each type once, then watch it; re-list
on 410, back off on errors, list what cannot be watched, find new kinds, and answer again only for changes
kfin can see. Against tests/fakeapi, whose watches follow kube-apiserver's (410 after compaction, bookmarks).
"""

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from msgspec.structs import replace
from pathlib import Path

import pytest

from kfin.api import informer as informer_module
from kfin.api.connection import Kube
from kfin.api.discovery import discover
from kfin.api.informer import Informer, Informers
from kfin.api.inventory import STUCK_FULL
from kfin.api.target import Target
from kfin.core.read.scope import Scope
from kfin.core.explain.stuck import find_all
from kfin.core.explain.watching import Watched
from tests.fakeapi.rawclient import RawClient
from tests.fakeapi.server import Fault, Watch
from tests.serve.test_serve import ROOT, _free_port, samples, stuck_configmap


def eventually(check, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.fixture
def short_watches(monkeypatch):
    """Watches of a second, so that a test sees what happens when one ends."""
    monkeypatch.setattr(informer_module, "WATCH_SECONDS", (1, 1))


def watching(fake_kubeconfig, namespace=None, relist=60.0):
    informers = Informers(Kube.connect(Target(str(fake_kubeconfig))), namespace, STUCK_FULL, relist=relist)
    informers.start()
    assert informers.wait_synced(20)
    return informers


def held(api, namespace, name):
    """A ConfigMap left Terminating by a finalizer nothing removes, in a namespace that exists."""
    api.create(f"/api/v1/namespaces/{namespace}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "finalizers": ["gone.example.com/cleanup"]}})
    api.delete(f"/api/v1/namespaces/{namespace}/configmaps/{name}")


def names(informers, resource):
    return sorted(o.name for o in informers.inventory().objects if o.type.resource == resource)


def lists_of(fake, resource):
    return [r for r in list(fake.requests)
            if r.method == "GET" and r.path.endswith("/" + resource) and "watch" not in r.query]


def test_a_new_stuck_object_is_seen_from_the_watch_without_listing_again(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    informers = watching(fake_kubeconfig)
    try:
        listed = len(lists_of(fake, "configmaps"))
        since = informers.version
        held(api, "apps", "late")
        assert informers.wait(since, 5) != since
        assert eventually(lambda: any(o.name == "late" and o.terminating for o in informers.inventory().objects))
        assert len(lists_of(fake, "configmaps")) == listed  # the watch told, nothing was listed again
    finally:
        informers.stop()


def test_changes_kfin_cannot_see_do_not_wake_the_answer(fake, fake_kubeconfig):
    """A ConfigMap's data or a Pod's label moving is no news for stuck objects: no answer is worked out."""
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    api.create("/api/v1/namespaces/apps/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                      "metadata": {"name": "settings", "namespace": "apps"}})
    informers = watching(fake_kubeconfig)
    try:
        since = informers.version
        for n in range(5):
            api.merge_patch("/api/v1/namespaces/apps/configmaps/settings", {"data": {"n": str(n)}})
        time.sleep(0.5)
        assert informers.version == since
        # the same ConfigMap given a finalizer is news: kfin keeps it whole from then on
        api.merge_patch("/api/v1/namespaces/apps/configmaps/settings",
                        {"metadata": {"finalizers": ["example.com/keep"]}})
        assert informers.wait(since, 5) != since
    finally:
        api.json_patch("/api/v1/namespaces/apps/configmaps/settings",
                       [{"op": "remove", "path": "/metadata/finalizers"}])
        informers.stop()


def test_a_watch_whose_version_expired_lists_again_and_catches_up(fake, fake_kubeconfig, short_watches):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    informers = watching(fake_kubeconfig)
    try:
        listed = len(lists_of(fake, "configmaps"))
        # the server compacts its history past the version the ConfigMaps' watch holds (a Secret moves it on)
        api.create("/api/v1/namespaces/apps/secrets", {"apiVersion": "v1", "kind": "Secret",
                                                       "metadata": {"name": "s", "namespace": "apps"}})
        with fake.cluster.lock:
            fake.cluster.compacted_rv = int(fake.cluster.current_rv)
        assert eventually(lambda: len(lists_of(fake, "configmaps")) > listed, 10)
        held(api, "apps", "after")  # and it keeps watching from the new list
        assert eventually(lambda: "after" in names(informers, "configmaps"))
        assert not informers.inventory().failures
    finally:
        informers.stop()


def test_a_failing_watch_is_reported_backs_off_and_heals(fake, fake_kubeconfig, short_watches):
    informers = watching(fake_kubeconfig)
    try:
        fake.faults.append(Fault(path="/configmaps$", status=500, times=3))
        assert eventually(lambda: any("configmaps" in f.target for f in informers.inventory().failures), 10)
        failing = [r for r in list(fake.requests) if r.path.endswith("/configmaps") and r.status == 500]
        # backed off: three failures take 1 + 2 + 4 seconds of waiting, not a tight loop of requests
        assert len(failing) <= 3
        assert eventually(lambda: not informers.inventory().failures, 15)
    finally:
        informers.stop()


def test_a_type_that_cannot_be_watched_is_listed_every_interval(fake, fake_kubeconfig):
    kube = Kube.connect(Target(str(fake_kubeconfig)))
    rtype = next(r for r in discover(kube)[0] if r.resource == "configmaps")
    one = Informer(kube, replace(rtype, verbs=("get", "list")), None, False, lambda *changed: None, relist=0.3)
    threading.Thread(target=one.run, daemon=True).start()
    try:
        assert eventually(lambda: one.lists >= 3, 5)
        assert one.watches == 0
    finally:
        one.stop()


def test_a_new_crd_kind_is_watched_as_soon_as_it_is_created(fake, fake_kubeconfig):
    """A new kind joining the cluster is found by the CRDs' watch, not by a stale discovery."""
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    informers = watching(fake_kubeconfig)
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.late.example.com"},
           "spec": {"group": "late.example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    try:
        api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        assert eventually(lambda: any(r.resource == "widgets" for r in informers.informers), 10)
        api.create("/apis/late.example.com/v1/namespaces/apps/widgets", {
            "apiVersion": "late.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "apps", "finalizers": ["late.example.com/cleanup"]}})
        api.delete("/apis/late.example.com/v1/namespaces/apps/widgets/w")
        assert eventually(lambda: any(o.type.resource == "widgets" and o.terminating
                                      for o in informers.inventory().objects), 10)
    finally:
        informers.stop()


def test_the_watched_answer_is_the_scans_answer(fake, fake_kubeconfig):
    """kfin stuck and kfin serve read the same answer: the same rows, blockers and verdicts."""
    stuck_configmap(fake)
    scope = Scope(Target(str(fake_kubeconfig)), all_namespaces=True)
    scanned, _ = find_all(scope)
    watched = Watched(scope, 60)
    watched.start()
    try:
        assert watched.wait_synced(20)
        rows, _ = watched.answer()
        assert [(r.obj.ref, r.blocker, r.verdict) for r in rows] == [(r.obj.ref, r.blocker, r.verdict) for r in scanned]
        assert rows
    finally:
        watched.stop()


@contextmanager
def serving(fake_kubeconfig, tmp_path):
    """kfin serve by watch in a process of its own against the fake, once its first answer is on /metrics:
    (the process, a function that scrapes /metrics). Stopped with SIGTERM at the end."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "kfin", "serve", "--kubeconfig", str(fake_kubeconfig),
                                "--listen", f"127.0.0.1:{port}", "--interval", "60s"], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "KFIN_CACHE_DIR": str(tmp_path / "cache")})

    def metrics_text():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
                return answer.read().decode()
        except OSError:
            return ""

    try:
        assert eventually(lambda: samples(metrics_text(), "kfin_last_scan_success") == [({}, 1.0)], 30)
        yield process, metrics_text
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        finally:
            if process.poll() is None:
                process.kill()


def test_kfin_serve_shows_a_new_stuck_object_within_seconds_and_lists_nothing_at_steady_state(fake, fake_kubeconfig,
                                                                                               tmp_path):
    with serving(fake_kubeconfig, tmp_path) as (_, metrics_text):
        requests_before = len(fake.requests)
        stuck_configmap(fake, "shop", "new")
        changed = time.monotonic()
        assert eventually(lambda: 'name="new"' in metrics_text(), 5), "not on /metrics within 5 s"
        assert time.monotonic() - changed < 5
        time.sleep(1)  # steady state: nothing listed, nothing read again
        kfins = [r for r in list(fake.requests)[requests_before:] if r.user != "admin"]
        assert [r.path for r in kfins if "watch" not in r.query] == []
        text = metrics_text()
        assert samples(text, "kfin_list_requests_total") and samples(text, "kfin_watch_requests_total")


def _context_switches(pid: int) -> int:
    """How often the threads of a process have gone to sleep or been preempted so far (Linux)."""
    total = 0
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:  # a thread that ended meanwhile
            continue
        total += sum(int(line.split()[1]) for line in lines if line.split(":")[0].endswith("ctxt_switches"))
    return total


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts context switches in /proc (Linux)")
def test_kfin_serve_by_watch_sleeps_while_nothing_changes(fake, fake_kubeconfig, tmp_path):
    """At steady state, with nothing changing, no thread of kfin serve wakes: the HTTP server, the answer loop
    and the wait for a stop signal block until something happens. They used to wake about seven times a
    second (polls of 0.2 s and 1 s): a third of serve's CPU at steady state (bench/RESULTS.md). Its answer
    stays current all the while, and a SIGTERM still stops it at once."""
    stuck_configmap(fake)
    with serving(fake_kubeconfig, tmp_path) as (process, metrics_text):
        time.sleep(1)  # the scrapes' connection threads end
        before = _context_switches(process.pid)
        time.sleep(3)
        woken = _context_switches(process.pid) - before
        assert woken <= 3, f"kfin serve woke {woken} times in 3 s with nothing changing"
        assert samples(metrics_text(), "kfin_result_age_seconds")[0][1] < 1  # still current
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=5) == 0


def test_the_fake_sends_bookmarks_when_asked(fake, fake_kubeconfig, monkeypatch):
    monkeypatch.setattr(Watch, "BOOKMARK_EVERY", 0.2)
    kube = Kube.connect(Target(str(fake_kubeconfig)))
    events = [e["type"] for e in kube.watch("/api/v1/configmaps", {}, 1)]
    assert "BOOKMARK" in events


def test_stopping_ends_every_watch_at_once(fake, fake_kubeconfig):
    """A stop (SIGTERM, Ctrl-C, the end of a test) does not wait for watches to time out."""
    informers = watching(fake_kubeconfig)
    assert eventually(lambda: any(t.name.startswith("kfin-watch-") for t in threading.enumerate()))
    informers.stop()
    assert eventually(lambda: not any(t.name.startswith("kfin-watch-") for t in threading.enumerate()), 3)


def test_a_silent_watch_is_taken_as_lost_and_started_again(fake, fake_kubeconfig, monkeypatch):
    """A connection that dies without a word (a NAT that forgot it) must not hold the watch forever: past
    WATCH_IDLE seconds without a byte (a healthy server sends a bookmark a minute), it is started again."""
    monkeypatch.setattr(informer_module, "WATCH_IDLE", 0.5)
    informers = watching(fake_kubeconfig)
    try:
        configmaps = next(i for r, i in informers.informers.items() if r.resource == "configmaps")
        started = configmaps.watches
        assert eventually(lambda: configmaps.watches >= started + 3, 5)
        assert not informers.inventory().failures  # a quiet watch is no failure
    finally:
        informers.stop()


def test_events_are_watched_once_though_two_apis_serve_them(fake, fake_kubeconfig):
    """events.k8s.io/v1 serves core v1's Events (one storage in kube-apiserver): one watch on a cluster's
    busiest type, not two streams of the same changes; a stuck Event shows once."""
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/events", {"metadata": {"name": "held", "finalizers": ["example.com/k"]},
                                                     "involvedObject": {"kind": "Pod", "name": "p"}})
    informers = watching(fake_kubeconfig)
    try:
        assert {(r.group, r.resource) for r in informers.informers} >= {("", "events")}
        assert ("events.k8s.io", "events") not in {(r.group, r.resource) for r in informers.informers}
        since = informers.version
        api.delete("/api/v1/namespaces/default/events/held")
        assert informers.wait(since, 5) != since
        assert eventually(lambda: [o.name for o in informers.inventory().objects if o.terminating] == ["held"])
        assert not [r for r in list(fake.requests) if r.path.startswith("/apis/events.k8s.io/")]
    finally:
        informers.stop()


def test_an_answer_walks_the_objects_that_are_not_thin_as_the_watches_keep_them(fake, fake_kubeconfig):
    """Each informer keeps its objects that are not thin apart, as they gain and lose finalizers: an answer
    walks those, not every thin object of the cluster; what a read on demand replaces is walked afresh."""
    from kfin.core.read.facts import Facts
    from kfin.core.read.reader import Reader
    from kfin.model import ThinObject

    api = RawClient(fake.url, "admin-token")
    path = "/api/v1/namespaces/default/configmaps"
    api.create(path, {"metadata": {"name": "plain"}})
    api.create(path, {"metadata": {"name": "held", "finalizers": ["example.com/k"]}})
    informers = watching(fake_kubeconfig)

    def kept_configmaps():
        inventory = informers.inventory()
        walked = {o.name for o in inventory.kept_objects() if o.type.resource == "configmaps"}
        assert walked == {o.name for o in inventory.objects
                          if o.type.resource == "configmaps" and not isinstance(o, ThinObject)}
        return walked

    try:
        assert informers.inventory().kept is not None and kept_configmaps() == {"held"}
        api.merge_patch(f"{path}/plain", {"metadata": {"finalizers": ["example.com/k"]}})
        assert eventually(lambda: kept_configmaps() == {"held", "plain"})
        api.json_patch(f"{path}/held", [{"op": "remove", "path": "/metadata/finalizers"}])
        assert eventually(lambda: kept_configmaps() == {"plain"})
        api.delete(f"{path}/plain")  # Terminating, still held
        assert eventually(lambda: [o.name for o in informers.inventory().kept_objects() if o.terminating] == ["plain"])
        inventory = informers.inventory()
        facts = Facts(inventory, Reader(informers.kube))
        facts.objects("", "pods", "default", full=True)  # read on demand: the objects are replaced
        assert inventory.kept is None and "plain" in {o.name for o in inventory.kept_objects()}
    finally:
        api.json_patch(f"{path}/plain", [{"op": "remove", "path": "/metadata/finalizers"}])
        informers.stop()
