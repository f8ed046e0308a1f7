"""kfin guard's endpoint (issue 42): an AdmissionReview v1 for a DELETE in, kfin preflight's prediction from the
watch cache out, as warnings within kube-apiserver's limits; deny mode and its break-glass annotation; never a
write or a dry run of its own. Against tests/fakeapi; the scenarios of tests/scenarios/test_guard.py have a real
kube-apiserver call it."""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from kfin.core.predict.guard import DENY_LABEL, MOST_RUNES, MOST_WARNINGS, OVERRIDE_ANNOTATION
from kfin.errors import ExitCode
from tests.fakeapi.server import Fault
from tests.runner import kfin
from tests.scenario import ScenarioCluster
from tests.scenarios.test_preflight import widget_operator
from tests.serve.test_serve import ROOT, _free_port


@contextmanager
def running_guard(kubeconfig: Path, *args: str, ready: bool = True):
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen([sys.executable, "-m", "kfin", "guard", "--listen", f"127.0.0.1:{port}", "--plain-http",
                                "--kubeconfig", str(kubeconfig), *args], env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                code = urllib.request.urlopen(f"{url}/readyz", timeout=2).status
            except urllib.error.HTTPError as error:
                code = error.code
            except OSError:
                code = 0
            if code == 200 or (code and not ready):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("kfin guard did not come up")
        yield url
    finally:
        process.terminate()
        process.wait(10)


def review(url: str, request: dict) -> dict:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    answer = urllib.request.urlopen(urllib.request.Request(
        f"{url}/validate", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}), timeout=10)
    reply = json.loads(answer.read())
    assert reply["apiVersion"] == "admission.k8s.io/v1" and reply["kind"] == "AdmissionReview"
    assert reply["response"]["uid"] == request["uid"]
    return reply["response"]


def delete_of(cluster, path: str, kind: str, user: str = "admin", operation: str = "DELETE") -> dict:
    obj = cluster.get(path)
    group, _, version = obj["apiVersion"].rpartition("/")
    plural = path.rsplit("/", 2)[-2]
    return {"uid": f"uid-{time.monotonic_ns()}", "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": plural}, "name": obj["metadata"]["name"],
            "namespace": obj["metadata"].get("namespace", ""), "operation": operation,
            "userInfo": {"username": user, "groups": ["system:authenticated"]}, "oldObject": obj}


def team(fake, tmp_path, widgets=2) -> tuple[ScenarioCluster, str, str]:
    """(cluster, group, namespace): a namespace holding its own Widget operator and Widgets with its finalizer."""
    cluster = ScenarioCluster("fakeapi", fake.url, "admin-token", tmp_path, fake=fake)
    group = cluster.widget_crd()
    ns = cluster.name("team")
    widget_operator(cluster, group, ns, cluster_wide=False)
    for i in range(widgets):
        cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                        "metadata": {"name": f"w{i}", "namespace": ns, "finalizers": [f"{group}/cleanup"]}})
    return cluster, group, ns


def test_a_namespace_deletion_is_allowed_with_what_it_leaves_stuck(fake, tmp_path):
    cluster, group, ns = team(fake, tmp_path)
    with running_guard(cluster.kubeconfig) as url:
        seen = len(fake.requests)
        answer = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace"))
        assert answer["allowed"] is True and "status" not in answer
        first, *rest = answer["warnings"]
        assert first == (f"kfin: deleting namespace {ns} leaves 2 Widgets stuck ({group}/cleanup): their controller "
                         f"is deleted with it; delete them first: kubectl delete widgets.{group} -n {ns} --all")
        assert f"kfin preflight namespace {ns}" in rest[-1]
        # kube-apiserver's limits (k8s.io/apiserver pkg/endpoints/filters/warning.go): 256 runes each, one line
        assert len(answer["warnings"]) <= MOST_WARNINGS + 2
        assert all(len(w) <= MOST_RUNES and w.isprintable() for w in answer["warnings"])
        # the answer came from the watch cache: nothing written, no dry run, no list of the cluster again
        asked = fake.requests[seen:]
        assert all(r.method == "GET" and not r.dry_run for r in asked), [(r.method, r.path) for r in asked]
        metrics = urllib.request.urlopen(f"{url}/metrics").read().decode()
        assert 'kfin_guard_reviews_total{decision="warned"} 1' in metrics
        assert "kfin_guard_review_seconds_count 1" in metrics


