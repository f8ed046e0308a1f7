"""kfin guard (issue 42) called by the API server: kube-apiserver (and the fake, which learned to call a
ValidatingWebhookConfiguration's webhook for DELETE) POSTs the AdmissionReview of a namespace's deletion to kfin
guard over TLS (clientConfig.url to 127.0.0.1 with its caBundle); kfin's warnings come back as the DELETE's
Warning headers, and the deletion goes on. The webhook is deploy/guard/webhook.yaml's, its matchConditions as
they are (so the namespace controller's own deletes are not reviewed), narrowed to the scenario's namespaces."""

import base64
import copy
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from kfin.core.predict.guard import DENY_LABEL, MOST_RUNES, OVERRIDE_ANNOTATION
from tests.fakeapi.tls import self_signed
from tests.runner import kfin
from tests.scenario import served_by, service_webhook, until
from tests.scenarios.test_preflight import preflight, really_stuck, widget_operator
from tests.serve.test_serve import ROOT, _free_port

WEBHOOK = ROOT / "deploy" / "guard" / "webhook.yaml"


@contextmanager
def guard(cluster, tmp_path: Path, *args: str):
    """kfin guard over TLS on 127.0.0.1 (with cluster's admin kubeconfig), until the block ends: yields
    (its URL, the TLS context that trusts it, a function that stops it)."""
    cert, key = self_signed(tmp_path)
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "kfin", "guard", "--listen", f"127.0.0.1:{port}", "--tls-cert-file", str(cert),
         "--tls-private-key-file", str(key), "--kubeconfig", str(cluster.kubeconfig), *args],
        env=dict(os.environ, PYTHONPATH=str(ROOT)), stderr=subprocess.DEVNULL)
    url, trust = f"https://127.0.0.1:{port}", ssl.create_default_context(cafile=str(cert))

    def ready() -> bool:
        try:
            return urllib.request.urlopen(f"{url}/readyz", context=trust, timeout=2).status == 200
        except (OSError, urllib.error.URLError):
            return False

    def stop() -> None:
        process.terminate()
        process.wait(10)

    try:
        until(ready, "kfin guard to be ready")
        yield url, trust, cert, stop
    finally:
        stop()


def webhook(cluster, url: str, cert: Path, namespace: str) -> dict:
    """deploy/guard's ValidatingWebhookConfiguration, calling `url`, for the namespace `namespace` alone."""
    config = copy.deepcopy(yaml.safe_load(WEBHOOK.read_text()))
    config["metadata"] = {"name": cluster.name("kfin-guard")}
    [hook] = config["webhooks"]
    hook["clientConfig"] = {"url": f"{url}/validate", "caBundle": base64.b64encode(cert.read_bytes()).decode()}
    hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return cluster.create(config)


def reviews(url: str, trust) -> int:
    """Every review kfin guard answered so far (kfin_guard_reviews_total, all decisions)."""
    text = urllib.request.urlopen(f"{url}/metrics", context=trust, timeout=5).read().decode()
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
               if line.startswith("kfin_guard_reviews_total{"))


def team(cluster, widgets: int = 2) -> tuple[str, str]:
    """(group, namespace): a namespace holding its own Widget operator, and Widgets carrying its finalizer."""
    group = cluster.widget_crd()
    ns = cluster.name("team")
    widget_operator(cluster, group, ns, cluster_wide=False)
    for i in range(widgets):
        cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                        "metadata": {"name": f"w{i}", "namespace": ns, "finalizers": [f"{group}/cleanup"]}})
    return group, ns


def warned_when_ready(cluster, path: str, wanted: str) -> int:
    """Dry-run DELETEs of `path` until kfin's warning comes (its watch cache has seen what the scenario made: a
    watch follows the API server by a moment); how many were sent."""
    sent = 0

    def warned() -> bool:
        nonlocal sent
        sent += 1
        code, _, warnings = cluster.api.delete_warned(path, dry_run=True)
        assert code == 200, code
        return wanted in warnings

    until(warned, "kfin guard's warning on a dry-run DELETE")
    return sent


