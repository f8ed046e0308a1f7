"""A real operator that nobody here wrote: the widget operator of tests/kopf_operator.py, built on kopf (the Python
operator framework), run by the real `kopf run` as a process of its own against the control plane, as the identity a
cluster would give it. kfin is asked about its finalizer while kopf holds a deletion, while its handler keeps
failing, after kopf is stopped, while a mutating webhook puts the finalizer back after kopf removes it, and while
kopf runs on a developer's machine.

What kopf does, as read in its source (kopf 1.45: kopf/_cogs/configs/configuration.py, kopf/_core/reactor/
processing.py, kopf/_cogs/clients/patching.py, auth.py) and seen on the real tier:
- It adds its finalizer `kopf.zalando.org/KopfFinalizerMarker` (settings.persistence.finalizer) to every object of
  a resource that has an on.delete handler, with a JSON patch (a `test` of the resourceVersion, then `add`), and
  removes it the same way once every on.delete handler has succeeded.
- It sends no fieldManager: kube-apiserver names the manager after its User-Agent, `kopf/<version>`, so
  managedFields show the finalizer under manager "kopf", operation Update. Only if the object had managed fields
  already: one created with nothing but a name has none, and kube-apiserver then tracks no later Update either
  (k8s.io/apiserver pkg/endpoints/handlers/fieldmanager, skipNonAppliedManager), so kopf's write leaves no trace.
  The scenarios' Widgets have a spec, as any real one does.
- A handler's failure is logged ("Handler 'x' failed temporarily: ...", at ERROR) and kept in its progress
  annotation (`kopf.zalando.org/<handler>`: its message and retry count). Kopf 1.45 posts a log message as an Event
  only when settings.posting.loggers is set (off by default), and then ERROR as type "Error", not "Warning"; only
  kopf.event(), kopf.warn() and kopf.exception() post one otherwise.
- A removal that a mutating webhook puts back changes nothing: the object is written unchanged (no new
  resourceVersion, no watch event). kopf tries twice, then waits for a change that does not come; it does not try
  again when the webhook goes (seen on the real tier: the Widget was still there 40 s after its configuration
  was deleted) until something changes the object or kopf restarts.
- `kopf run` lists and watches CustomResourceDefinitions and Namespaces cluster-wide even with --namespace: its
  documented RBAC grants those, and the objects' verbs in their namespace.

kopf is a process of its own, speaking to the API server through aiohttp with the credentials of a kubeconfig, on
both tiers; what waits for it waits on the fake too (`eventually(..., external=True)`). Two scenarios run on the real
tier only (real_only): a mutating webhook called by URL, and a User with a client certificate the cluster signed."""

import base64
import json
import os
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kfin.errors import ExitCode
from tests.fakeapi.tls import self_signed
from tests.runner import kfin
from tests.scenarios.test_explain import running_deployment
from tests.serve.test_serve import _free_port

ROOT = Path(__file__).resolve().parents[2]
OPERATOR = ROOT / "tests" / "kopf_operator.py"
MARKER = "kopf.zalando.org/KopfFinalizerMarker"  # kopf's default settings.persistence.finalizer
RBAC = "rbac.authorization.k8s.io/v1"
# What tests/fakeapi cannot do, for the scenarios that need it (the others run on both tiers: kopf's watches, JSON
# patches and field manager behave there as on the real tier)
WEBHOOK_BY_URL = ("a mutating webhook called by URL: the fake calls a webhook's URL for a validating DELETE only, and "
                  "applies no webhook's patch")
SIGNED_USER = ("a User with a client certificate signed through the CSR API: the fake authenticates bearer tokens only "
               "and signs no certificate")

pytestmark = pytest.mark.controllers


