"""The dry run's answer decides, not a configuration. A Widget whose operator is gone keeps its finalizer, and
admission webhooks (called by URL on 127.0.0.1 with their caBundle, served by this test) or a
MutatingAdmissionPolicy meet every UPDATE of it: one that works and lets the removal through is no gate (ORPHANED,
and kfin remove removes it), one that denies it is named from the server's answer, and one that puts the
finalizer back (the server accepts the removal, and the object it returns still holds the finalizer: kube-apiserver
takes it, since the finalizer was there before) is the root cause: BLOCKED, never "kfin remove ... then it goes by
itself", and a forced removal fails with the audit log saying nothing was removed."""

import base64
import json
import ssl
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kfin.errors import ExitCode
from tests.fakeapi.tls import self_signed
from tests.runner import kfin

ADMISSION = "admissionregistration.k8s.io/v1"


@pytest.fixture(autouse=True)
def audit_log(tmp_path, monkeypatch):
    path = tmp_path / "audit.jsonl"
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(path))
    return path


class Webhooks:
    """Admission webhooks over HTTPS on 127.0.0.1, one per path: /label adds a label (a JSON Patch) and allows,
    /allow allows, /deny denies, /readd puts `finalizer` back when the object lost it. Each review is kept."""

    def __init__(self, url: str, ca_bundle: str):
        self.url, self.ca_bundle = url, ca_bundle
        self.finalizer = ""
        self.reviews: list[tuple[str, dict]] = []  # (path, the AdmissionReview's request)

    def answer(self, path: str, request: dict) -> dict:
        self.reviews.append((path, request))
        response: dict = {"uid": request["uid"], "allowed": True}
        meta = (request.get("object") or {}).get("metadata") or {}
        patch = None
        if path == "/label":
            patch = [{"op": "add", "path": "/metadata/labels", "value": dict(meta.get("labels") or {}, seen="yes")}]
        elif path == "/deny":
            response = {"uid": request["uid"], "allowed": False,
                        "status": {"code": 403, "message": "finalizers stay on widgets"}}
        elif path == "/readd" and request.get("object") and self.finalizer not in (meta.get("finalizers") or []):
            patch = ([{"op": "add", "path": "/metadata/finalizers/-", "value": self.finalizer}]
                     if meta.get("finalizers") else
                     [{"op": "add", "path": "/metadata/finalizers", "value": [self.finalizer]}])
        if patch is not None:
            response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps(patch).encode()).decode())
        return response

    def called(self, path: str) -> int:
        return sum(1 for p, _ in self.reviews if p == path)


@contextmanager
def webhooks(tmp_path):
    cert, key = self_signed(tmp_path)
    hooks: Webhooks

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                               "response": hooks.answer(self.path.split("?")[0], review["request"])}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    hooks = Webhooks(f"https://127.0.0.1:{server.server_address[1]}", base64.b64encode(cert.read_bytes()).decode())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hooks
    finally:
        server.shutdown()
        server.server_close()


def orphaned_widget(cluster) -> tuple[str, str, str]:
    """(group, the Widget's path, its finalizer): Widget w1 being deleted, whose operator is gone (no controller
    may update Widgets: ORPHANED)."""
    group = cluster.widget_crd()
    finalizer = f"{group}/cleanup"
    widget = cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                             "metadata": {"name": "w1", "finalizers": [finalizer]}})
    path = cluster.path_of(widget)
    cluster.delete(path)
    return group, path, finalizer


def webhook_configuration(cluster, kind: str, hooks: Webhooks, path: str, group: str) -> dict:
    """A `kind` (Mutating- or ValidatingWebhookConfiguration) failing closed, calling `path` of `hooks` by URL on
    every UPDATE of Widgets in the scenario's namespace."""
    name = {"/label": "label", "/allow": "allow", "/deny": "deny", "/readd": "readd"}[path]
    return cluster.create({
        "apiVersion": ADMISSION, "kind": kind, "metadata": {"name": cluster.name(name)},
        "webhooks": [{"name": f"{name}.kfin.test", "failurePolicy": "Fail", "sideEffects": "None",
                      "admissionReviewVersions": ["v1"], "timeoutSeconds": 5,
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cluster.namespace}},
                      "clientConfig": {"url": f"{hooks.url}{path}", "caBundle": hooks.ca_bundle},
                      "rules": [{"operations": ["UPDATE"], "apiGroups": [group], "apiVersions": ["v1"],
                                 "resources": ["widgets"]}]}]})


def called_when_ready(cluster, hooks: Webhooks, path: str, widget: str):
    """Wait until the API server calls the webhook (kube-apiserver takes a new configuration a moment after it is
    created): dry-run UPDATEs of the Widget (a label) until one reaches it."""
    def called() -> bool:
        cluster.api.send("PATCH", f"{widget}?dryRun=All", {"metadata": {"labels": {"probe": "yes"}}},
                         content_type="application/merge-patch+json")
        return hooks.called(path) > 0

    cluster.eventually(called, message=f"the API server to call {path}")