@pytest.mark.controllers
def test_deleting_a_namespace_that_strands_its_widgets_says_so_and_the_namespace_goes(cluster, tmp_path):
    group, ns = team(cluster)
    path = f"/api/v1/namespaces/{ns}"
    expected = (f"kfin: deleting namespace {ns} leaves 2 Widgets stuck ({group}/cleanup): their controller is "
                f"deleted with it; delete them first: kubectl delete widgets.{group} -n {ns} --all")
    held = f"kfin: deleting namespace {ns} stays stuck: it waits for its content to go: w0, w1 left stuck"
    # the guard's last warning points to `kfin preflight namespace NS`: asked before the guard is there (its own
    # dry runs would be reviewed too), it names what the guard names: the same Widgets stuck, the namespace's wait
    pointed = preflight(cluster, "namespace", ns)
    widgets_said = {(s["object"]["name"], s["finalizer"], s["verdict"]) for s in pointed["wouldBeStuck"]
                    if s["object"]["kind"] == "Widget"}
    assert widgets_said == {(f"w{i}", f"{group}/cleanup", "ORPHANED") for i in range(2)}, pointed
    waits = [s["reason"] for s in pointed["wouldBeStuck"] if s["object"]["kind"] == "Namespace"]
    assert held.removeprefix(f"kfin: deleting namespace {ns} stays stuck: ") in waits, waits
    first = {s["command"] for s in pointed["plan"] if (s["command"] or "").startswith("kubectl delete widgets")}
    assert first == {f"kubectl delete widgets.{group} w{i} -n {ns}" for i in range(2)}, pointed["plan"]
    table = kfin("preflight", "namespace", ns, "--kubeconfig", str(cluster.kubeconfig)).stdout
    assert "it waits for its content to go: w0, w1 left stuck" in " ".join(table.split()), table
    with guard(cluster, tmp_path) as (url, trust, cert, _):
        config = webhook(cluster, url, cert, ns)
        try:
            sent = warned_when_ready(cluster, path, expected)
            code, answer, warnings = cluster.api.delete_warned(path)
            assert code == 200 and answer["metadata"]["deletionTimestamp"], answer
            # the teardown model of the namespace's content (kfin preflight -f's): what it waits for, named
            assert warnings == [expected, held, f"kfin: the whole answer: kfin preflight namespace {ns}"]
            # what was predicted is what happens: the namespace controller deletes the operator with the rest
            widgets = f"/apis/{group}/v1/namespaces/{ns}/widgets"
            cluster.eventually(lambda: all((cluster.get(f"{widgets}/w{i}") or {}).get("metadata", {})
                                           .get("deletionTimestamp") for i in range(2)),
                               message="the namespace controller to delete the Widgets")
            cluster.eventually(lambda: not cluster.api.exists(f"/apis/apps/v1/namespaces/{ns}/deployments/"
                                                              "widget-operator"), message="the operator to go")
            stuck = really_stuck(cluster, ns)
            assert {("Widget", "w0"), ("Widget", "w1")} <= set(stuck), stuck
            cluster.eventually(lambda: ("Namespace", ns) in really_stuck(cluster), message="the namespace held")
            # the namespace controller's own deletes (the Widgets, the Deployment...) were never sent to kfin:
            # only the scenario's DELETEs were reviewed (matchConditions on request.userInfo.username)
            assert reviews(url, trust) == sent + 1
        finally:
            cluster.api.delete(cluster.path_of(config))


@pytest.mark.controllers
def test_with_the_guard_stopped_the_deletion_goes_on(cluster, tmp_path):
    group, ns = team(cluster, widgets=1)
    path = f"/api/v1/namespaces/{ns}"
    with guard(cluster, tmp_path) as (url, trust, cert, stop):
        config = webhook(cluster, url, cert, ns)
        try:
            warned_when_ready(cluster, path, f"kfin: the whole answer: kfin preflight namespace {ns}")
            stop()
            code, answer, warnings = cluster.api.delete_warned(path)  # failurePolicy Ignore: not called, not blocked
            assert code == 200 and answer["metadata"]["deletionTimestamp"] and warnings == [], (code, warnings)
        finally:
            cluster.api.delete(cluster.path_of(config))


