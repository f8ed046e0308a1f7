"""The chart (deploy/chart/kfin) and the kustomizations of deploy/ make the same objects for the same choices: each
row of the chart's contract installed through real Helm (helm-sdkpy, Helm 4's own library) as release kfin in
kfin-system on the real control plane, the release's manifest compared with `kubectl kustomize` of the matching
kustomization. Everything but the Namespace (the kustomizations make it, the chart installs into it), kustomize's
local-config objects and Helm's standard labels is identical: names, spec, rules, args, annotations, and the alerts'
templates ({{ $labels.name }}...), which must come through Helm unchanged. The chart's Grafana dashboard ConfigMap,
which no kustomization has, holds deploy/grafana/kfin.json as it is.

No kubelet runs the chart's Pods: nothing waits for them (wait=False)."""

import json

import pytest

from tests import helm
from tests.paths import PROJECT
from tests.project.test_deploy import built, needs_kubectl

RELEASE, NAMESPACE = "kfin", "kfin-system"
DEPLOY = PROJECT / "deploy"
REAL_HELM = "real Helm installs into a real API server; the fake serves no Helm release storage faithfully"

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
    with helm.served_kinds(cluster.api, *served):
        release = helm.install(cluster.kubeconfig, RELEASE, NAMESPACE, values)
        try:
            assert release["info"]["status"] == "deployed"
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
        finally:
            helm.uninstall(cluster.kubeconfig, RELEASE, NAMESPACE)
