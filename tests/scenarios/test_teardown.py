"""kfin preflight -f and kfin preflight helm (issue 43): a release-like set of objects (an operator Deployment with
its RBAC, its CRD, custom resources with its finalizer), predicted, then really deleted in the order the tool
would (kubectl's file order; Helm's order replayed with kubectl, Helm not being here), and compared with what
kfin stuck reports after. The safe order of the plan leaves nothing stuck.

The operator is played by the test: its Pod is marked Ready (no kubelet here) and, while its Deployment
exists, the test removes the finalizer of each Widget being deleted, as the operator would; once its
Deployment is deleted it does nothing more (a controller-runtime operator stops reconciling on SIGTERM)."""

import base64
import io
import json
import sys

import pytest
import yaml

from kfin.core.predict.helm import encode
from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenario import served_by, service_webhook
from tests.scenarios.test_preflight import really_stuck, widget_operator

RBAC = "rbac.authorization.k8s.io/v1"


def release_objects(cluster, group: str, ns: str) -> dict[str, list[dict]]:
    """The files of a release-like directory, in kubectl's (lexical) order, each with its documents."""
    labels = {"app": "widget-operator"}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"widgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    return {
        "00-rbac.yaml": [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "operator", "namespace": ns}},
            {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "operator", "namespace": ns},
             "rules": [{"apiGroups": [group], "resources": ["widgets"],
                        "verbs": ["get", "list", "watch", "update", "patch"]}]},
            {"apiVersion": RBAC, "kind": "RoleBinding", "metadata": {"name": "operator", "namespace": ns},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "operator"},
             "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": ns}]},
        ],
        "01-operator.yaml": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "widget-operator", "namespace": ns},
             "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                 "metadata": {"labels": labels},
                 "spec": {"serviceAccountName": "operator",
                          "containers": [{"name": "c", "image": "registry.invalid/widget-operator:none"}]}}}},
        ],
        "02-crd.yaml": [crd],
        "03-widgets.yaml": [
            {"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": f"{group}/v1", "kind": "Widget",
                 "metadata": {"name": name, "namespace": ns, "finalizers": [f"{group}/cleanup"]}}
                for name in ("w1", "w2")]},
        ],
    }


def install(cluster, files: dict[str, list[dict]], directory) -> list[dict]:
    """Writes the files and creates their objects (a List's items); returns the objects in file order. A Widget's
    finalizer is added by the operator as it first reconciles it (its field manager, widget-operator), as operators
    add theirs, not by the manifest that created it."""
    directory.mkdir()
    objects = []
    for name, documents in files.items():
        (directory / name).write_text(yaml.safe_dump_all(documents))
        for document in documents:
            objects += document["items"] if document["kind"] == "List" else [document]
    for obj in objects:
        finalizers = obj["metadata"].get("finalizers") if obj["kind"] == "Widget" else None
        if finalizers:
            made = cluster.create({**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "finalizers"},
                                   "spec": {"size": 1}})
            code, answer = cluster.api.send("PATCH", cluster.path_of(made) + "?fieldManager=widget-operator",
                                            {"metadata": {"finalizers": finalizers}},
                                            content_type="application/merge-patch+json")
            assert code == 200, answer
            continue
        cluster.create(obj)
        if obj["kind"] == "CustomResourceDefinition":
            group = obj["spec"]["group"]
            cluster.eventually(lambda g=group: cluster.api.send("GET", f"/apis/{g}/v1")[0] == 200,
                               message="the CRD to serve")
    return objects


def operator_runs(cluster, ns: str) -> None:
    """The operator's Pod, created by the Deployment's controllers, marked Running and Ready."""
    pods = f"/api/v1/namespaces/{ns}/pods"
    cluster.eventually(lambda: cluster.api.get(pods)["items"], message="the operator's Pod")
    pod = dict(cluster.api.get(pods)["items"][0], apiVersion="v1", kind="Pod")
    cluster.set_status(pod, {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})