@pytest.mark.controllers
def test_deny_mode_refuses_with_kfins_reason_and_the_override_lets_it_through(cluster, tmp_path):
    group, ns = team(cluster)
    path = f"/api/v1/namespaces/{ns}"
    cluster.api.merge_patch(path, {"metadata": {"labels": {DENY_LABEL: "deny"}}})
    with guard(cluster, tmp_path) as (url, trust, cert, _):
        config = webhook(cluster, url, cert, ns)
        try:
            def refused() -> bool:
                code, answer, _ = cluster.api.delete_warned(path, dry_run=True)
                return code == 403 and "kfin guard denies" in answer["message"]

            until(refused, "kfin guard's watch cache to see the Widgets")
            code, answer, warnings = cluster.api.delete_warned(path)
            assert code == 403 and answer["reason"] == "Forbidden", answer
            assert answer["message"].startswith(
                f'admission webhook "guard.kfin.dev" denied the request: kfin guard denies deleting namespace {ns}: '
                f"deleting namespace {ns} leaves 2 Widgets stuck"), answer
            assert answer["code"] == 403 and answer.get("details") is None, answer
            assert f"annotate it {OVERRIDE_ANNOTATION}=<why>" in answer["message"]
            assert warnings and warnings[0].startswith(f"kfin: deleting namespace {ns} leaves 2 Widgets stuck")
            assert cluster.get(path)["metadata"].get("deletionTimestamp") is None  # refused: nothing happened

            cluster.api.merge_patch(path, {"metadata": {"annotations": {OVERRIDE_ANNOTATION: "INC-42: team gone"}}})

            def overridden() -> bool:
                code, _, _ = cluster.api.delete_warned(path, dry_run=True)
                return code == 200

            until(overridden, "the override to be honoured")
            code, answer, warnings = cluster.api.delete_warned(path)
            assert code == 200 and answer["metadata"]["deletionTimestamp"], answer
            assert warnings[0].startswith(f"kfin: deleting namespace {ns} leaves 2 Widgets stuck")
        finally:
            cluster.api.delete(cluster.path_of(config))


def test_kfin_shows_what_the_api_server_warns_about_its_own_writes(cluster, tmp_path, monkeypatch):
    """kfin's client prints a write's Warning headers on stderr as kubectl does (an admission webhook's warnings,
    kfin guard's among them, come the same way): here a ValidatingAdmissionPolicy that warns (validationActions
    Warn) when a Widget's finalizer is removed. The text is shown as the server sent it, UTF-8 (the em dash: http.client
    reads headers as Latin-1, which printed it as 'â€”')."""
    from tests.runner import kfin

    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    group = cluster.widget_crd()
    admission = "admissionregistration.k8s.io/v1"
    policy = cluster.create({
        "apiVersion": admission, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": cluster.name("told")},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": ["v1"],
                                                         "operations": ["UPDATE"], "resources": ["widgets"]}]},
                 "validations": [{"expression": "has(object.metadata.finalizers) && "
                                                "size(object.metadata.finalizers) == size(oldObject.metadata.finalizers)",
                                  "message": "a finalizer was removed by hand — ask its owner"}]}})
    binding = cluster.create({
        "apiVersion": admission, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": cluster.name("told")},
        "spec": {"policyName": policy["metadata"]["name"], "validationActions": ["Warn"], "matchResources": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cluster.namespace}}}}})
    widget = cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                             "metadata": {"name": "w1", "finalizers": ["example.com/a", "example.com/b"]}})
    cluster.delete(widget)
    expected = (f"Warning: Validation failed for ValidatingAdmissionPolicy '{policy['metadata']['name']}' with "
                f"binding '{binding['metadata']['name']}': a finalizer was removed by hand — ask its owner")
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)

    def warned() -> bool:  # the policy is enforced a moment after it is made, on the real tier
        done = kfin("remove", f"widgets.{group}", "w1", "--finalizer", "example.com/a", "--confirm", "--force", *base)
        assert done.code == 0, done
        return expected in done.stderr.splitlines()

    assert warned() or cluster.eventually(lambda: kfin(
        "remove", f"widgets.{group}", "w1", "--finalizer", "example.com/b", "--confirm", "--force", *base).stderr
        .splitlines().count(expected) == 1, message="the policy's warning")
    dry = kfin("explain", f"widgets.{group}", "w1", *base)  # dry runs are kfin's own business: never shown
    assert "Warning: " not in dry.stderr
    cluster.strip_finalizers(widget)
    cluster.api.delete(cluster.path_of(binding))