def base(cluster) -> tuple[str, ...]:
    return ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)


def explained(cluster, group: str, *flags: str) -> dict:
    result = kfin("explain", f"widgets.{group}", "w1", *base(cluster), "-o", "json", *flags)
    assert result.code in (0, 1), result.stderr
    return json.loads(result.stdout)


def records(log) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("kind,path", [("MutatingWebhookConfiguration", "/label"),
                                       ("ValidatingWebhookConfiguration", "/allow")])
def test_a_working_url_webhook_is_no_gate_and_the_removal_goes_through(cluster, tmp_path, audit_log, kind, path):
    group, widget, finalizer = orphaned_widget(cluster)
    with webhooks(tmp_path) as hooks:
        config = webhook_configuration(cluster, kind, hooks, path, group)
        try:
            called_when_ready(cluster, hooks, path, widget)
            calls = hooks.called(path)
            report = explained(cluster, group)
            [finding] = report["findings"]
            assert finding["verdict"] == "ORPHANED", finding
            assert "which kfin cannot check" not in json.dumps(finding)
            # the server was asked: kfin's removal as a dry run, which the webhook saw
            assert any(line.startswith(f"dry run (dryRun=All) of PATCH widgets.{group}/w1 in namespace "
                                       f"{cluster.namespace} as kfin's user: accepted") for line in finding["evidence"])
            reached = [r["dryRun"] for p, r in hooks.reviews[calls:] if p == path]
            assert reached and all(reached), hooks.reviews[calls:]
            assert report["plan"]["steps"][0]["command"] == (
                f"kfin remove widgets.{group} w1 -n {cluster.namespace} --finalizer {finalizer} --confirm")
            # without a dry run, the configuration alone judges, and says so
            [unasked] = explained(cluster, group, "--no-dry-run")["findings"]
            assert unasked["verdict"] == "BLOCKED" and "which kfin cannot check" in unasked["condition"], unasked
            assert "judged from configuration alone: no dry run was sent (--no-dry-run)" in unasked["evidence"]
            removed = kfin("remove", f"widgets.{group}", "w1", *base(cluster), "--confirm")
            assert removed.code == ExitCode.OK, removed
            [record] = records(audit_log)
            assert record["result"] == "removed" and record["removed"] == [finalizer], record
            cluster.eventually(lambda: cluster.get(widget) is None, message="the Widget to go")
        finally:
            cluster.api.delete(cluster.path_of(config))


def test_a_url_webhook_that_denies_the_removal_is_named_from_the_servers_answer(cluster, tmp_path, audit_log):
    group, widget, finalizer = orphaned_widget(cluster)
    with webhooks(tmp_path) as hooks:
        config = webhook_configuration(cluster, "ValidatingWebhookConfiguration", hooks, "/deny", group)
        name = config["metadata"]["name"]
        try:
            called_when_ready(cluster, hooks, "/deny", widget)
            report = explained(cluster, group)
            [finding] = report["findings"]
            assert finding["verdict"] == "BLOCKED", finding
            assert finding["condition"] == (f"webhook deny.kfin.test of ValidatingWebhookConfiguration {name} denies "
                                            f"the removal of the finalizer of widgets.{group} by you: finalizers stay "
                                            "on widgets"), finding
            assert any(line.startswith(f"dry run (dryRun=All) of PATCH widgets.{group}/w1 in namespace "
                                       f"{cluster.namespace} as kfin's user: 403") for line in finding["evidence"])
            [root] = report["chain"]["rootCauses"]
            assert root["object"] == f"ValidatingWebhookConfiguration.admissionregistration.k8s.io/{name}"
            refused = kfin("remove", f"widgets.{group}", "w1", *base(cluster), "--finalizer", finalizer, "--confirm")
            assert refused.code == ExitCode.REFUSED and "finalizers stay on widgets" in refused.stderr, refused
            assert records(audit_log) == [] and cluster.get(widget)["metadata"]["finalizers"] == [finalizer]
        finally:
            cluster.api.delete(cluster.path_of(config))
            cluster.strip_finalizers(widget)