def test_a_deletion_that_leaves_nothing_stuck_is_allowed_without_a_word(fake, tmp_path):
    cluster, group, ns = team(fake, tmp_path, widgets=0)
    with running_guard(cluster.kubeconfig) as url:
        answer = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace"))
        assert answer == {"allowed": True, "uid": answer["uid"]}


def test_updates_and_the_control_planes_own_deletes_are_not_reviewed(fake, tmp_path):
    cluster, group, ns = team(fake, tmp_path)
    with running_guard(cluster.kubeconfig, "--deny") as url:
        for user in ("system:serviceaccount:kube-system:namespace-controller", "system:kube-controller-manager"):
            answer = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace", user=user))
            assert answer == {"allowed": True, "uid": answer["uid"]}, user
        answer = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace", operation="UPDATE"))
        assert answer == {"allowed": True, "uid": answer["uid"]}
        skipped = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace", user="kfin-itself"))
        assert skipped["allowed"] is False  # --deny, and kfin-itself is not skipped unless told
    with running_guard(cluster.kubeconfig, "--deny", "--skip-user", "kfin-itself") as url:
        skipped = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace", user="kfin-itself"))
        assert skipped == {"allowed": True, "uid": skipped["uid"]}


def test_deny_mode_by_label_refuses_and_the_override_annotation_lets_through(fake, tmp_path):
    cluster, group, ns = team(fake, tmp_path)
    path = f"/api/v1/namespaces/{ns}"
    cluster.api.merge_patch(path, {"metadata": {"labels": {DENY_LABEL: "deny"}}})
    with running_guard(cluster.kubeconfig) as url:
        answer = review(url, delete_of(cluster, path, "Namespace"))
        assert answer["allowed"] is False and answer["status"]["code"] == 403
        message = answer["status"]["message"]
        assert message.startswith(f"kfin guard denies deleting namespace {ns}: deleting namespace {ns} leaves 2 "
                                  "Widgets stuck")
        assert f"annotate it {OVERRIDE_ANNOTATION}=<why>" in message
        assert answer["auditAnnotations"] == {"denied": "2"}
        cluster.api.merge_patch(path, {"metadata": {"annotations": {OVERRIDE_ANNOTATION: "INC-42: team gone"}}})
        answer = review(url, delete_of(cluster, path, "Namespace"))
        assert answer["allowed"] is True and answer["warnings"][0].startswith(f"kfin: deleting namespace {ns} leaves")
        assert answer["auditAnnotations"] == {"override": f"{OVERRIDE_ANNOTATION}=INC-42: team gone", "stranded": "2"}
        metrics = urllib.request.urlopen(f"{url}/metrics").read().decode()
        assert 'decision="denied"} 1' in metrics and 'decision="overridden"} 1' in metrics


def test_warn_only_never_denies_even_where_the_label_asks_for_deny_mode(fake, tmp_path):
    """--warn-only (the chart's guard.mode warn): the label kfin.dev/guard=deny that refuses above only warns."""
    cluster, group, ns = team(fake, tmp_path)
    path = f"/api/v1/namespaces/{ns}"
    cluster.api.merge_patch(path, {"metadata": {"labels": {DENY_LABEL: "deny"}}})
    with running_guard(cluster.kubeconfig, "--warn-only") as url:
        answer = review(url, delete_of(cluster, path, "Namespace"))
        assert answer["allowed"] is True and "status" not in answer and "auditAnnotations" not in answer
        assert answer["warnings"][0].startswith(f"kfin: deleting namespace {ns} leaves 2 Widgets stuck")
        assert 'decision="warned"} 1' in urllib.request.urlopen(f"{url}/metrics").read().decode()


