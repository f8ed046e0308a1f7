"""deploy/: the manifests that run kfin serve in a cluster, checked as an operator would before applying
them: kustomize builds them, every built-in object is valid against Kubernetes' own schema
(kubernetes-validate, strict), the Pod runs read-only and unprivileged, the role only reads, and
`kubectl apply --dry-run=client` accepts them on a server that knows the Prometheus Operator's kinds."""

import re
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from bench.tools import installed_command
from kfin.render import metrics
from tests.fakeapi import FakeAPIServer
from tests.fakeapi.tls import self_signed
from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT
DEPLOY = ROOT / "deploy"
KUBERNETES_VERSION = "1.36.0"
KUBECTL = installed_command("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install -e '.[test]')")


def built(directory: Path) -> list[dict]:
    done = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def by_kind(objects: list[dict]) -> dict[str, dict]:
    return {o["kind"]: o for o in objects}


@needs_kubectl
def test_kustomize_builds_a_valid_read_only_least_privilege_deployment():
    objects = built(DEPLOY)
    kinds = by_kind(objects)
    assert set(kinds) == {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service"}
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)  # raises on any unknown or wrong field
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == "kfin-system"

    rules = kinds["ClusterRole"]["rules"]
    assert all(set(rule["verbs"]) <= {"get", "list", "watch"} for rule in rules)  # never a write
    binding = kinds["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == kinds["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kfin", "namespace": "kfin-system"}]

    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kfin" and pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    [container] = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert container["resources"]["requests"]["memory"] and container["resources"]["limits"]["memory"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    # what kfin writes (its discovery cache) goes to a writable volume, as the read-only root needs
    cache = next(e["value"] for e in container["env"] if e["name"] == "KFIN_CACHE_DIR")
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts[cache] in {v["name"] for v in pod["volumes"] if "emptyDir" in v}

    # the port kfin listens on is the one the probes, the Service and the scrape annotation name
    args = container["args"]
    listen = args[args.index("--listen") + 1]
    [port] = [p for p in container["ports"] if p["name"] == "metrics"]
    assert listen == f":{port['containerPort']}"
    service = kinds["Service"]
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    assert service["metadata"]["annotations"]["prometheus.io/port"] == str(port["containerPort"])
    assert service["spec"]["selector"].items() <= kinds["Deployment"]["spec"]["template"]["metadata"]["labels"].items()


@needs_kubectl
def test_the_container_arguments_are_a_valid_kfin_serve_command(tmp_path):
    [container] = by_kind(built(DEPLOY))["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert container["args"][0] == "serve"
    # parsed in full, then refused only for the missing kubeconfig (exit 3), never as a usage error (exit 2)
    result = kfin(*container["args"][:1], "--kubeconfig", str(tmp_path / "none"), *container["args"][1:])
    assert result.code == 3 and "does not exist" in result.stderr


def test_the_prometheus_rule_holds_the_same_alerts_as_the_rules_file_and_uses_only_kfin_metrics():
    plain = yaml.safe_load((DEPLOY / "prometheus-rules.yaml").read_text())
    rule = yaml.safe_load((DEPLOY / "prometheus-operator" / "prometheusrule.yaml").read_text())
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["spec"] == plain
    alerts = {r["alert"]: r for group in plain["groups"] for r in group["rules"]}
    assert {"KfinNamespaceStuckTerminating", "KfinOrphanedFinalizer", "KfinWebhookGatingDeletions",
            "KfinControllerStalled"} <= set(alerts)
    assert 'verdict="STALLED"' in alerts["KfinControllerStalled"]["expr"]  # someone must act (issue 40)
    assert "3600" in alerts["KfinNamespaceStuckTerminating"]["expr"]  # a namespace Terminating for over an hour
    exposed = {f.name for f in metrics.stuck_families([], [], 0.1, 0.0)} | {
        "kfin_scans_total", "kfin_scan_errors_total", "kfin_last_scan_success", "kfin_result_age_seconds"}
    used = {name for r in alerts.values() for name in re.findall(r"\bkfin_[a-z_]+", r["expr"])}
    assert used and used <= exposed, used - exposed


@pytest.mark.skipif(installed_command("promtool") is None, reason="promtool not installed (Debian: prometheus)")
def test_promtool_accepts_the_rules():
    done = subprocess.run(["promtool", "check", "rules", str(DEPLOY / "prometheus-rules.yaml")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


PROMETHEUS_OPERATOR_KINDS = [("servicemonitors", "ServiceMonitor"), ("prometheusrules", "PrometheusRule")]


@needs_kubectl
@pytest.mark.parametrize("overlay", ["", "prometheus-operator"])
def test_kubectl_apply_dry_run_accepts_the_manifests(overlay, tmp_path):
    """Against tests/fakeapi (which knows the Prometheus Operator's CRDs here). The fake serves no OpenAPI
    documents, so kubectl's own schema check is off (--validate=false): the strict schema check is the
    kubernetes-validate test above."""
    fake = FakeAPIServer().start(tls=self_signed(tmp_path))
    try:
        for plural, kind in PROMETHEUS_OPERATOR_KINDS:
            fake.apply({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                        "metadata": {"name": f"{plural}.monitoring.coreos.com"},
                        "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
                                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                                     "openAPIV3Schema": {"type": "object",
                                                         "x-kubernetes-preserve-unknown-fields": True}}}]}})
        kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
        done = subprocess.run([KUBECTL, "apply", "--dry-run=client", "--validate=false", "-k", str(DEPLOY / overlay),
                               "--kubeconfig", str(kubeconfig), "-o", "name"], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        names = set(done.stdout.split())
        assert {"deployment.apps/kfin", "clusterrole.rbac.authorization.k8s.io/kfin-reader"} <= names
        if overlay:
            assert {"servicemonitor.monitoring.coreos.com/kfin", "prometheusrule.monitoring.coreos.com/kfin"} <= names
    finally:
        fake.stop()


# Each alert's runbook_url: a template Prometheus renders as the runbook page's URL and the alert's own anchor, or
# as nothing while the URL is not set (kfin is published nowhere yet). The one value an installer sets: the url=
# literal of deploy/prometheus-operator/kustomization.yaml, or the quotes of {{ with "" }} in the rules file.
RUNBOOK_URL = "https://docs.example.com/kfin/runbook/"


def runbook_template(url: str, alert: str) -> str:
    return f'{{{{ with "{url}" }}}}{{{{ . }}}}#{alert.lower()}{{{{ end }}}}'


def alerts_of(groups: dict) -> dict[str, dict]:
    return {r["alert"]: r for group in groups["groups"] for r in group["rules"]}


def test_every_alert_links_its_own_section_of_the_runbook_and_nowhere_by_default():
    alerts = alerts_of(yaml.safe_load((DEPLOY / "prometheus-rules.yaml").read_text()))
    runbook = (DEPLOY / "RUNBOOK.md").read_text()
    for name, rule in alerts.items():
        assert rule["annotations"]["runbook_url"] == runbook_template("", name), name
        assert f"\n## {name}\n" in runbook, f"deploy/RUNBOOK.md has no section for {name}"
    assert len(alerts) == 7


def with_runbook_url(tmp_path: Path) -> Path:
    """A copy of deploy/ with the runbook's URL set as RUNBOOK.md tells an installer to."""
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy)
    kustomization = copy / "prometheus-operator" / "kustomization.yaml"
    text = kustomization.read_text()
    assert text.count("- url=\n") == 1
    kustomization.write_text(text.replace("- url=\n", f"- url={RUNBOOK_URL}\n"))
    return copy


