"""deploy/chart/kfin checked without a cluster, with real Helm (helm-sdkpy: Helm 4's own library): its Lint passes
for the values an installer starts from and for each choice the chart offers; its values.schema.json refuses an
unknown value and a bad choice (Lint checks the chart's values.yaml against the schema, as install and upgrade do
with an installer's values); and every value of values.yaml says what it is, in a comment, and is one the schema
knows (and the schema knows no value values.yaml leaves out)."""

import copy
import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml

from tests import helm

ERROR = 3  # Helm's lint severities (pkg/chart/v2/lint/support/message.go): 1 info, 2 warning, 3 error
VALUES = helm.CHART / "values.yaml"
SCHEMA = helm.CHART / "values.schema.json"


def linted_with(tmp_path: Path, change: dict) -> dict[str, int]:
    """Lint of a copy of the chart (its links to deploy/ followed) whose values.yaml is the chart's with `change`
    merged in; {path: the worst severity Helm gives it}. helm-sdkpy hands back each message's path and severity
    (its error text does not come through its JSON)."""
    chart = tmp_path / "kfin"
    shutil.copytree(helm.CHART, chart)
    values = merged(yaml.safe_load(VALUES.read_text()), change)
    (chart / "values.yaml").write_text(yaml.safe_dump(values))
    worst: dict[str, int] = {}
    for message in helm.lint(chart)["Messages"]:
        worst[message["Path"]] = max(worst.get(message["Path"], 0), message["Severity"])
    return worst


def merged(base: dict, change: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in change.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@helm.needs_helm
def test_helm_lint_passes():
    result = helm.lint()
    assert result["TotalChartsLinted"] == 1
    assert not result["Errors"], result
    assert all(m["Severity"] < 2 for m in result["Messages"]), result  # the one info: a chart icon is recommended


@helm.needs_helm
def test_the_packaged_chart_holds_deploys_alerts_and_dashboard(tmp_path):
    """files/ links to deploy/ (one copy of the alerts and the dashboard); Helm's package stores what they link to."""
    archive = helm.package(tmp_path)
    assert archive.name == "kfin-0.1.0.tgz"
    deploy = helm.CHART.parents[1]
    with tarfile.open(archive) as packed:
        for stored, source in (("kfin/files/prometheus-rules.yaml", deploy / "prometheus-rules.yaml"),
                               ("kfin/files/guard-prometheus-rules.yaml", deploy / "guard" / "prometheus-rules.yaml"),
                               ("kfin/files/kfin.json", deploy / "grafana" / "kfin.json")):
            member = packed.getmember(stored)
            assert member.isfile() and packed.extractfile(member).read() == source.read_bytes()


# each choice the chart offers renders (Lint renders the templates with the values)
CHOICES = {
    "guard with cert-manager": {"guard": {"enabled": True}},
    "guard self-signed, both parts": {"guard": {"enabled": True, "certificate": "self-signed"}},
    "guard warn only, fail closed": {"guard": {"enabled": True, "mode": "warn", "failurePolicy": "Fail",
                                              "timeoutSeconds": 10}},
    "guard deny everywhere, skipping users, selectors": {"guard": {
        "enabled": True, "mode": "deny", "skipUsers": ["system:serviceaccount:argocd:argocd-application-controller"],
        "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
        "objectSelector": {"matchLabels": {"guarded": "yes"}}, "affinity": {},
        "podDisruptionBudget": {"enabled": False}}},
    "guard outside the cluster": {"serve": {"enabled": False},
                                  "guard": {"enabled": True, "certificate": "self-signed",
                                            "url": "https://10.0.0.5:8443/validate"}},
    "the Prometheus Operator's objects forced, a runbook": {
        "guard": {"enabled": True},
        "prometheus": {"serviceMonitor": True, "rules": True, "runbookUrl": "https://kfin.example.com/runbook/",
                       "labels": {"release": "monitoring"}}},
    "an installer's pod settings": {
        "fullnameOverride": "finalizers", "image": {"tag": "0.1.1", "pullPolicy": "Always"},
        "imagePullSecrets": [{"name": "registry"}],
        "serve": {"nodeSelector": {"kubernetes.io/os": "linux"}, "podAnnotations": {"team": "platform"},
                  "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}]},
        "grafana": {"dashboard": {"namespace": "monitoring", "label": "dashboards", "labelValue": "kfin"}}},
}


@helm.needs_helm
@pytest.mark.parametrize("choice", list(CHOICES))
def test_each_choice_lints(choice, tmp_path):
    assert set(linted_with(tmp_path, CHOICES[choice]).values()) <= {1}, choice


@helm.needs_helm
@pytest.mark.parametrize("bad", [
    {"serve": {"replicas": 3}},  # unknown (serve runs one replica)
    {"guard": {"enabeld": True}},  # misspelt
    {"rbac": {"create": True}},  # no value widens, or drops, the rights
    {"guard": {"mode": "block"}},
    {"guard": {"failurePolicy": "ignore"}},
    {"guard": {"timeoutSeconds": 31}},
    {"guard": {"certificate": "vault"}},
    {"prometheus": {"serviceMonitor": "yes"}},
    {"guard": {"url": "http://10.0.0.5:8443/validate"}},  # kube-apiserver calls webhooks over https only
], ids=lambda bad: json.dumps(bad))
def test_the_schema_refuses_unknown_values_and_bad_choices(bad, tmp_path):
    assert linted_with(tmp_path, {}).get("values.yaml", 0) < ERROR  # the chart's own values pass
    assert linted_with(tmp_path / "bad", bad).get("values.yaml") == ERROR


@helm.needs_helm
def test_a_url_without_a_self_signed_certificate_is_refused(tmp_path):
    """The guard outside the cluster writes the caBundle itself; cert-manager's would be for the Service's name."""
    refused = linted_with(tmp_path, {"guard": {"enabled": True, "url": "https://10.0.0.5:8443/validate"}})
    assert refused.get("values.yaml") == ERROR


KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z_][\w]*):(?P<rest>.*)$")