class PlayedOperator:
    """Removes a Widget's finalizer once it is being deleted, while the operator's Deployment exists."""

    def __init__(self, cluster, ns: str):
        self.cluster, self.ns = cluster, ns

    def alive(self) -> bool:
        return self.cluster.get(f"/apis/apps/v1/namespaces/{self.ns}/deployments/widget-operator") is not None

    def reconcile(self, group: str) -> None:
        if not self.alive():
            return
        for widget in self.cluster.api.get(f"/apis/{group}/v1/namespaces/{self.ns}/widgets")["items"]:
            if widget["metadata"].get("deletionTimestamp"):
                self.cluster.strip_finalizers(widget)


def delete_in_order(cluster, objects: list[dict], operator: PlayedOperator, group: str) -> None:
    """kubectl delete -f's requests, in its order: one DELETE each (background), NotFound skipped."""
    for obj in objects:
        operator.reconcile(group)
        code, answer = cluster.api.delete(cluster.path_of(obj), "Background", None)
        assert code in (200, 202, 404), (obj["kind"], code, answer)
    operator.reconcile(group)


def teardown(cluster, *args):
    result = kfin("preflight", *args, "-o", "json", "--kubeconfig", str(cluster.kubeconfig))
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return json.loads(result.stdout)


def stuck_of(report) -> set[tuple[str, str]]:
    return {(s["object"]["kind"], s["object"]["name"]) for step in report["steps"] for s in step["wouldBeStuck"]}


def ours(found: dict, group: str, ns: str) -> set[tuple[str, str]]:
    return {(kind, name) for (kind, name), item in found.items()
            if item.get("namespace") == ns or name == f"widgets.{group}"}


@pytest.mark.controllers
def test_kubectl_file_order_strands_the_custom_resources(cluster, tmp_path):
    """kubectl deletes 01-operator.yaml before 02-crd.yaml: the CRD's deletion deletes the Widgets after their
    operator went, and nothing removes their finalizer; the CRD waits for them. Predicted step by step, then
    really deleted in that order: kfin stuck finds what was predicted."""
    group, ns = f"{cluster.suffix}.example.com", cluster.namespace
    objects = install(cluster, release_objects(cluster, group, ns), tmp_path / "release")
    operator_runs(cluster, ns)

    report = teardown(cluster, "-f", str(tmp_path / "release"), "-n", ns)
    order = [(s["object"]["kind"], s["object"]["name"]) for s in report["steps"]]
    assert order == [(o["kind"], o["metadata"]["name"]) for o in objects]  # files, documents, List items in order
    assert report["clean"] is False
    by_kind = {s["object"]["kind"]: s for s in report["steps"]}
    crd_step = by_kind["CustomResourceDefinition"]
    stranded = {(s["object"]["name"], s["finalizer"]): s for s in crd_step["wouldBeStuck"] if s["object"]["kind"] == "Widget"}
    assert set(stranded) == {("w1", f"{group}/cleanup"), ("w2", f"{group}/cleanup")}
    # 00-rbac.yaml goes first: the operator's ServiceAccount at step 1, its token refused from then on
    assert all(s["verdict"] == "ORPHANED" and s["certain"] is True for s in stranded.values())
    assert all(f"ServiceAccount {ns}/operator is deleted at step 1" in s["reason"] for s in stranded.values())
    widget_steps = [s for s in report["steps"] if s["object"]["kind"] == "Widget"]
    assert all("already deleted with CustomResourceDefinition" in (s["note"] or "") for s in widget_steps)
    assert report["plan"][0]["command"] == f"kubectl delete widgets.{group} w1 w2 -n {ns} --wait --timeout=10m"
    assert report["plan"][-1]["command"].startswith("kubectl delete -f ")
    assert kfin("preflight", "-f", str(tmp_path / "release"), "-n", ns, "--exit-code",
                "--kubeconfig", str(cluster.kubeconfig)).code == ExitCode.FOUND

    operator = PlayedOperator(cluster, ns)
    delete_in_order(cluster, objects, operator, group)
    widgets = f"/apis/{group}/v1/namespaces/{ns}/widgets"
    cluster.eventually(lambda: len([w for w in cluster.api.get(widgets)["items"]
                                    if w["metadata"].get("deletionTimestamp")]) == 2, message="both Widgets deleted")
    cluster.eventually(lambda: ours(really_stuck(cluster), group, ns) == stuck_of(report),
                       raise_on_timeout=False, message="kfin stuck to see the CRD held")
    # what kfin stuck finds is what was predicted: both Widgets, and the CRD that waits for them
    assert ours(really_stuck(cluster), group, ns) == stuck_of(report) == {
        ("Widget", "w1"), ("Widget", "w2"), ("CustomResourceDefinition", f"widgets.{group}")}
    for w in ("w1", "w2"):
        cluster.strip_finalizers(f"{widgets}/{w}")