class KopfOperator:
    """`kopf run` of tests/kopf_operator.py as a process: standalone (no peering), watching one namespace, with the
    credentials of `kubeconfig`; its log in `workdir`."""

    def __init__(self, cluster, group: str, kubeconfig: Path, workdir: Path):
        self.cluster, self.group, self.kubeconfig = cluster, group, kubeconfig
        self.release = workdir / "kopf-release"
        self.release.mkdir(exist_ok=True)
        self.log_path = workdir / "kopf.log"
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> "KopfOperator":
        """Starts it and returns once its liveness endpoint answers (it has logged in); raises with its log when it
        exits or does not answer within the scenario's wait."""
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), KFIN_KOPF_GROUP=self.group,
                   KFIN_KOPF_RELEASE=str(self.release))
        argv = [sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", self.cluster.namespace,
                f"--liveness=http://127.0.0.1:{self.port}/healthz", str(OPERATOR)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            cwd=ROOT, env=env)
        self.cluster.eventually(self._alive, external=True, message=f"kopf's liveness endpoint (port {self.port})")
        return self

    def _alive(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"kopf exited with {self.process.returncode}:\n{self.log()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # kopf stops its watches and handlers at SIGTERM
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def began(self, name: str) -> bool:
        """Whether its on.delete handler began cleaning up after Widget `name` (the handler says so)."""
        return (self.release / f"{name}.begun").exists()

    def let_go(self, name: str) -> None:
        """Lets its on.delete handler for Widget `name` finish (the clean-up it stands for is done)."""
        (self.release / name).touch()

    def fail(self, name: str, message: str) -> None:
        """Makes its on.delete handler for Widget `name` fail with `message` (kopf.TemporaryError) until `recover`."""
        (self.release / f"{name}.failing").write_text(message)

    def recover(self, name: str) -> None:
        (self.release / f"{name}.failing").unlink()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else "(no log)"


@pytest.fixture
def operators(tmp_path):
    """Starts kopf operators for a scenario (`start(cluster, group, kubeconfig)`) and always stops them; their log
    is printed at teardown, which pytest shows when the scenario fails."""
    started: list[KopfOperator] = []

    def start(cluster, group: str, kubeconfig: Path) -> KopfOperator:
        workdir = tmp_path / f"kopf-{len(started)}"
        workdir.mkdir()
        operator = KopfOperator(cluster, group, kubeconfig, workdir)
        started.append(operator)
        return operator.start()

    try:
        yield start
    finally:
        for operator in started:
            operator.stop()
            print(f"----- kopf's log ({operator.log_path}) -----\n{operator.log()}")


# ----- the operator's identity ---------------------------------------------------------------------------------------
def grant_kopf(cluster, group: str, subject: dict) -> None:
    """kopf's documented RBAC for an operator of widgets in one namespace, granted to `subject`: watch and patch the
    widgets and post Events there; list and watch CustomResourceDefinitions and Namespaces cluster-wide."""
    cluster.create({"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "widget-operator"}, "rules": [
        {"apiGroups": [group], "resources": ["widgets"], "verbs": ["get", "list", "watch", "patch", "update"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create"]}]})
    cluster.create({"apiVersion": RBAC, "kind": "RoleBinding", "metadata": {"name": "widget-operator"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-operator"},
                    "subjects": [subject]})
    name = cluster.name("widget-operator-scan")
    cluster.create({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": [
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]}]})
    cluster.create({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                    "subjects": [subject]})


def service_account_kubeconfig(cluster, group: str) -> Path:
    """ServiceAccount widget-operator, granted kopf's RBAC, and a kubeconfig with a token of it (TokenRequest): kopf
    run with it acts as the operator's Pod would."""
    cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "widget-operator"}})
    grant_kopf(cluster, group, {"kind": "ServiceAccount", "name": "widget-operator", "namespace": cluster.namespace})
    token = cluster.api.create(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/widget-operator/token",
                               {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                "spec": {"expirationSeconds": 3600}})["status"]["token"]
    return cluster.write_kubeconfig(cluster.workdir / "kubeconfig-widget-operator", token, "widget-operator")