def test_every_value_is_documented_by_a_comment():
    """Each key of values.yaml has a comment: on its line, or the lines right above it at its indentation."""
    lines = VALUES.read_text().splitlines()
    undocumented = []
    for number, line in enumerate(lines):
        key = KEY.match(line)
        if not key:
            continue
        above = lines[number - 1] if number else ""
        commented_above = above.strip().startswith("#") and above.startswith(key["indent"] + "#")
        if not (commented_above or " # " in key["rest"]):
            undocumented.append(f"{number + 1}: {line.strip()}")
    assert not undocumented, undocumented


# Kubernetes' own structures, which the chart passes through to the objects: their schema has Kubernetes' fields,
# more than the defaults name
KUBERNETES_STRUCTURES = {"resources", "namespaceSelector", "objectSelector"}


def test_the_schema_knows_every_value_and_no_other():
    """values.yaml and values.schema.json name the same values, so that the schema's additionalProperties: false
    refuses exactly what the chart does not read."""
    schema = json.loads(SCHEMA.read_text())

    def differences(values: dict, node: dict, where: str) -> list[str]:
        if node.get("additionalProperties") is not False:
            return []
        out = [f"{where}{k}: not in the schema" for k in values if k not in node["properties"]]
        out += [f"{where}{k}: not in values.yaml" for k in node["properties"] if k not in values]
        for key, value in values.items():
            if isinstance(value, dict) and key in node["properties"] and key not in KUBERNETES_STRUCTURES:
                out += differences(value, node["properties"][key], f"{where}{key}.")
        return out

    assert differences(yaml.safe_load(VALUES.read_text()), schema, "") == []


def test_the_install_page_names_every_value_an_installer_sets():
    """docs/install.md's table of values names each of values.yaml's (down to Kubernetes' own structures), so an
    installer reading the page finds every choice the chart offers."""
    page = (helm.CHART.parents[2] / "docs" / "install.md").read_text()

    def names(values: dict, where: str) -> list[str]:
        out = []
        for key, value in values.items():
            if isinstance(value, dict) and value and key not in KUBERNETES_STRUCTURES | {"labels"}:
                out += names(value, f"{where}{key}.")
            else:
                out.append(f"{where}{key}")
        return out

    def named(name: str) -> bool:  # `guard.replicas`, or `.label` after its parent `grafana.dashboard.enabled`
        return f"`{name}`" in page or f"`.{name.rsplit('.', 1)[-1]}`" in page

    assert [name for name in names(yaml.safe_load(VALUES.read_text()), "") if not named(name)] == []