def put_back_is_blocked(cluster, group: str, widget: str, finalizer: str, audit_log, named: str, root: str,
                        first_note: str, instead: str):
    """What kfin says and does once admission puts the finalizer back (`named`: what puts it back, in kfin's
    words; `root`: the root cause's object; `first_note` and `instead`: the plan's first step and its
    alternative)."""
    command = f"kfin remove widgets.{group} w1 -n {cluster.namespace} --finalizer {finalizer} --confirm"
    report = explained(cluster, group)
    [finding] = report["findings"]
    assert finding["verdict"] == "BLOCKED", finding
    assert finding["condition"].startswith(f"the server accepts the removal of {finalizer} but puts it back at "
                                           f"admission: {named} puts it back"), finding
    assert f"the object it returned still holds {finalizer}" in finding["evidence"]
    assert finding["removeCommand"] is None
    assert [r["object"] for r in report["chain"]["rootCauses"]] == [root]
    first = report["plan"]["steps"][0]
    assert first["command"] is None and first["note"] == first_note, first
    # the removal comes once the server no longer puts it back, never as the plan's first step
    assert [m["command"] for m in first["more"]] == [instead, command], first
    assert all(step["command"] != command for step in report["plan"]["steps"])
    [item] = json.loads(kfin("stuck", *base(cluster), "-o", "json").stdout)["items"]
    assert item["verdict"] == "BLOCKED", item

    plain = kfin("remove", f"widgets.{group}", "w1", *base(cluster), "--finalizer", finalizer, "--server-dry-run")
    assert plain.code == ExitCode.REFUSED and named in " ".join(plain.stderr.split()), plain
    asked = kfin("remove", f"widgets.{group}", "w1", *base(cluster), "--finalizer", finalizer, "--server-dry-run",
                 "--force")
    said = " ".join(asked.stderr.split())
    assert asked.code == ExitCode.API, asked
    assert (f"the API server accepted the change (dryRun=All), but the object it returned still holds {finalizer}: "
            f"put back at admission: {named} puts it back") in said, said
    assert "server dry run: the API server accepted the change (dryRun=All)\n" not in asked.stdout
    assert records(audit_log) == []

    forced = kfin("remove", f"widgets.{group}", "w1", *base(cluster), "--finalizer", finalizer, "--confirm", "--force")
    said = " ".join(forced.stderr.split())
    assert forced.code == ExitCode.API, forced
    assert f"put back at admission: {named} puts it back" in said, said
    [record] = records(audit_log)
    assert record["result"] == "failed" and record["removed"] == [] and record["finalizersAfter"] == [finalizer]
    assert cluster.get(widget)["metadata"]["finalizers"] == [finalizer]


def test_a_mutating_webhook_that_puts_the_finalizer_back_is_the_root_cause(cluster, tmp_path, audit_log):
    group, widget, finalizer = orphaned_widget(cluster)
    with webhooks(tmp_path) as hooks:
        hooks.finalizer = finalizer
        config = webhook_configuration(cluster, "MutatingWebhookConfiguration", hooks, "/readd", group)
        name = config["metadata"]["name"]
        try:
            called_when_ready(cluster, hooks, "/readd", widget)
            put_back_is_blocked(
                cluster, group, widget, finalizer, audit_log,
                named=f"webhook readd.kfin.test of MutatingWebhookConfiguration {name}",
                root=f"MutatingWebhookConfiguration.admissionregistration.k8s.io/{name}",
                first_note=f"change what webhook readd.kfin.test of MutatingWebhookConfiguration {name} does (its "
                           f"operator's configuration) so that it no longer puts {finalizer} back",
                instead=f"kubectl delete mutatingwebhookconfiguration {name}")
            # the removals kfin sent reached the webhook, which answered each with the finalizer back
            assert any(r["dryRun"] is False for p, r in hooks.reviews if p == "/readd")
        finally:
            cluster.api.delete(cluster.path_of(config))
            cluster.strip_finalizers(widget)


READD_JSON_PATCH = (
    "has(object.metadata.finalizers) ? "
    "[JSONPatch{op: 'add', path: '/metadata/finalizers/-', value: '%(f)s'}] : "
    "[JSONPatch{op: 'add', path: '/metadata/finalizers', value: ['%(f)s']}]"
)
READD_APPLY = "Object{metadata: Object.metadata{finalizers: ['%(f)s']}}"