def test_warn_only_with_deny_is_a_usage_error(fake_kubeconfig):
    refused = kfin("guard", "--warn-only", "--deny", "--plain-http", "--kubeconfig", str(fake_kubeconfig))
    assert refused.code == ExitCode.USAGE == 2
    assert "--warn-only never denies: it goes without --deny" in refused.stderr


def test_a_watch_down_allows_with_a_warning_that_says_so(fake, tmp_path):
    cluster, group, ns = team(fake, tmp_path)
    cluster.api.merge_patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {DENY_LABEL: "deny"}}})
    fake.faults.append(Fault(path="/configmaps$", status=500))  # its list and its watch fail, again and again
    with running_guard(cluster.kubeconfig, ready=False) as url:
        until_listed = time.monotonic() + 20  # the other types listed: answers come, not ready (/readyz 503)
        while "Widgets" not in " ".join(review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace"))
                                        .get("warnings", [])) and time.monotonic() < until_listed:
            time.sleep(0.1)
        assert urllib.request.urlopen(f"{url}/metrics").read().decode().count("kfin_guard_ready 0") == 1
        answer = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace"))
        assert answer["allowed"] is True  # deny mode, but what the cache misses could change the answer
        assert any(w.startswith("kfin: kfin's watch of configmaps is down") for w in answer["warnings"]), answer
        assert 'decision="not-current"}' in urllib.request.urlopen(f"{url}/metrics").read().decode()


def test_bad_input_is_a_400_and_never_a_traceback(fake, tmp_path):
    cluster, group, ns = team(fake, tmp_path, widgets=0)
    with running_guard(cluster.kubeconfig) as url:
        for body in (b"{}", b"not json", json.dumps({"request": {"operation": "DELETE"}}).encode()):
            try:
                urllib.request.urlopen(urllib.request.Request(f"{url}/validate", data=body), timeout=5)
                raise AssertionError("accepted")
            except urllib.error.HTTPError as error:
                assert error.code == 400


def test_explain_and_preflight_see_the_guards_webhook_as_any_other_and_never_as_a_gate(fake, tmp_path):
    """deploy/guard's webhook as installed, its Service not there (the guard down): failurePolicy Ignore and DELETE
    alone, so neither a finalizer's removal (an UPDATE) nor the namespace controller's deletes wait on it."""
    import yaml

    from tests.runner import kfin

    cluster, group, ns = team(fake, tmp_path, widgets=0)
    config = yaml.safe_load((ROOT / "deploy" / "guard" / "webhook.yaml").read_text())
    cluster.create(config)
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "held", "namespace": ns, "finalizers": ["example.com/hold"]}})
    cluster.delete(f"/api/v1/namespaces/{ns}/configmaps/held")
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", ns)
    report = json.loads(kfin("explain", "cm", "held", *base, "-o", "json").stdout)
    assert [f["verdict"] for f in report["findings"]] != ["BLOCKED"], report["findings"]
    assert "guard.kfin.dev" not in json.dumps(report["findings"])
    predicted = json.loads(kfin("preflight", "namespace", ns, "--kubeconfig", str(cluster.kubeconfig),
                                "-o", "json").stdout)
    assert "guard.kfin.dev" not in json.dumps(predicted["wouldBeStuck"]), predicted["wouldBeStuck"]


