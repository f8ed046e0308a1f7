"""The chart (deploy/chart/kfin) and the kustomizations of deploy/ make the same objects for the same choices: each
row of the chart's contract installed through real Helm (helm-sdkpy, Helm 4's own library) as release kfin in
kfin-system on the real control plane, the release's manifest compared with `kubectl kustomize` of the matching
kustomization. Everything but the Namespace (the kustomizations make it, the chart installs into it), kustomize's
local-config objects and Helm's standard labels is identical: names, spec, rules, args, annotations, and the alerts'
templates ({{ $labels.name }}...), which must come through Helm unchanged. The chart's Grafana dashboard ConfigMap,
which no kustomization has, holds deploy/grafana/kfin.json as it is.

No kubelet runs the chart's Pods: nothing waits for them (wait=False)."""

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import yaml

from tests import helm
from tests.paths import PROJECT
from tests.project.test_deploy import built, needs_kubectl

RELEASE, NAMESPACE = "kfin", "kfin-system"
DEPLOY = PROJECT / "deploy"
REAL_HELM = ("real Helm (client-go inside helm-sdkpy) installs into a real API server; against the fake its "
             "reachability check is answered 401, and Helm's upgrade merges as the fake does not (test_chart_release)")

# the contract's table: chart values, the CRDs the API server serves, the kustomization that makes the same objects
ROWS = {
    "serve": ({}, (), DEPLOY),
    "serve-prometheus-operator": ({}, (helm.PROMETHEUS_OPERATOR,), DEPLOY / "prometheus-operator"),
    "guard-cert-manager": ({"serve": {"enabled": False}, "guard": {"enabled": True}}, (helm.CERT_MANAGER,),
                           DEPLOY / "guard"),
    "guard-self-signed": ({"serve": {"enabled": False}, "guard": {"enabled": True, "certificate": "self-signed"}}, (),
                          DEPLOY / "guard-self-signed"),
}


@pytest.fixture(scope="module")
def release_namespace():
    """kfin-system, which `helm uninstall` leaves: deleted once the module's scenarios are done (each installs into
    it again, so none can delete it at its own end)."""
    used = []
    yield used
    if used:
        helm.delete_namespace(used[-1], NAMESPACE)


def keyed(objects: list[dict]) -> dict[tuple[str, str, str], dict]:
    return {(o["apiVersion"], o["kind"], o["metadata"]["name"]): o for o in objects}


def kustomized(directory) -> dict[tuple[str, str, str], dict]:
    """What `kubectl apply -k DIRECTORY` applies, less the Namespace (the chart installs into one)."""
    local = "config.kubernetes.io/local-config"
    return keyed([o for o in built(directory) if o["kind"] != "Namespace"
                  and (o["metadata"].get("annotations") or {}).get(local) != "true"])


@needs_kubectl
@helm.needs_helm
@pytest.mark.real_only(REAL_HELM)
@pytest.mark.parametrize("row", list(ROWS))
def test_the_chart_and_the_kustomization_make_the_same_objects(row, cluster, release_namespace):
    values, served, kustomization = ROWS[row]
    release_namespace.append(cluster.api)
    with helm.served_kinds(cluster.api, *served), installed(cluster, values) as release:
        assert release["info"]["status"] == "deployed"
        for obj in helm.manifest(release):  # Helm's standard labels on each, besides deploy/'s
            assert {label: obj["metadata"]["labels"].get(label) for label in helm.HELM_LABELS} == {
                "helm.sh/chart": "kfin-0.1.0", "app.kubernetes.io/managed-by": "Helm",
                "app.kubernetes.io/instance": RELEASE, "app.kubernetes.io/version": "0.1.0"}
        charted = keyed([helm.without_helm_labels(o) for o in helm.manifest(release)])
        dashboard = charted.pop(("v1", "ConfigMap", "kfin-dashboard"), None)
        expected = kustomized(kustomization)
        assert sorted(charted) == sorted(expected)
        for key, obj in expected.items():
            assert charted[key] == obj, key
        if row.startswith("serve"):  # the dashboard goes with kfin serve, as the sidecar finds it
            assert dashboard is not None
            assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
            assert dashboard["data"]["kfin.json"] == (DEPLOY / "grafana" / "kfin.json").read_text()
            assert json.loads(dashboard["data"]["kfin.json"])["uid"] == "kfin-stuck"
        else:
            assert dashboard is None
            assert "kfin preflight helm kfin -n kfin-system" in release["info"]["notes"]