@pytest.mark.parametrize("patch_type", ["JSONPatch", "ApplyConfiguration"])
def test_a_mutating_admission_policy_that_puts_the_finalizer_back_is_the_root_cause(cluster, audit_log, patch_type):
    group, widget, finalizer = orphaned_widget(cluster)
    if patch_type == "JSONPatch":
        mutation = {"patchType": "JSONPatch", "jsonPatch": {"expression": READD_JSON_PATCH % {"f": finalizer}}}
    else:
        mutation = {"patchType": "ApplyConfiguration",
                    "applyConfiguration": {"expression": READD_APPLY % {"f": finalizer}}}
    policy = cluster.create({
        "apiVersion": ADMISSION, "kind": "MutatingAdmissionPolicy", "metadata": {"name": cluster.name("keep")},
        "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": ["v1"],
                                                         "operations": ["UPDATE"], "resources": ["widgets"]}]},
                 "matchConditions": [{"name": "lost-it", "expression": "!has(object.metadata.finalizers) || "
                                                                       f"!('{finalizer}' in object.metadata.finalizers)"}],
                 "mutations": [mutation]}})
    binding = cluster.create({
        "apiVersion": ADMISSION, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": cluster.name("keep")},
        "spec": {"policyName": policy["metadata"]["name"], "matchResources": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cluster.namespace}}}}})
    pname, bname = policy["metadata"]["name"], binding["metadata"]["name"]
    try:
        def enforced() -> bool:  # kube-apiserver enforces a new policy a moment after it is created
            code, answer = cluster.api.send("PATCH", f"{widget}?dryRun=All", {"metadata": {"finalizers": None}},
                                            content_type="application/merge-patch+json")
            return code == 200 and finalizer in (answer["metadata"].get("finalizers") or [])

        cluster.eventually(enforced, message="the policy to be enforced")
        put_back_is_blocked(
            cluster, group, widget, finalizer, audit_log,
            named=f"MutatingAdmissionPolicy {pname} (binding {bname})",
            root=f"MutatingAdmissionPolicy.admissionregistration.k8s.io/{pname}",
            first_note=f"change MutatingAdmissionPolicy {pname} (or its binding {bname}) so that it no longer puts "
                       f"{finalizer} back",
            instead=f"kubectl delete mutatingadmissionpolicybinding {bname}")
        report = explained(cluster, group)
        assert f"its {patch_type} mutation adds it" in report["findings"][0]["condition"]
        # without a dry run, kfin's evaluation of the policy alone judges, and says so
        [unasked] = explained(cluster, group, "--no-dry-run")["findings"]
        assert unasked["verdict"] == "BLOCKED" and unasked["condition"] == (
            f"MutatingAdmissionPolicy {pname} (binding {bname}) puts {finalizer} back on every UPDATE that removes it "
            f"(its {patch_type} mutation adds it)"), unasked
        assert "judged from configuration alone: no dry run was sent (--no-dry-run)" in unasked["evidence"]
    finally:
        cluster.api.delete(cluster.path_of(binding))
        cluster.api.delete(cluster.path_of(policy))
        cluster.strip_finalizers(widget)


@pytest.mark.controllers
@pytest.mark.parametrize("path", ["/allow", "/deny"])
def test_a_url_webhook_on_the_namespace_controllers_deletes_is_judged_by_the_servers_answer(cluster, tmp_path, path):
    """A webhook called by URL, failing closed, on every DELETE of the ConfigMaps of a namespace: kfin cannot call
    it itself, so its configuration proves nothing. The namespace controller's DELETE sent as a dry run decides:
    one that allows leaves nothing predicted (the namespace goes), one that denies is named from the server's
    answer, never as a webhook "which kfin cannot check"."""
    ns = cluster.name("hooked")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    made = cluster.api.create(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "ledger"}})
    name = path.strip("/")
    with webhooks(tmp_path) as hooks:
        config = cluster.create({
            "apiVersion": ADMISSION, "kind": "ValidatingWebhookConfiguration", "metadata": {"name": cluster.name(name)},
            "webhooks": [{"name": f"{name}.kfin.test", "failurePolicy": "Fail", "sideEffects": "None",
                          "admissionReviewVersions": ["v1"], "timeoutSeconds": 5,
                          "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                          "clientConfig": {"url": f"{hooks.url}{path}", "caBundle": hooks.ca_bundle},
                          "rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["configmaps"]}]}]})
        ledger = f"/api/v1/namespaces/{ns}/configmaps/{made['metadata']['name']}"
        cluster.eventually(lambda: cluster.api.send("DELETE", f"{ledger}?dryRun=All")[0] and hooks.called(path) > 0,
                           message=f"the API server to call {path}")
        predicted = kfin("preflight", "ns", ns, "-o", "json", "--exit-code", "--kubeconfig", str(cluster.kubeconfig))
        report = json.loads(predicted.stdout)
        reasons = [s["reason"] for s in report["wouldBeStuck"]]
        assert not [r for r in reasons if "cannot check" in r], reasons
        if path == "/allow":
            assert predicted.code == ExitCode.OK and reasons == [], report
            cluster.delete(f"/api/v1/namespaces/{ns}")
            cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to go")
        else:
            assert predicted.code == ExitCode.FOUND, predicted
            [held] = [s for s in report["wouldBeStuck"] if s["object"]["kind"] == "Namespace"]
            assert held["verdict"] == "BLOCKED" and 'admission webhook "deny.kfin.test" denied the request' in \
                held["reason"], held
            assert config["metadata"]["name"] in json.dumps(report["plan"]), report["plan"]