def test_a_smoke_run_of_the_guard_benchmark(tmp_path):
    """python -m bench.guard on a small real control plane: it loads, has kube-apiserver call kfin guard, and
    reports the review latency and what kfin said (the figures themselves are bench/RESULTS.md's, not a test's)."""
    import pytest

    from tests.scenario import envtest_absent

    if envtest_absent():
        pytest.skip(f"needs a real control plane: {envtest_absent()}")
    figures = tmp_path / "guard.json"
    done = subprocess.run([sys.executable, "-m", "bench.guard", "--sizes", "300", "--reviews", "5", "--crds", "1",
                           "--json", str(figures)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-3000:]
    [result] = json.loads(figures.read_text())
    assert result["objects"] == 300 and result["review"]["n"] == result["delete_with_guard"]["n"] == 5
    assert any(w.startswith("kfin: deleting namespace kfin-bench-000 leaves") for w in result["warnings"])
    assert "| 300 |" in done.stdout


def test_while_the_cache_is_being_filled_a_deletion_is_allowed_with_a_warning_that_says_so():
    """kfin guard starting (its watches still listing): no prediction, so nothing is refused, even in deny mode,
    and the warning says why and what to run instead."""
    from kfin.core.predict.guard import NOT_CURRENT, Guard

    guard = Guard(lambda: (None, "kfin's watches are still listing the cluster (the guard is starting)"),
                  deny_everywhere=True)
    review_ = guard.review({"uid": "u", "operation": "DELETE", "name": "shop", "kind": {"kind": "Namespace"},
                            "resource": {"group": "", "version": "v1", "resource": "namespaces"},
                            "userInfo": {"username": "alice"},
                            "oldObject": {"metadata": {"name": "shop", "labels": {DENY_LABEL: "deny"}}}})
    assert (review_.allowed, review_.decision) == (True, NOT_CURRENT)
    assert review_.answer() == {"allowed": True, "warnings": [
        "kfin: not checked: kfin's watches are still listing the cluster (the guard is starting); "
        "kfin preflight namespace shop"]}


def test_the_facts_a_review_reads_are_kept_ready_in_the_background(fake, fake_kubeconfig):
    """kfin guard's facts are worked out again beside the reviews (Watched.keep_facts), not by the review that
    comes after a change: a review reads the facts ready, and a change shows in them within a moment."""
    import threading

    from kfin.api.target import Target
    from kfin.core.explain.watching import Watched
    from kfin.core.read.scope import Scope

    watched = Watched(Scope(Target(str(fake_kubeconfig)), None, True, (), None), 60)
    stop = threading.Event()
    watched.start()
    try:
        assert watched.wait_synced(20)
        threading.Thread(target=watched.keep_facts, args=(stop, 0.05), daemon=True).start()
        deadline = time.monotonic() + 10
        while watched._checked == 0.0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert watched._checked > 0, "keep_facts never made the facts ready"
        before, _ = watched.facts()
        assert before is not None and watched.facts()[0] is before  # ready: nothing built by the asking
        fake.apply({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "late", "namespace": "default", "finalizers": ["example.com/hold"]}})
        while time.monotonic() < deadline and watched.facts()[0].find("", "configmaps", "default", "late") is None:
            time.sleep(0.02)
        after, _ = watched.facts()
        assert after is not before and after.find("", "configmaps", "default", "late") is not None
    finally:
        stop.set()
        watched.stop()