def test_a_finalizer_the_object_already_had_is_not_warned_about_again(cluster, tmp_path, monkeypatch):
    """kube-apiserver warns of a custom resource's finalizer that is not domain-qualified when it is added, not when
    a removal leaves it in place (v1.36.2 on the real tier): kfin remove shows no warning then."""
    from tests.runner import kfin

    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    group = cluster.widget_crd()
    widget = cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                             "metadata": {"name": "odd", "finalizers": ["example.com/a", "cleanup"]}})
    cluster.delete(widget)
    done = kfin("remove", f"widgets.{group}", "odd", "--finalizer", "example.com/a", "--confirm", "--force",
                "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    assert done.code == 0 and "Warning: " not in done.stderr, done
    code, _, warnings = cluster.api.delete_warned(cluster.path_of(widget))  # no warning for a DELETE either
    assert code == 200 and warnings == []
    cluster.strip_finalizers(widget)


@pytest.mark.controllers
def test_a_deletecollection_is_reviewed_object_by_object(cluster, tmp_path):
    """kube-apiserver admits a deletecollection one object at a time (the store's DeleteCollection validates each
    deletion): kfin guard says of each Widget that it will stay stuck, its operator being down."""
    group, ns = team(cluster)
    collection = f"/apis/{group}/v1/namespaces/{ns}/widgets"
    with guard(cluster, tmp_path) as (url, trust, cert, _):
        config = webhook(cluster, url, cert, ns)
        try:
            until(lambda: any("w0 stays stuck" in w for w in
                              cluster.api.delete_warned(f"{collection}/w0", dry_run=True)[2]),
                  "kfin guard's watch cache to see the Widgets and their operator's Pod")
            code, _, warnings = cluster.api.delete_warned(collection)
            assert code == 200, code
            said = sorted(w for w in warnings if "stays stuck" in w)
            assert [w.split(" stays stuck")[0] for w in said] == [
                f"kfin: deleting widget w{i}" for i in range(2)], warnings
            assert all(f"its controller Pod {ns}/widget-operator-" in w for w in said), said
        finally:
            cluster.api.delete(cluster.path_of(config))
            for i in range(2):
                cluster.strip_finalizers(f"{collection}/w{i}")


@pytest.mark.controllers
def test_deleting_a_crd_names_the_custom_resources_that_stick_and_the_crd_waits_for_them(cluster, tmp_path):
    """A CRD's DELETE deletes its custom resources (kube-apiserver's customresourcecleanup): kfin guard says, by
    the teardown model, which of them stick (their operator is not running) and that the CRD waits for them;
    then it happens so."""
    group, ns = team(cluster)
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}"
    held = (f"kfin: deleting customresourcedefinition widgets.{group} stays stuck: it waits for its custom "
            "resources to go: w0, w1 left stuck")
    widgets = f"/apis/{group}/v1/namespaces/{ns}/widgets"
    # the guard's pointer, in its spelling (`kfin preflight customresourcedefinition NAME`), names the same wait
    pointed = preflight(cluster, "customresourcedefinition", f"widgets.{group}")
    said = {(s["object"]["kind"], s["object"]["name"], s["reason"]) for s in pointed["wouldBeStuck"]}
    assert ("CustomResourceDefinition", f"widgets.{group}", held.partition(" stays stuck: ")[2]) in said, said
    assert {("Widget", f"w{i}") for i in range(2)} <= {(kind, name) for kind, name, _ in said}, said
    with guard(cluster, tmp_path) as (url, trust, cert, _):
        config = webhook(cluster, url, cert, ns)  # a CRD is not in a namespace: the namespaceSelector lets it by
        try:
            warned_when_ready(cluster, path, held)
            code, answer, warnings = cluster.api.delete_warned(path)
            assert code == 200 and answer["metadata"]["deletionTimestamp"], answer
            [stuck] = [w for w in warnings if "leaves 2 Widgets stuck" in w]
            assert stuck.startswith(f"kfin: deleting customresourcedefinition widgets.{group} leaves 2 Widgets stuck "
                                    f"({group}/cleanup)"), warnings
            assert held in warnings
            assert all(len(w) <= MOST_RUNES for w in warnings), warnings  # one shortened with "…": sent as UTF-8
            cluster.eventually(lambda: all((cluster.get(f"{widgets}/w{i}") or {}).get("metadata", {})
                                           .get("deletionTimestamp") for i in range(2)),
                               message="customresourcecleanup to delete the Widgets")
            cluster.eventually(lambda: {("Widget", "w0"), ("Widget", "w1"), ("CustomResourceDefinition",
                                                                          f"widgets.{group}")}
                               <= set(really_stuck(cluster)), message="kfin stuck to see what was predicted")
        finally:
            cluster.api.delete(cluster.path_of(config))
            for i in range(2):
                cluster.strip_finalizers(f"{widgets}/w{i}")