@pytest.mark.controllers
def test_the_safe_order_leaves_nothing_stuck(cluster, tmp_path):
    """The plan's first step (the Widgets, while the operator runs), then the teardown itself: nothing stuck,
    and preflight says so once the first step is done."""
    group, ns = f"{cluster.suffix}.example.com", cluster.namespace
    objects = install(cluster, release_objects(cluster, group, ns), tmp_path / "release")
    operator_runs(cluster, ns)
    report = teardown(cluster, "-f", str(tmp_path / "release"), "-n", ns)
    first = report["plan"][0]["command"]
    assert first == f"kubectl delete widgets.{group} w1 w2 -n {ns} --wait --timeout=10m"

    operator = PlayedOperator(cluster, ns)
    widgets = f"/apis/{group}/v1/namespaces/{ns}/widgets"
    for w in ("w1", "w2"):  # the plan's first command, with the operator running
        cluster.delete(f"{widgets}/{w}")
    operator.reconcile(group)
    cluster.eventually(lambda: not cluster.api.get(widgets)["items"], message="the Widgets gone")

    after = teardown(cluster, "-f", str(tmp_path / "release"), "-n", ns)
    assert after["clean"] is True, after
    assert [s["found"] for s in after["steps"]].count(False) == 2  # w1 and w2: not found, said so
    assert {(n["kind"], n["name"]) for n in after["notFound"]} == {("Widget", "w1"), ("Widget", "w2")}

    delete_in_order(cluster, objects, operator, group)
    cluster.eventually(lambda: cluster.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")
                       is None, message="the CRD gone")
    assert ours(really_stuck(cluster), group, ns) == set()