def test_a_denial_names_what_would_be_stranded_even_when_more_would_only_wait(fake, tmp_path):
    """Deny mode refuses for what nothing will release (ORPHANED): its reason is that, not the longer list of
    Gizmos whose operator runs elsewhere but is down (STALLED: someone can bring it back)."""
    cluster, group, ns = team(fake, tmp_path)
    gizmos = f"gizmos-{cluster.suffix}.example.com"
    cluster.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": f"gizmos.{gizmos}"},
                    "spec": {"group": gizmos, "scope": "Namespaced",
                             "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                                 "openAPIV3Schema": {"type": "object",
                                                     "x-kubernetes-preserve-unknown-fields": True}}}]}})
    widget_operator(cluster, gizmos, cluster.name("ops"), cluster_wide=True)  # elsewhere, never running
    cluster.api.merge_patch(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{cluster.name('widgets')}", {
        "rules": [{"apiGroups": [gizmos], "resources": ["gizmos"], "verbs": ["get", "list", "watch", "update"]}]})
    cluster.api.merge_patch(f"/apis/apps/v1/namespaces/{cluster.name('ops')}/deployments/widget-operator",
                            {"spec": {"replicas": 0}})
    for i in range(3):
        cluster.create({"apiVersion": f"{gizmos}/v1", "kind": "Gizmo",
                        "metadata": {"name": f"g{i}", "namespace": ns, "finalizers": [f"{gizmos}/cleanup"]}})
    path = f"/api/v1/namespaces/{ns}"
    cluster.api.merge_patch(path, {"metadata": {"labels": {DENY_LABEL: "deny"}}})
    with running_guard(cluster.kubeconfig) as url:
        answer = review(url, delete_of(cluster, path, "Namespace"))
        assert answer["allowed"] is False, answer
        assert answer["warnings"][0].startswith(f"kfin: deleting namespace {ns} leaves 3 Gizmos stuck"), answer
        assert answer["status"]["message"].startswith(
            f"kfin guard denies deleting namespace {ns}: deleting namespace {ns} leaves 2 Widgets stuck"), answer



def test_a_namespace_deletion_is_said_by_the_teardown_model_naming_what_it_waits_for(fake, tmp_path):
    """A Namespace's DELETE deletes its content: the guard says it as kfin preflight -f of a manifest holding that
    Namespace does (kfin.core.predict.teardown.of_deletion), the namespace's wait for the Widgets its deletion strands
    named, in the words of preflight -f's JSON."""
    cluster, group, ns = team(fake, tmp_path)
    with running_guard(cluster.kubeconfig) as url:
        answer = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace"))
    held = f"kfin: deleting namespace {ns} stays stuck: it waits for its content to go: w0, w1 left stuck"
    assert answer["warnings"] == [
        f"kfin: deleting namespace {ns} leaves 2 Widgets stuck ({group}/cleanup): their controller is deleted with "
        f"it; delete them first: kubectl delete widgets.{group} -n {ns} --all",
        held, f"kfin: the whole answer: kfin preflight namespace {ns}"]
    manifest = tmp_path / "namespace.yaml"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
    result = kfin("preflight", "-f", str(manifest), "-o", "json", "--kubeconfig", str(cluster.kubeconfig))
    [step] = json.loads(result.stdout)["steps"]
    reasons = {(s["object"]["name"], s["reason"]) for s in step["wouldBeStuck"]}
    assert (ns, held.split(": ", 2)[2]) in reasons  # the same words
    assert {name for name, _ in reasons} == {ns, "w0", "w1"}


def test_a_crds_deletion_names_the_custom_resources_that_would_stick_and_the_crds_wait(fake, tmp_path):
    """A CRD's DELETE deletes its custom resources (customresourcecleanup): the Widgets whose operator is not
    running stay, and the CRD waits for them."""
    cluster, group, ns = team(fake, tmp_path)
    crd = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}"
    with running_guard(cluster.kubeconfig) as url:
        answer = review(url, delete_of(cluster, crd, "CustomResourceDefinition"))
    assert answer["allowed"] is True, answer
    first, held, whole = answer["warnings"]
    assert first.startswith(f"kfin: deleting customresourcedefinition widgets.{group} leaves 2 Widgets stuck "
                            f"({group}/cleanup): its controller Pod"), first
    assert first.endswith(" first") and f"fix or scale up Pod {ns}/widget-operator-" in first
    assert held == (f"kfin: deleting customresourcedefinition widgets.{group} stays stuck: it waits for its custom "
                    "resources to go: w0, w1 left stuck")
    assert whole == f"kfin: the whole answer: kfin preflight customresourcedefinition widgets.{group}"