@pytest.mark.controllers
def test_deleting_a_namespace_that_holds_a_webhooks_service_warns_it_will_wait_for_good(cluster, tmp_path):
    """A webhook checking DELETE of ConfigMaps, failing closed, its configuration cluster-wide, its Service in the
    namespace, served by a Pod of the namespace (its EndpointSlice says so): kfin guard says, by the teardown model,
    that the namespace controller will not be able to delete the ConfigMap once that Pod is gone, and that
    deleting the configuration avoids it; then the namespace stays, held by the webhook. (Neither tier can call
    a Service's backend, so the webhook fails closed from the first of the namespace controller's DELETEs: the
    end is the one predicted, sooner.)"""
    ns = cluster.name("hooked")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "checker", "namespace": ns},
                    "spec": {"ports": [{"port": 443, "targetPort": 8443}]}})
    served_by(cluster, ns, pod="checker-1")
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns}})
    name = cluster.name("checker")
    checker = cluster.create(service_webhook(name, ns, {"operations": ["DELETE"], "apiGroups": [""],
                                                        "apiVersions": ["v1"], "resources": ["configmaps"]}))
    path = f"/api/v1/namespaces/{ns}"
    head = (f"kfin: deleting namespace {ns} stays stuck: webhook check.kfin.test of ValidatingWebhookConfiguration "
            f"{name} fails closed once its Service {ns}/checker")
    command = f"; kubectl delete validatingwebhookconfiguration {name}"

    def said(warnings: list[str]) -> str | None:
        return next((w for w in warnings if w.startswith(head) and w.endswith(command)), None)

    with guard(cluster, tmp_path) as (url, trust, cert, _):
        config = webhook(cluster, url, cert, ns)
        try:
            until(lambda: said(cluster.api.delete_warned(path, dry_run=True)[2]), "kfin guard's warning")
            code, answer, warnings = cluster.api.delete_warned(path)
            assert code == 200 and answer["metadata"]["deletionTimestamp"], answer
            assert said(warnings), warnings
            # what happens: the namespace controller's DELETE of the ConfigMap is refused, the namespace waits
            cluster.eventually(lambda: "check.kfin.test" in (really_stuck(cluster).get(("Namespace", ns)) or {})
                               .get("blocker", ""), message="kfin stuck to name the webhook holding the namespace")
            assert cluster.get(f"{path}/configmaps/settings") is not None
        finally:
            cluster.api.delete(cluster.path_of(config))
            cluster.api.delete(cluster.path_of(checker))