@contextmanager
def installed(cluster, values: dict, release: str = RELEASE, namespace: str = NAMESPACE) -> Iterator[dict]:
    """The chart installed with `values` as `release` in `namespace` (kfin in kfin-system), until the block ends:
    the release as Helm returns it; uninstalled at the end of the block."""
    made = helm.install(cluster.kubeconfig, release, namespace, values)
    try:
        yield made
    finally:
        helm.uninstall(cluster.kubeconfig, release, namespace)


def objects_of(release: dict) -> dict[tuple[str, str], dict]:
    """A release's manifest's objects by (kind, name), Helm's labels left out."""
    return {(o["kind"], o["metadata"]["name"]): helm.without_helm_labels(o) for o in helm.manifest(release)}


def guard_args(objects: dict) -> list[str]:
    [container] = objects[("Deployment", "kfin-guard")]["spec"]["template"]["spec"]["containers"]
    return container["args"]


@needs_kubectl
@helm.needs_helm
@pytest.mark.real_only(REAL_HELM)
def test_the_runbook_url_fills_each_alert_as_the_kustomizations_replacement_does(cluster, release_namespace,
                                                                                tmp_path):
    url = "https://kfin.example.com/docs/runbook/"
    copied = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copied)
    kustomization = copied / "prometheus-operator" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("- url=\n", f"- url={url}\n"))
    [expected] = [o for o in built(copied / "prometheus-operator") if o["kind"] == "PrometheusRule"]
    release_namespace.append(cluster.api)
    with helm.served_kinds(cluster.api, helm.PROMETHEUS_OPERATOR), \
            installed(cluster, {"prometheus": {"runbookUrl": url}}) as release:
        rule = objects_of(release)[("PrometheusRule", "kfin")]
        assert rule == expected
        urls = [r["annotations"]["runbook_url"] for r in rule["spec"]["groups"][0]["rules"]]
        assert f'{{{{ with "{url}" }}}}{{{{ . }}}}#kfinabsent{{{{ end }}}}' in urls


@helm.needs_helm
@pytest.mark.real_only(REAL_HELM)
def test_the_guards_values_reach_its_objects(cluster, release_namespace):
    """What an installer chooses for the guard: its mode (kfin guard --warn-only, --deny, neither), the users it
    skips, the webhook's failurePolicy, timeout and selectors, a URL for a guard outside the cluster (then nothing
    of it runs inside), and the Prometheus Operator's objects, forced off while the kinds are served."""
    release_namespace.append(cluster.api)
    with installed(cluster, {"serve": {"enabled": False}, "guard": {
            "enabled": True, "certificate": "self-signed", "mode": "warn", "skipUsers": ["ci-bot", "argocd"],
            "failurePolicy": "Fail", "timeoutSeconds": 10, "affinity": {},
            "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
            "objectSelector": {"matchLabels": {"guarded": "yes"}}}}) as release:
        objects = objects_of(release)
        args = guard_args(objects)
        assert args[args.index("--request-timeout"):] == ["--request-timeout", "30s", "--warn-only",
                                                          "--skip-user", "ci-bot", "--skip-user", "argocd"]
        assert "affinity" not in objects[("Deployment", "kfin-guard")]["spec"]["template"]["spec"]
        [hook] = objects[("ValidatingWebhookConfiguration", "kfin-guard")]["webhooks"]
        assert (hook["failurePolicy"], hook["timeoutSeconds"]) == ("Fail", 10)
        assert hook["namespaceSelector"] == {"matchExpressions": [{"key": "team", "operator": "Exists"}]}
        assert hook["objectSelector"] == {"matchLabels": {"guarded": "yes"}}
        # what the API server made of it: the configuration as given
        served = cluster.get("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kfin-guard")
        assert served["webhooks"][0]["failurePolicy"] == "Fail"

    with installed(cluster, {"guard": {"enabled": True, "certificate": "self-signed", "mode": "deny"}}) as release:
        objects = objects_of(release)
        assert guard_args(objects)[-1] == "--deny"
        assert ("Deployment", "kfin") in objects  # both parts

    url = "https://127.0.0.1:9443/validate"
    with helm.served_kinds(cluster.api, helm.PROMETHEUS_OPERATOR), installed(cluster, {
            "serve": {"enabled": False}, "guard": {"enabled": True, "certificate": "self-signed", "url": url},
            "prometheus": {"serviceMonitor": False, "rules": False}}) as release:
        objects = objects_of(release)
        kinds = sorted(kind for kind, _ in objects)
        assert kinds == ["ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "Role",
                         "RoleBinding", "ServiceAccount", "ValidatingWebhookConfiguration"]
        [hook] = objects[("ValidatingWebhookConfiguration", "kfin-guard")]["webhooks"]
        assert hook["clientConfig"] == {"url": url}