def test_a_namespace_holding_a_webhooks_service_is_said_to_wait_for_good_for_what_the_webhook_checks(fake, tmp_path):
    """The webhook's configuration is not in a namespace, its Service is: once the namespace's Pods (its endpoints)
    are gone, the webhook fails closed and the namespace controller cannot delete what it checks. Said by the
    teardown model, with the command that avoids it."""
    cluster = ScenarioCluster("fakeapi", fake.url, "admin-token", tmp_path, fake=fake)
    ns = cluster.name("hooked")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "checker", "namespace": ns},
                    "spec": {"ports": [{"port": 443}]}})  # its EndpointSlice made here, as the fake has no Pods
    cluster.create({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
                    "metadata": {"name": "checker-1", "namespace": ns,
                                 "labels": {"kubernetes.io/service-name": "checker"}},
                    "endpoints": [{"addresses": ["10.0.0.9"], "conditions": {"ready": True},
                                   "targetRef": {"kind": "Pod", "namespace": ns, "name": "checker-1"}}],
                    "ports": [{"port": 443, "protocol": "TCP"}]})  # served now by a Pod that goes with the namespace
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns}})
    name = cluster.name("checker")
    cluster.create({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                    "metadata": {"name": name},
                    "webhooks": [{"name": "check.kfin.test", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                                  "failurePolicy": "Fail", "clientConfig": {"service": {"namespace": ns, "name": "checker"}},
                                  "rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                                             "resources": ["configmaps"]}],
                                  "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}]})
    with running_guard(cluster.kubeconfig) as url:
        answer = review(url, delete_of(cluster, f"/api/v1/namespaces/{ns}", "Namespace"))
    assert answer["allowed"] is True
    [said] = [w for w in answer["warnings"] if "fails closed" in w]
    assert said.startswith(f"kfin: deleting namespace {ns} stays stuck: webhook check.kfin.test of "
                           f"ValidatingWebhookConfiguration {name} fails closed once its Service {ns}/checker loses "
                           "its Pods"), said
    assert said.endswith(f"; kubectl delete validatingwebhookconfiguration {name}"), said


def test_deleting_a_ready_nodes_object_is_allowed_with_the_warning_of_kfin_preflight(fake, tmp_path):
    """A node whose kubelet is alive, running a Pod: deleting its object drains nothing (kfin preflight's warning,
    issue 57); the guard says so rather than let it through without a word."""
    cluster = ScenarioCluster("fakeapi", fake.url, "admin-token", tmp_path, fake=fake)
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": cluster.name("node-a")}})
    name = node["metadata"]["name"]
    cluster.set_status(node, {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]})
    pod = cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0"}, "spec": {
        "nodeName": name, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    cluster.set_status(pod, {"phase": "Running"})
    with running_guard(cluster.kubeconfig) as url:
        answer = review(url, delete_of(cluster, f"/api/v1/nodes/{name}", "Node"))
        assert answer["allowed"] is True, answer
        first = answer["warnings"][0]
        assert first.startswith(f"kfin: deleting node {name} drains nothing: node {name} is Ready (its kubelet is "
                                f"alive) and runs Pod {cluster.namespace}/web-0"), answer["warnings"]
        assert f"kfin preflight node {name}" in answer["warnings"][1]


def test_without_tls_flags_kfin_guard_refuses_to_serve_plain_http(tmp_path):
    # kube-apiserver calls webhooks only over https: a guard serving plain HTTP unasked would never be called
    result = kfin("guard", "--kubeconfig", str(tmp_path / "none"))
    assert result.stderr.splitlines() == [
        "error: kube-apiserver calls webhooks only over https: give --tls-cert-file and --tls-private-key-file, or "
        "--self-signed (or --plain-http behind a proxy that terminates TLS)"]
    assert result.code == 2 and result.stdout == ""
    both = kfin("guard", "--plain-http", "--self-signed", "--kubeconfig", str(tmp_path / "none"))
    assert both.code == 2 and "--plain-http serves without TLS" in both.stderr


def test_help_says_the_default_listen_address_is_every_interface():
    result = kfin("guard", "--help")
    assert result.code == 0
    assert "listens on every interface" in " ".join(result.stdout.split())