def deployed_operator_kubeconfig(cluster, group: str) -> Path:
    """The operator as deployed in the cluster: Deployment widget-operator running as ServiceAccount widget-operator,
    its Pod Running and Ready (as a kubelet would say); a kubeconfig of that ServiceAccount for the kopf process."""
    kubeconfig = service_account_kubeconfig(cluster, group)
    running_deployment(cluster, "widget-operator", "widget-operator")
    return kubeconfig


def developer_kubeconfig(cluster, group: str, user: str) -> Path:
    """A developer's kubeconfig, as `kopf run` on a laptop uses it: the User `user` (group developers) with a client
    certificate the cluster signed (a CertificateSigningRequest for kubernetes.io/kube-apiserver-client, approved by
    the admin, signed by kube-controller-manager), and kopf's RBAC granted to that User. No workload runs as it."""
    key, request = cluster.workdir / f"{user}.key", cluster.workdir / f"{user}.csr"
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-subj", f"/CN={user}/O=developers", "-keyout", str(key), "-out", str(request)],
                   check=True, capture_output=True)
    csr = cluster.create({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                          "metadata": {"name": cluster.name(user)},
                          "spec": {"request": base64.b64encode(request.read_bytes()).decode(),
                                   "signerName": "kubernetes.io/kube-apiserver-client", "expirationSeconds": 3600,
                                   "usages": ["client auth"]}})
    cluster.api.ok("PUT", cluster.path_of(csr) + "/approval", dict(csr, status={"conditions": [{
        "type": "Approved", "status": "True", "reason": "ScenarioDeveloper", "message": "a developer's access"}]}))
    certificate = cluster.eventually(lambda: (cluster.get(csr).get("status") or {}).get("certificate"),
                                     message="kube-controller-manager to sign the developer's certificate")
    grant_kopf(cluster, group, {"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"})
    path = cluster.write_kubeconfig(cluster.workdir / f"kubeconfig-{user}", "", user)
    config = json.loads(path.read_text())
    config["users"] = [{"name": user, "user": {"client-certificate-data": certificate,
                                               "client-key-data": base64.b64encode(key.read_bytes()).decode()}}]
    path.write_text(json.dumps(config, indent=1))
    return path


# ----- the scene -----------------------------------------------------------------------------------------------------
def handled_widget(cluster, group: str, name: str = "w1") -> dict:
    """Widget `name` (with a spec, as a user applies it) once the running operator has added kopf's finalizer; checks
    that managedFields name kopf's field manager for it, as kfin reads them."""
    widget = cluster.create({"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name},
                             "spec": {"size": 1}})
    current = cluster.eventually(lambda: (lambda w: w if MARKER in (w["metadata"].get("finalizers") or []) else None)(
        cluster.get(widget)), external=True, message="kopf to add its finalizer")
    managers = [e["manager"] for e in current["metadata"].get("managedFields") or []
                if f'v:"{MARKER}"' in e.get("fieldsV1", {}).get("f:metadata", {}).get("f:finalizers", {})]
    assert managers == ["kopf"], current["metadata"].get("managedFields")
    return widget


