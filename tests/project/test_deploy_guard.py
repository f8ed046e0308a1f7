"""deploy/guard/: kfin guard as `kubectl apply -k deploy/guard/` installs it (issue 42, item 5), checked as an
operator would before applying it: every built-in object valid against Kubernetes' own schema, a webhook that can
never stand in the way (failurePolicy Ignore, a short timeout, DELETE alone, the control plane and kfin skipped), a
role that only reads, two replicas and a budget, and container arguments that are a valid kfin guard command."""

import subprocess

import cel
import kubernetes_validate
import yaml

from bench.tools import installed_command
from tests.runner import kfin
from tests.project.test_deploy import DEPLOY, KUBERNETES_VERSION, built, by_kind, needs_kubectl

GUARD = DEPLOY / "guard"


@needs_kubectl
def test_kustomize_builds_a_guard_that_can_never_block_a_deletion():
    objects = built(GUARD)
    kinds = by_kind(objects)
    assert set(kinds) == {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service",
                          "PodDisruptionBudget", "Issuer", "Certificate", "ValidatingWebhookConfiguration"}
    for obj in objects:
        if not obj["apiVersion"].startswith("cert-manager.io/"):
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)

    [hook] = kinds["ValidatingWebhookConfiguration"]["webhooks"]
    assert hook["failurePolicy"] == "Ignore" and hook["timeoutSeconds"] <= 5 and hook["sideEffects"] == "None"
    assert [r["operations"] for r in hook["rules"]] == [["DELETE"]]  # never UPDATE: finalizer removal is never gated
    service = hook["clientConfig"]["service"]
    assert (service["namespace"], service["name"], service["path"]) == ("kfin-system", "kfin-guard", "/validate")
    assert kinds["ValidatingWebhookConfiguration"]["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
        "kfin-system/kfin-guard"
    assert kinds["Certificate"]["spec"]["secretName"] == "kfin-guard-tls"
    assert "kfin-guard.kfin-system.svc" in kinds["Certificate"]["spec"]["dnsNames"]

    rules = kinds["ClusterRole"]["rules"]
    assert all(set(rule["verbs"]) <= {"get", "list", "watch"} for rule in rules)  # never a write
    assert kinds["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "kfin-guard", "namespace": "kfin-system"}]

    deployment = kinds["Deployment"]
    assert deployment["spec"]["replicas"] >= 2
    assert kinds["PodDisruptionBudget"]["spec"]["selector"] == deployment["spec"]["selector"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kfin-guard" and pod["securityContext"]["runAsNonRoot"] is True
    [container] = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert {p["targetPort"] for p in kinds["Service"]["spec"]["ports"]} == set(ports)
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_the_webhooks_match_conditions_skip_the_control_plane_and_kfin_and_keep_what_kfin_predicts_for():
    [hook] = yaml.safe_load((GUARD / "webhook.yaml").read_text())["webhooks"]

    def reviewed(user: str, resource: str, finalizers: list | None = None) -> bool:
        old = {"metadata": {"finalizers": finalizers} if finalizers else {}}
        variables = {"request": {"userInfo": {"username": user}, "resource": {"resource": resource}},
                     "object": None, "oldObject": old}
        return all(cel.evaluate(c["expression"], variables) is True for c in hook["matchConditions"])

    assert reviewed("alice", "namespaces") and reviewed("alice", "widgets", ["example.com/cleanup"])
    assert reviewed("system:serviceaccount:argocd:argocd-application-controller", "customresourcedefinitions")
    assert not reviewed("alice", "configmaps")  # nothing to predict: no finalizers, deletes nothing else
    for user in ("system:serviceaccount:kube-system:namespace-controller",
                 "system:serviceaccount:kube-system:generic-garbage-collector", "system:kube-controller-manager",
                 "system:node:worker-1", "system:serviceaccount:kfin-system:kfin-guard"):
        assert not reviewed(user, "widgets", ["example.com/cleanup"]), user


def test_the_container_arguments_are_a_valid_kfin_guard_command(tmp_path):
    deployment = yaml.safe_load((GUARD / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[0] == "guard"
    tls = tmp_path / "tls.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "1", "-subj", "/CN=kfin-guard", "-keyout", str(tls), "-out", str(tls)],
                   check=True, capture_output=True)
    args = [str(tls) if a.startswith("/tls/") else a for a in args]
    # parsed in full, then refused only for the missing kubeconfig (exit 3), never as a usage error (exit 2)
    result = kfin(*args[:1], "--kubeconfig", str(tmp_path / "none"), *args[1:])
    assert result.code == 3 and "does not exist" in result.stderr, result


def test_promtool_accepts_the_guards_alert():
    if installed_command("promtool") is None:
        return
    done = subprocess.run(["promtool", "check", "rules", str(GUARD / "prometheus-rules.yaml")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    [rule] = yaml.safe_load((GUARD / "prometheus-rules.yaml").read_text())["groups"][0]["rules"]
    assert rule["alert"] == "KfinGuardDown" and "kfin_guard_ready" in rule["expr"]
    assert "\n## KfinGuardDown\n" in (DEPLOY / "RUNBOOK.md").read_text()


@needs_kubectl
def test_kubectl_apply_k_installs_the_guard(tmp_path):
    """`kubectl apply -k deploy/guard/`, for real, against a tests/fakeapi of its own that knows cert-manager's
    kinds (their CRDs, schema-less): every object is accepted. (The real tier's scenarios create the webhook
    configuration from deploy/guard/webhook.yaml: kube-apiserver compiles its matchConditions.)"""
    from tests.fakeapi import FakeAPIServer
    from tests.fakeapi.tls import self_signed
    from tests.project.test_deploy import KUBECTL

    fake = FakeAPIServer().start(tls=self_signed(tmp_path))
    try:
        for plural, kind in (("issuers", "Issuer"), ("certificates", "Certificate")):
            fake.apply({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                        "metadata": {"name": f"{plural}.cert-manager.io"},
                        "spec": {"group": "cert-manager.io", "scope": "Namespaced",
                                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                                     "openAPIV3Schema": {"type": "object",
                                                         "x-kubernetes-preserve-unknown-fields": True}}}]}})
        kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
        done = subprocess.run([KUBECTL, "apply", "--validate=false", "-k", str(GUARD), "--kubeconfig",
                               str(kubeconfig), "-o", "name"], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert {"validatingwebhookconfiguration.admissionregistration.k8s.io/kfin-guard",
                "deployment.apps/kfin-guard", "certificate.cert-manager.io/kfin-guard",
                "poddisruptionbudget.policy/kfin-guard"} <= set(done.stdout.split())
    finally:
        fake.stop()


SELF_SIGNED = DEPLOY / "guard-self-signed"
# kfin guard --self-signed's own writes: its Secret created and updated, its webhook configuration patched (a PATCH
# is an UPDATE to admission). A webhook that matched one of them would make the guard depend on itself.
OWN_WRITES = ("CREATE", "UPDATE")


def test_the_guards_webhooks_never_match_its_own_writes():
    """Both variants: every rule of every webhook is DELETE alone (never `*`, CREATE, UPDATE or CONNECT), so what
    kfin guard writes to keep its certificate (CREATE and UPDATE of its Secret, a PATCH of its webhook
    configuration) is never sent to it, and failing to write it never blocks a thing."""
    for directory in (GUARD, SELF_SIGNED):
        for obj in built(directory):
            if obj["kind"] not in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
                continue
            for hook in obj["webhooks"]:
                operations = {op for rule in hook["rules"] for op in rule["operations"]}
                assert operations == {"DELETE"}, (directory, hook["name"], operations)
                assert not set(OWN_WRITES) & operations and "*" not in operations


@needs_kubectl
def test_the_self_signed_variant_is_the_guard_without_cert_manager_and_with_only_its_tls_rights(tmp_path):
    objects = built(SELF_SIGNED)
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        assert not obj["apiVersion"].startswith("cert-manager.io/"), obj["kind"]
    base = {(o["kind"], o["metadata"]["name"]) for o in built(GUARD) if not o["apiVersion"].startswith("cert-")}
    named = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    assert set(named) == base | {("Role", "kfin-guard-tls"), ("RoleBinding", "kfin-guard-tls"),
                                 ("ClusterRole", "kfin-guard-webhook-ca"),
                                 ("ClusterRoleBinding", "kfin-guard-webhook-ca")}
    config = named[("ValidatingWebhookConfiguration", "kfin-guard")]
    assert "cert-manager.io/inject-ca-from" not in (config["metadata"].get("annotations") or {})
    assert "caBundle" not in config["webhooks"][0]["clientConfig"]  # kfin guard writes it

    # exactly: get and update of its Secret by name, create (which resourceNames cannot restrict), get and patch of
    # its webhook configuration by name; the reader role stays read-only
    role = named[("Role", "kfin-guard-tls")]
    assert role["metadata"]["namespace"] == "kfin-system"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["kfin-guard-ca"], "verbs": ["get", "update"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]
    assert named[("ClusterRole", "kfin-guard-webhook-ca")]["rules"] == [
        {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"],
         "resourceNames": ["kfin-guard"], "verbs": ["get", "patch"]}]
    assert all(set(rule["verbs"]) <= {"get", "list", "watch"}
               for rule in named[("ClusterRole", "kfin-guard-reader")]["rules"])
    for binding in (("RoleBinding", "kfin-guard-tls"), ("ClusterRoleBinding", "kfin-guard-webhook-ca")):
        assert named[binding]["subjects"] == [{"kind": "ServiceAccount", "name": "kfin-guard",
                                               "namespace": "kfin-system"}]

    pod = named[("Deployment", "kfin-guard")]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    args = container["args"]
    value = {flag: args[i + 1] for i, flag in enumerate(args[:-1]) if flag.startswith("--")}
    assert "--self-signed" in args and "--tls-cert-file" not in args
    service = named[("Service", "kfin-guard")]["metadata"]
    assert (value["--service-name"], value["--service-namespace"]) == (service["name"], service["namespace"])
    assert value["--tls-secret"] == role["rules"][0]["resourceNames"][0]
    assert value["--webhook-configuration"] == config["metadata"]["name"]
    assert [v for v in pod["volumes"] if "secret" in v] == []  # the key never on a Secret volume
    assert {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}} in pod["volumes"]
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    # parsed in full, then refused only for the missing kubeconfig (exit 3), never as a usage error (exit 2)
    result = kfin(*args[:1], "--kubeconfig", str(tmp_path / "none"), *args[1:])
    assert result.code == 3 and "does not exist" in result.stderr, result


@needs_kubectl
def test_kubectl_apply_k_installs_the_self_signed_guard(tmp_path):
    """`kubectl apply -k deploy/guard-self-signed/`, for real, against a tests/fakeapi of its own that knows no
    cert-manager: every object is accepted."""
    from tests.fakeapi import FakeAPIServer
    from tests.fakeapi.tls import self_signed
    from tests.project.test_deploy import KUBECTL

    fake = FakeAPIServer().start(tls=self_signed(tmp_path))
    try:
        kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
        done = subprocess.run([KUBECTL, "apply", "--validate=false", "-k", str(SELF_SIGNED), "--kubeconfig",
                               str(kubeconfig), "-o", "name"], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert {"validatingwebhookconfiguration.admissionregistration.k8s.io/kfin-guard",
                "deployment.apps/kfin-guard", "role.rbac.authorization.k8s.io/kfin-guard-tls",
                "rolebinding.rbac.authorization.k8s.io/kfin-guard-tls",
                "clusterrole.rbac.authorization.k8s.io/kfin-guard-webhook-ca",
                "clusterrolebinding.rbac.authorization.k8s.io/kfin-guard-webhook-ca"} <= set(done.stdout.split())
        assert not any("cert-manager" in line for line in done.stdout.split())
    finally:
        fake.stop()