@helm.needs_helm
@pytest.mark.real_only(REAL_HELM)
def test_with_the_prometheus_operator_the_guard_has_its_service_monitor_and_alert(cluster, release_namespace):
    release_namespace.append(cluster.api)
    with helm.served_kinds(cluster.api, helm.PROMETHEUS_OPERATOR, helm.CERT_MANAGER), \
            installed(cluster, {"guard": {"enabled": True}}) as release:
        objects = objects_of(release)
        monitor = objects[("ServiceMonitor", "kfin-guard")]
        assert monitor["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "kfin-guard"}}
        assert monitor["spec"]["endpoints"] == [{"port": "metrics", "interval": "60s"}]
        [group] = objects[("PrometheusRule", "kfin-guard")]["spec"]["groups"]
        plain = yaml.safe_load((DEPLOY / "guard" / "prometheus-rules.yaml").read_text())
        assert [group] == plain["groups"]  # deploy/guard's alert as it is, the empty runbook_url too
        assert ("PrometheusRule", "kfin") in objects and ("ServiceMonitor", "kfin") in objects


@helm.needs_helm
@pytest.mark.real_only(REAL_HELM)
def test_a_bad_value_is_refused_by_helm_before_anything_is_made(cluster):
    for bad, said in (({"guard": {"mode": "block"}}, "mode"), ({"serve": {"replicas": 2}}, "replicas")):
        with pytest.raises(helm.helm_sdkpy.InstallError) as refused:
            helm.install(cluster.kubeconfig, RELEASE, cluster.namespace, bad)
        assert "values don't meet the specifications of the schema" in str(refused.value)
        assert said in str(refused.value)
        assert helm.releases(cluster.kubeconfig, cluster.namespace) == []
    # the template says it too, for an install that skips the schema (Helm's lint renders `fail` as a log line)
    with pytest.raises(helm.helm_sdkpy.InstallError) as refused:
        helm.install(cluster.kubeconfig, RELEASE, cluster.namespace, {"guard": {
            "enabled": True, "url": "https://127.0.0.1:9443/validate"}}, skip_schema_validation=True)
    assert "guard.url needs guard.certificate self-signed" in str(refused.value)
    assert helm.releases(cluster.kubeconfig, cluster.namespace) == []


@helm.needs_helm
@pytest.mark.real_only(REAL_HELM)
@pytest.mark.parametrize("certificate", ["cert-manager", "self-signed"])
def test_a_release_of_another_name_in_another_namespace_refers_to_its_own_objects(certificate, cluster):
    """Every name one object gives another follows the release's name and namespace: the bindings' subjects, the
    webhook's Service and the user it skips, the certificate's Secret and DNS names, what the self-signed guard
    writes and the rights it has for exactly that. Selectors stay deploy/'s (app.kubernetes.io/name)."""
    release, ns = cluster.name("finalizers"), cluster.namespace
    served = (helm.CERT_MANAGER,) if certificate == "cert-manager" else ()
    with helm.served_kinds(cluster.api, *served), \
            installed(cluster, {"guard": {"enabled": True, "certificate": certificate}}, release, ns) as made:
        objects = {(o["kind"], o["metadata"]["name"]): o for o in helm.manifest(made)}
        guard = f"{release}-guard"
        assert {name for _, name in objects} >= {release, f"{release}-reader", guard, f"{guard}-reader"}
        for (kind, name), obj in objects.items():
            assert obj["metadata"]["labels"]["app.kubernetes.io/instance"] == release
            if kind in ("ClusterRoleBinding", "RoleBinding"):
                assert obj["roleRef"]["name"] == name
                [subject] = obj["subjects"]
                assert ("ServiceAccount", subject["name"]) in objects and subject["namespace"] == ns
        for name, pod_label in ((release, "kfin"), (guard, "kfin-guard")):
            pod = objects[("Deployment", name)]["spec"]["template"]
            assert pod["metadata"]["labels"] == {"app.kubernetes.io/name": pod_label}
            assert objects[("Service", name)]["spec"]["selector"] == {"app.kubernetes.io/name": pod_label}
            assert pod["spec"]["serviceAccountName"] == name
        [hook] = objects[("ValidatingWebhookConfiguration", guard)]["webhooks"]
        assert hook["clientConfig"]["service"] == {"namespace": ns, "name": guard, "path": "/validate",
                                                   "port": 443}
        skipped = hook["matchConditions"][0]["expression"]
        assert f"'system:serviceaccount:{ns}:{guard}'" in skipped
        assert f"'system:serviceaccount:{ns}:{release}'" in skipped
        args = objects[("Deployment", guard)]["spec"]["template"]["spec"]["containers"][0]["args"]
        if certificate == "cert-manager":
            issued = objects[("Certificate", guard)]["spec"]
            assert issued["dnsNames"] == [f"{guard}.{ns}.svc", f"{guard}.{ns}.svc.cluster.local"]
            assert ("Issuer", issued["issuerRef"]["name"]) in objects
            volumes = objects[("Deployment", guard)]["spec"]["template"]["spec"]["volumes"]
            assert {"name": "tls", "secret": {"secretName": issued["secretName"]}} in volumes
            annotations = objects[("ValidatingWebhookConfiguration", guard)]["metadata"]["annotations"]
            assert annotations == {"cert-manager.io/inject-ca-from": f"{ns}/{guard}"}
        else:
            option = dict(zip(args, args[1:]))
            assert (option["--service-name"], option["--service-namespace"]) == (guard, ns)
            assert option["--webhook-configuration"] == guard
            secret_rule = objects[("Role", f"{guard}-tls")]["rules"][0]
            assert secret_rule["resourceNames"] == [option["--tls-secret"]] == [f"{guard}-ca"]
            assert objects[("ClusterRole", f"{guard}-webhook-ca")]["rules"][0]["resourceNames"] == [guard]


@helm.needs_helm
@pytest.mark.real_only(REAL_HELM)
def test_an_installers_pod_settings_reach_the_pods_the_api_server_keeps(cluster, release_namespace):
    """The image, pull secrets, placement, annotations and resources an installer sets, on both parts, as the API
    server stored the Deployments; the dashboard in Grafana's namespace with the sidecar's label of its choice."""
    release_namespace.append(cluster.api)
    placement = {"nodeSelector": {"kubernetes.io/os": "linux"},
                 "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}]}
    resources = {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}
    values = {"image": {"repository": "registry.example.com/kfin", "tag": "0.1.1", "pullPolicy": "Always"},
              "imagePullSecrets": [{"name": "registry"}],
              "serve": {**placement, "resources": resources, "podAnnotations": {"team": "platform"}},
              "guard": {**placement, "enabled": True, "certificate": "self-signed", "replicas": 3},
              "grafana": {"dashboard": {"namespace": cluster.namespace, "label": "dashboards", "labelValue": "kfin"}}}
    with installed(cluster, values):
        for name in ("kfin", "kfin-guard"):
            stored = cluster.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{name}")
            pod = stored["spec"]["template"]["spec"]
            [container] = pod["containers"]
            assert (container["image"], container["imagePullPolicy"]) == ("registry.example.com/kfin:0.1.1", "Always")
            assert pod["imagePullSecrets"] == [{"name": "registry"}]
            assert pod["nodeSelector"] == placement["nodeSelector"]
            assert pod["tolerations"] == placement["tolerations"]
        serve = cluster.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/kfin")["spec"]
        assert serve["template"]["spec"]["containers"][0]["resources"] == resources
        assert serve["template"]["metadata"]["annotations"] == {"team": "platform"}
        assert cluster.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/kfin-guard")["spec"]["replicas"] == 3
        dashboard = cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/kfin-dashboard")
        assert dashboard["metadata"]["labels"]["dashboards"] == "kfin"
    assert cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/kfin-dashboard") is None  # uninstalled