@pytest.mark.controllers
def test_a_helm_release_record_reads_back_into_the_same_prediction(cluster, tmp_path):
    """A release record written as Helm writes it (Secret sh.helm.release.v1.NAME.vN, base64 of gzip of JSON,
    labelled owner=helm) is read back into the prediction its manifest gives on stdin with --helm 3: one named
    GET of the latest version, said on stderr."""
    group, ns = f"{cluster.suffix}.example.com", cluster.namespace
    files = release_objects(cluster, group, ns)
    objects = install(cluster, files, tmp_path / "release")
    operator_runs(cluster, ns)
    manifest = "".join("---\n# Source: widgets/templates/" + name + "\n" + yaml.safe_dump(o)
                       for name, documents in files.items() for o in documents
                       for o in (o["items"] if o["kind"] == "List" else [o]))
    keep = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "widget-settings", "namespace": ns, "annotations": {"helm.sh/resource-policy": "keep"}}}
    manifest += "---\n" + yaml.safe_dump(keep)
    hooks = [{"name": "widget-cleanup", "kind": "Job", "path": "widgets/templates/cleanup.yaml",
              "manifest": "", "events": ["pre-delete"]}]
    for version, text in ((1, "---\n" + yaml.safe_dump(objects[0])), (2, manifest)):
        record = {"name": "widgets", "namespace": ns, "version": version, "manifest": text, "hooks": hooks,
                  "info": {"status": "deployed" if version == 2 else "superseded"}}
        cluster.create({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                        "metadata": {"name": f"sh.helm.release.v1.widgets.v{version}", "namespace": ns,
                                     "labels": {"owner": "helm", "name": "widgets", "version": str(version)}},
                        "data": {"release": base64.b64encode(encode(record).encode()).decode()}})

    seen = len(cluster.fake.requests) if cluster.is_fake else 0
    result = kfin("preflight", "helm", "widgets", "-n", ns, "-o", "json", "--helm", "3",
                  "--kubeconfig", str(cluster.kubeconfig))
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    assert f"GET Secret {ns}/sh.helm.release.v1.widgets.v2" in result.stderr
    if cluster.is_fake:  # the record's data: one named GET; Secrets otherwise listed metadata-only
        secret_gets = [r for r in cluster.fake.requests[seen:] if r.method == "GET" and "/secrets/sh.helm" in r.path]
        assert [r.path.rsplit("/", 1)[1] for r in secret_gets] == ["sh.helm.release.v1.widgets.v2"]
    from_record = json.loads(result.stdout)

    stdin = kfin_with_stdin(manifest, "preflight", "-f", "-", "--helm=3", "-n", ns, "-o", "json",
                            "--kubeconfig", str(cluster.kubeconfig))
    from_manifest = json.loads(stdin.stdout)
    assert (from_record["tool"], from_manifest["tool"]) == ("helm 3 uninstall", "helm 3 uninstall")
    four = kfin_with_stdin(manifest, "preflight", "-f", "-", "--helm", "4", "-n", ns, "-o", "json",
                           "--kubeconfig", str(cluster.kubeconfig))
    assert json.loads(four.stdout)["tool"] == "helm 4 uninstall"
    # the Helm unsaid (the record's, or a bare --helm): Helm 4 assumed, said on stderr; its order here is Helm 3's
    assumed = kfin("preflight", "helm", "widgets", "-n", ns, "-o", "json", "--kubeconfig", str(cluster.kubeconfig))
    bare = kfin_with_stdin(manifest, "preflight", "-f", "-", "-n", ns, "-o", "json",
                           "--kubeconfig", str(cluster.kubeconfig), "--helm")
    for answer in (assumed, bare):
        assert json.loads(answer.stdout)["tool"] == "helm 4 uninstall", answer.stderr
        assert ("kfin assumes Helm 4's uninstall order (--helm 3 for Helm 3's); Helm 3's order would leave the same"
                in answer.stderr.splitlines()), answer.stderr
        assert [s["object"]["name"] for s in json.loads(answer.stdout)["steps"]] == [
            s["object"]["name"] for s in from_manifest["steps"]]
    assert [s["object"] for s in from_record["steps"]] == [
        {**s["object"], "source": from_record["steps"][i]["object"]["source"]}
        for i, s in enumerate(from_manifest["steps"])]
    assert stuck_of(from_record) == stuck_of(from_manifest) != set()
    assert [k["name"] for k in from_record["kept"]] == ["widget-settings"]
    assert [h["name"] for h in from_record["hooks"]] == ["widget-cleanup"]
    # what the pre-delete hook would have to do: the safe order's first step, for the Widgets that stick without it
    # (kfin does not run the hook: the replay below is the uninstall without it, and they stick)
    duty = from_record["hooks"][0]["wouldHaveTo"]
    assert duty.startswith("without it ") and from_record["plan"][0]["command"] in duty, duty
    assert all(f"Widget {w}" in duty.partition(" would be left stuck")[0] for w in ("w1", "w2")), duty
    kinds = [s["object"]["kind"] for s in from_record["steps"]]
    # Helm 3's UninstallOrder: Deployment, RoleBinding, Role, CRD, ServiceAccount, then the unknown kind Widget
    assert kinds == ["Deployment", "RoleBinding", "Role", "CustomResourceDefinition", "ServiceAccount",
                     "Widget", "Widget"]
    assert from_record["plan"][-1]["command"] == f"helm uninstall widgets -n {ns}"

    # Helm's order replayed with kubectl (Helm is not here): kfin stuck finds what was predicted
    by_ref = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    replayed = [by_ref[(s["object"]["kind"], s["object"]["name"])] for s in from_record["steps"]]
    delete_in_order(cluster, replayed, PlayedOperator(cluster, ns), group)
    cluster.eventually(lambda: ours(really_stuck(cluster), group, ns) == stuck_of(from_record),
                       raise_on_timeout=False, message="kfin stuck to see the CRD held")
    assert ours(really_stuck(cluster), group, ns) == stuck_of(from_record)
    for w in ("w1", "w2"):
        cluster.strip_finalizers(f"/apis/{group}/v1/namespaces/{ns}/widgets/{w}")


def kfin_with_stdin(text: str, *args: str):
    saved = sys.stdin
    sys.stdin = io.StringIO(text)
    try:
        return kfin(*args)
    finally:
        sys.stdin = saved