def explain(cluster, group: str, name: str = "w1") -> dict:
    result = kfin("explain", f"widgets.{group}", name, "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig),
                  "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result
    return json.loads(result.stdout)


def kopf_finding(report: dict) -> dict:
    [finding] = [f for f in report["findings"] if f["finalizer"] == MARKER]
    return finding


def stuck_row(cluster, name: str = "w1") -> dict:
    result = kfin("stuck", "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result
    [row] = [item for item in json.loads(result.stdout)["items"] if item["name"] == name]
    return row


def waits(report: dict) -> bool:
    """Whether the plan has the user wait for someone to act (a step "wait: ...")."""
    return any((step.get("note") or "").startswith("wait") for step in report["plan"]["steps"])


def gone(cluster, group: str, widget: dict) -> None:
    """`kfin wait` follows the Widget to its end (by its uid: kopf may have removed it already)."""
    name = widget["metadata"]["name"]
    result = kfin("wait", f"widgets.{group}", name, "--uid", widget["metadata"]["uid"], "-n", cluster.namespace,
                  "--kubeconfig", str(cluster.kubeconfig), "--timeout", "60s")
    assert result.code == ExitCode.OK, result
    assert f"{cluster.namespace}/{name} is gone" in result.stdout, result.stdout


# ----- the scenarios -------------------------------------------------------------------------------------------------
def test_kopf_holding_a_deletion_in_its_handler_is_waiting_and_the_widget_goes_when_it_is_done(cluster, operators):
    """kopf runs as its Deployment's ServiceAccount and its on.delete handler is cleaning up: the remover runs and
    added that finalizer (field manager "kopf"), so kfin says WAITING, in explain and stuck alike. Once the handler is
    done, kopf removes its finalizer and the Widget really goes."""
    group = cluster.widget_crd()
    operator = operators(cluster, group, deployed_operator_kubeconfig(cluster, group))
    widget = handled_widget(cluster, group)
    cluster.delete(widget)
    cluster.eventually(lambda: operator.began("w1"), external=True, message="kopf's on.delete handler to begin")

    report = explain(cluster, group)
    finding = kopf_finding(report)
    assert finding["verdict"] == "WAITING" and finding["controllerAlive"] is True, finding
    assert "widget-operator" in finding["condition"], finding
    assert f'managedFields: {MARKER} was added by field manager "kopf"' in finding["evidence"], finding["evidence"]
    assert waits(report) and not [step for step in report["plan"]["steps"] if step.get("command")], report["plan"]
    assert stuck_row(cluster)["verdict"] == "WAITING"

    operator.let_go("w1")
    gone(cluster, group, widget)


def test_kopf_reporting_that_its_handler_fails_is_stalled_with_its_message(cluster, operators):
    """kopf runs as its Deployment's ServiceAccount, but its on.delete handler cannot finish: it raises
    kopf.TemporaryError ("failed to delete bucket: secret aws-creds not found") and kopf retries every second. kopf
    reports it where it reports everything about a handler, in the handler's progress annotation
    (`kopf.zalando.org/cleanup`: the message, the retries, success and failure false), and in its log; it posts no
    Event (settings.posting.loggers is off by default). The remover runs and owns the finalizer but says it cannot
    finish: STALLED, its message quoted, in explain and stuck alike, never WAITING. Once the cause is fixed, kopf's
    next retry succeeds and the Widget goes."""
    group = cluster.widget_crd()
    operator = operators(cluster, group, deployed_operator_kubeconfig(cluster, group))
    widget = handled_widget(cluster, group)
    message = "failed to delete bucket: secret aws-creds not found"
    operator.fail("w1", message)
    cluster.delete(widget)

    def progress() -> dict:
        return json.loads((cluster.get(widget)["metadata"].get("annotations") or {}).get("kopf.zalando.org/cleanup")
                          or "{}")

    reported = cluster.eventually(lambda: (lambda p: p if (p.get("retries") or 0) >= 2 else None)(progress()),
                                  external=True, message="kopf to retry its failing handler")
    assert reported["message"] == message and reported["success"] is False and reported["failure"] is False, reported

    report = explain(cluster, group)
    finding = kopf_finding(report)
    assert finding["verdict"] == "STALLED", finding
    assert message in finding["condition"] + " ".join(finding["evidence"]), finding
    assert not waits(report), report["plan"]
    row = stuck_row(cluster)
    assert row["verdict"] == "STALLED", row

    operator.recover("w1")
    operator.let_go("w1")
    gone(cluster, group, widget)


def test_kopf_stopped_with_its_deployment_scaled_to_zero_is_not_waiting(cluster, operators):
    """The operator ran and added its finalizer, then stopped: the process ended and its Deployment was scaled to 0
    (its Pod gone). A Widget deleted now keeps kopf's finalizer and nothing removes it:
    kfin must not say WAITING nor plan to wait for it to go by itself; STALLED names the Deployment."""
    group = cluster.widget_crd()
    operator = operators(cluster, group, deployed_operator_kubeconfig(cluster, group))
    widget = handled_widget(cluster, group)
    operator.stop()
    deployment = f"/apis/apps/v1/namespaces/{cluster.namespace}/deployments/widget-operator"
    cluster.api.merge_patch(deployment, {"spec": {"replicas": 0}})
    pods = f"/api/v1/namespaces/{cluster.namespace}/pods?labelSelector=app%3Dwidget-operator"

    def pods_gone() -> bool:  # the replicaset controller deletes the Pod: one on no node goes at once, one on a node
        # waits for its kubelet, which neither tier runs: forced, as the kubelet's confirmation would end it
        for pod in cluster.api.get(pods)["items"]:
            if pod["metadata"].get("deletionTimestamp"):
                cluster.api.delete(f"/api/v1/namespaces/{cluster.namespace}/pods/{pod['metadata']['name']}", grace=0)
        return not cluster.api.get(pods)["items"]

    cluster.eventually(pods_gone, message="the Deployment's Pod to go")
    cluster.eventually(lambda: not (cluster.get(deployment).get("status") or {}).get("replicas"),
                       message="the Deployment to count no replica")
    cluster.delete(widget)

    report = explain(cluster, group)
    finding = kopf_finding(report)
    assert finding["verdict"] in ("STALLED", "UNKNOWN"), finding
    if finding["verdict"] == "STALLED":
        assert f"Deployment {cluster.namespace}/widget-operator" in finding["condition"], finding
    assert not waits(report), report["plan"]
    assert stuck_row(cluster)["verdict"] == finding["verdict"]


class FinalizerKeeper(ThreadingHTTPServer):
    """A mutating admission webhook over HTTPS that puts kopf's finalizer back on every object it is sent (as a
    policy engine's "every widget keeps its finalizer" rule would); it records who it put the finalizer back for."""

    def __init__(self, cert: Path, key: Path):
        super().__init__(("127.0.0.1", 0), _KeeperHandler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.put_back: list[tuple[str, bool]] = []  # (the requester, whether it was a dry run)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}/keep"


class _KeeperHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        finalizers = ((request.get("object") or {}).get("metadata") or {}).get("finalizers") or []
        response: dict = {"uid": request["uid"], "allowed": True}
        if MARKER not in finalizers:
            patch = [{"op": "add", "path": "/metadata/finalizers", "value": [*finalizers, MARKER]}]
            response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps(patch).encode()).decode())
            self.server.put_back.append((request["userInfo"]["username"], bool(request.get("dryRun"))))
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args) -> None:
        pass