@needs_kubectl
def test_kustomize_gives_every_alert_the_runbook_url_the_installer_sets(tmp_path):
    default = by_kind(built(DEPLOY / "prometheus-operator"))
    assert "ConfigMap" not in default  # the value's ConfigMap is local to the build, never applied
    for name, rule in alerts_of(default["PrometheusRule"]["spec"]).items():
        assert rule["annotations"]["runbook_url"] == runbook_template("", name), name

    chosen = by_kind(built(with_runbook_url(tmp_path) / "prometheus-operator"))
    assert "ConfigMap" not in chosen
    alerts = alerts_of(chosen["PrometheusRule"]["spec"])
    assert len(alerts) == 7
    for name, rule in alerts.items():
        assert rule["annotations"]["runbook_url"] == runbook_template(RUNBOOK_URL, name), name
        rule["annotations"]["runbook_url"] = runbook_template("", name)
    assert chosen["PrometheusRule"] == default["PrometheusRule"]  # nothing else changed


@pytest.mark.skipif(installed_command("promtool") is None, reason="promtool not installed (Debian: prometheus)")
@pytest.mark.parametrize("source", ["rules-file", "kustomize"])
@pytest.mark.parametrize("url", ["", RUNBOOK_URL])
def test_prometheus_renders_runbook_url_as_the_page_and_the_alerts_anchor_or_as_nothing(source, url, tmp_path):
    """promtool's unit test fires KfinAbsent (no kfin series at all) and compares its rendered annotations."""
    if source == "kustomize":
        if KUBECTL is None:
            pytest.skip("kubectl not installed (pip install -e '.[test]')")
        deploy = with_runbook_url(tmp_path) if url else DEPLOY
        rules = by_kind(built(deploy / "prometheus-operator"))["PrometheusRule"]["spec"]
    else:  # as RUNBOOK.md tells: the URL between the quotes of {{ with "" }}
        text = (DEPLOY / "prometheus-rules.yaml").read_text()
        assert text.count('{{ with "" }}') == 7
        rules = yaml.safe_load(text.replace('{{ with "" }}', f'{{{{ with "{url}" }}}}'))
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    annotations = dict(alerts_of(yaml.safe_load((DEPLOY / "prometheus-rules.yaml").read_text()))["KfinAbsent"][
        "annotations"], runbook_url=f"{url}#kfinabsent" if url else "")
    case = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": [], "alert_rule_test": [{
            "eval_time": "20m", "alertname": "KfinAbsent",
            "exp_alerts": [{"exp_labels": {"severity": "warning"}, "exp_annotations": annotations}]}]}]}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(case))
    done = subprocess.run(["promtool", "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