# ----- a webhook deleted after its Service -------------------------------------------------------------------
def webhook_files(cluster, ns: str) -> dict[str, list[dict]]:
    """A webhook failing closed on DELETE of ConfigMaps in `ns`, its Service, and a ConfigMap it checks, in files
    whose (lexical) order deletes the Service first. Neither tier can reach a Service's backend (no kube-proxy, no
    Pods running: kube-apiserver without aggregator routing calls the ClusterIP; the fake has no network), so the
    webhook fails closed while its Service exists too: no request it matches is sent before the Service's deletion
    (it checks DELETE only, and the prediction sends no dry-run DELETE of the ConfigMap: its step is predicted
    rejected before any). After it, both tiers answer as kube-apiserver does for a webhook whose Service is gone
    (failed calling webhook: service not found)."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "checker", "namespace": ns},
        "spec": {"selector": {"app": "checker"}, "ports": [{"port": 443, "targetPort": 8443}]},
    }
    settings = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": ns},
        "data": {"a": "b"},
    }
    config = service_webhook(
        cluster.name("checker"),
        ns,
        {"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]},
    )
    return {"00-service.yaml": [service], "01-settings.yaml": [settings], "02-webhook.yaml": [config]}


def delete_each(cluster, objects: list[dict]) -> dict[str, int]:
    """kubectl delete -f's DELETEs in order, going on after a rejected one (its builder is ContinueOnError): the
    status of each, by kind."""
    return {o["kind"]: cluster.api.delete(cluster.path_of(o), "Background", None)[0] for o in objects}


@pytest.mark.controllers
def test_a_webhooks_service_deleted_before_it_makes_it_reject_what_comes_after(cluster, tmp_path):
    """kubectl deletes 00-service.yaml first: the webhook fails closed for the ConfigMap's DELETE at step 2 (it
    stays); predicted so, with Helm 3's order the same and Helm 4's (webhook configurations first) clean."""
    ns = cluster.namespace
    files = webhook_files(cluster, ns)
    objects = install(cluster, files, tmp_path / "release")
    settings = f"/api/v1/namespaces/{ns}/configmaps/settings"
    config = objects[-1]
    try:
        report = teardown(cluster, "-f", str(tmp_path / "release"), "-n", ns)
        assert report["clean"] is False
        rejected = {(s["object"]["kind"], s["object"]["name"]): s for step in report["steps"] for s in step["rejected"]}
        assert list(rejected) == [("ConfigMap", "settings")]
        assert rejected[("ConfigMap", "settings")]["reason"] == (
            f"its DELETE is rejected: webhook check.kfin.test of ValidatingWebhookConfiguration "
            f"{config['metadata']['name']} fails closed: its Service {ns}/checker is deleted at step 1"
        )
        assert (
            report["plan"][0]["command"]
            == f"kubectl delete validatingwebhookconfiguration {config['metadata']['name']}"
        )
        manifest = "".join("---\n" + yaml.safe_dump(o) for o in objects)
        for major, clean in (("3", False), ("4", True)):
            helm = json.loads(
                kfin_with_stdin(
                    manifest,
                    "preflight",
                    "-f",
                    "-",
                    "--helm",
                    major,
                    "-n",
                    ns,
                    "-o",
                    "json",
                    "--kubeconfig",
                    str(cluster.kubeconfig),
                ).stdout
            )
            assert helm["clean"] is clean, (major, helm)
            # the configuration deleted first by the plan only where the Service goes before it (Helm 3's order)
            first = f"kubectl delete validatingwebhookconfiguration {config['metadata']['name']}"
            assert (helm["plan"][0]["command"] == first) is (major == "3"), (major, helm["plan"])

        codes = delete_each(cluster, objects)
        # what happened: the ConfigMap's DELETE refused (the webhook cannot be called), the ConfigMap still there
        assert codes["Service"] == 200 and codes["ValidatingWebhookConfiguration"] == 200, codes
        assert codes["ConfigMap"] >= 400, codes
        kept = cluster.get(settings)
        assert kept is not None and not kept["metadata"].get("deletionTimestamp")
        assert ours(really_stuck(cluster), "", ns) == stuck_of(report) == set()  # rejected, not stuck
    finally:
        cluster.api.delete(cluster.path_of(config))
        cluster.api.delete(settings)


@pytest.mark.controllers
def test_the_safe_order_deletes_the_webhook_configuration_first_and_everything_goes(cluster, tmp_path):
    ns = cluster.namespace
    objects = install(cluster, webhook_files(cluster, ns), tmp_path / "release")
    config = objects[-1]
    try:
        report = teardown(cluster, "-f", str(tmp_path / "release"), "-n", ns)
        assert (
            report["plan"][0]["command"]
            == f"kubectl delete validatingwebhookconfiguration {config['metadata']['name']}"
        )
        cluster.delete(config)  # the plan's first step
        cluster.eventually(lambda: cluster.get(cluster.path_of(config)) is None, message="the configuration gone")
        after = teardown(cluster, "-f", str(tmp_path / "release"), "-n", ns)
        assert after["clean"] is True, after
        assert [n["kind"] for n in after["notFound"]] == ["ValidatingWebhookConfiguration"]

        codes = delete_each(cluster, objects)
        assert codes == {"Service": 200, "ConfigMap": 200, "ValidatingWebhookConfiguration": 404}, codes
        assert cluster.get(f"/api/v1/namespaces/{ns}/configmaps/settings") is None
        assert ours(really_stuck(cluster), "", ns) == set()
    finally:
        cluster.api.delete(cluster.path_of(config))


@pytest.mark.controllers
def test_a_webhook_whose_service_the_teardown_deletes_but_not_it_rejects_the_finalizer_removal_for_good(
    cluster, tmp_path
):
    """The webhook (checking UPDATE of Widgets, failing closed) is not in the manifests; its Service is, before a
    Widget whose operator runs elsewhere. Once the Service is gone, the operator's finalizer removal is rejected,
    and nothing in the teardown ever deletes the configuration: the Widget stays Terminating. Predicted so with
    kfin's rules alone (--no-dry-run: a dry-run UPDATE would be sent to the webhook, which neither tier can reach;
    the Service's EndpointSlice says it is served, as it would be in a cluster), and kfin stuck finds it after."""
    group, ns = cluster.widget_crd(), cluster.namespace
    ops = cluster.name("ops")
    widget_operator(cluster, group, ops, cluster_wide=True)
    operator_runs(cluster, ops)
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "checker", "namespace": ns},
               "spec": {"ports": [{"port": 443, "targetPort": 8443}]}}
    widget = {"apiVersion": f"{group}/v1", "kind": "Widget",
              "metadata": {"name": "w1", "namespace": ns, "finalizers": [f"{group}/cleanup"]}}
    objects = install(cluster, {"00-service.yaml": [service], "01-widgets.yaml": [widget]}, tmp_path / "release")
    served_by(cluster, ns)
    name = cluster.name("checker")
    config = cluster.create(service_webhook(name, ns, {"operations": ["UPDATE"], "apiGroups": [group],
                                                       "apiVersions": ["v1"], "resources": ["widgets"]}))
    path = f"/apis/{group}/v1/namespaces/{ns}/widgets/w1"
    try:
        report = teardown(cluster, "-f", str(tmp_path / "release"), "-n", ns, "--no-dry-run")
        [stuck] = [s for step in report["steps"] for s in step["wouldBeStuck"]]
        assert (stuck["object"]["name"], stuck["verdict"]) == ("w1", "BLOCKED"), report
        assert stuck["reason"] == (f"webhook check.kfin.test of ValidatingWebhookConfiguration {name} rejects the "
                                   f"removal of {group}/cleanup: its Service is deleted at step 1, its configuration "
                                   "stays")
        commands = [p["command"] for p in report["plan"]]
        assert commands[-2:] == [f"kubectl delete validatingwebhookconfiguration {name}",
                                 f"kubectl delete -f {tmp_path / 'release'} -n {ns}"], commands

        codes = delete_each(cluster, objects)
        assert codes == {"Service": 200, "Widget": 200}, codes
        # the operator's finalizer removal, after the Service went: refused (the webhook cannot be called)
        code, answer = cluster.api.merge_patch(path, {"metadata": {"finalizers": None}})
        assert code >= 400 and "failed calling webhook" in str(answer), (code, answer)
        assert cluster.get(path)["metadata"]["finalizers"] == [f"{group}/cleanup"]
        assert ours(really_stuck(cluster), "", ns) == stuck_of(report) == {("Widget", "w1")}
    finally:
        cluster.api.delete(cluster.path_of(config))
        cluster.strip_finalizers(path)