@pytest.mark.real_only(WEBHOOK_BY_URL)
def test_kopfs_removal_put_back_by_a_mutating_webhook_is_blocked_and_names_the_webhook(cluster, operators, tmp_path):
    """The operator's handler is done and kopf removes its finalizer, but a MutatingWebhookConfiguration (by URL,
    failurePolicy Fail) puts it back on every UPDATE: kopf's removal never holds. kfin names the configuration as the
    cause, BLOCKED, never WAITING, and plans no removal that the webhook would undo."""
    group = cluster.widget_crd()
    operator = operators(cluster, group, deployed_operator_kubeconfig(cluster, group))
    widget = handled_widget(cluster, group)
    cert, key = self_signed(tmp_path)
    keeper = FinalizerKeeper(cert, key)
    keeper.thread.start()
    config = None
    try:
        config = cluster.create({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": cluster.name("keep-kopf-finalizer")},
            "webhooks": [{"name": "keep.kopf.kfin.test", "failurePolicy": "Fail", "sideEffects": "None",
                          "admissionReviewVersions": ["v1"], "timeoutSeconds": 5,
                          "clientConfig": {"url": keeper.url, "caBundle": base64.b64encode(cert.read_bytes()).decode()},
                          "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cluster.namespace}},
                          "rules": [{"operations": ["UPDATE"], "apiGroups": [group], "apiVersions": ["v1"],
                                     "resources": ["widgets"]}]}]})
        name = config["metadata"]["name"]
        path = cluster.path_of(widget)
        # kube-apiserver calls a new configuration a moment after it is made: a dry-run removal shows when it does
        cluster.eventually(lambda: MARKER in (cluster.api.send("PATCH", path + "?dryRun=All", {"metadata": {
            "finalizers": None}}, content_type="application/merge-patch+json")[1].get("metadata") or {}).get(
            "finalizers", []), message="the webhook to be called")
        operator.let_go("w1")  # the handler finishes at once: kopf removes its finalizer, and it is put back
        cluster.delete(widget)
        identity = f"system:serviceaccount:{cluster.namespace}:widget-operator"
        cluster.eventually(lambda: (identity, False) in keeper.put_back, external=True,
                           message="kopf's removal to be put back")
        assert MARKER in cluster.get(widget)["metadata"]["finalizers"]

        report = explain(cluster, group)
        finding = kopf_finding(report)
        assert finding["verdict"] == "BLOCKED", finding
        assert f"MutatingWebhookConfiguration {name}" in finding["condition"], finding
        assert "cannot check" not in finding["condition"], finding  # the server answered kfin's dry run
        roots = [root["object"] for root in report["chain"]["rootCauses"]]
        assert roots == [f"MutatingWebhookConfiguration.admissionregistration.k8s.io/{name}"], report["chain"]
        commands = [step.get("command") or "" for step in report["plan"]["steps"]]
        assert not [c for c in commands if c.startswith("kfin remove")], report["plan"]
        assert not waits(report), report["plan"]
        row = stuck_row(cluster)
        assert row["verdict"] == "BLOCKED" and name in row["blocker"], row
    finally:
        if config is not None:
            cluster.api.delete(cluster.path_of(config))
            cluster.eventually(lambda: cluster.get(config) is None, message="the webhook configuration to go")
        keeper.shutdown()
        keeper.server_close()


@pytest.mark.parametrize("identity", [pytest.param("user", marks=pytest.mark.real_only(SIGNED_USER)), "serviceaccount"])
def test_kopf_run_on_a_laptop_is_never_orphaned(cluster, operators, identity):
    """`kopf run` on a developer's machine: no workload in the cluster. The process acts as the User of a client
    certificate the cluster signed (`user`), or with a token of the operator's ServiceAccount, whose RBAC is applied
    but whose Deployment is not yet (`serviceaccount`: `kubectl create token widget-operator`, to try the operator
    with the rights it will have). kopf added the finalizer moments ago (field manager "kopf") and its handler is
    cleaning up: someone acts, so kfin must not call the finalizer ORPHANED; explain and stuck agree. Once the
    handler is done the Widget goes."""
    group = cluster.widget_crd()
    if identity == "user":
        kubeconfig = developer_kubeconfig(cluster, group, cluster.name("jane"))
    else:
        kubeconfig = service_account_kubeconfig(cluster, group)
    operator = operators(cluster, group, kubeconfig)
    widget = handled_widget(cluster, group)
    cluster.delete(widget)
    cluster.eventually(lambda: operator.began("w1"), external=True, message="kopf's on.delete handler to begin")

    report = explain(cluster, group)
    finding = kopf_finding(report)
    assert finding["verdict"] in ("WAITING", "UNKNOWN"), finding
    assert any('field manager "kopf"' in e for e in finding["evidence"]), finding["evidence"]
    assert stuck_row(cluster)["verdict"] == finding["verdict"]

    operator.let_go("w1")
    gone(cluster, group, widget)
