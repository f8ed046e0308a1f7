"""Real Helm for the chart's tests (deploy/chart/kfin): helm-sdkpy, which bundles Helm 4's own Go library, driven
synchronously (its actions are coroutines over a thread: asyncio.run each), and the minimal CRDs of cert-manager's
and the Prometheus Operator's kinds that the chart's objects need on a real control plane.

helm-sdkpy's wheel declares Python 3.12 or newer, but its binding loads on 3.11; it is installed in a separate step
(`pip install --ignore-requires-python helm-sdkpy`), and tests that need it are skipped with that line where it is
not (`needs_helm`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.paths import PROJECT
from tests.scenario import until

try:
    import helm_sdkpy
except (ImportError, OSError) as error:  # OSError: the wheel's shared library does not load here
    helm_sdkpy = None
    HELM_ABSENT = f"helm-sdkpy not installed ({error}): pip install --ignore-requires-python helm-sdkpy"
else:
    HELM_ABSENT = ""

needs_helm = pytest.mark.skipif(helm_sdkpy is None, reason=HELM_ABSENT)

CHART = PROJECT / "deploy" / "chart" / "kfin"
# Helm's standard labels, which the chart adds to every object besides the kustomizations' own
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
               "app.kubernetes.io/version")


def _configuration(kubeconfig: Path | str | None, namespace: str) -> Any:
    """A Helm Configuration on the cluster of `kubeconfig` (a file), for releases in `namespace`; no kubeconfig:
    one for actions that need no cluster (Lint)."""
    return helm_sdkpy.Configuration(namespace=namespace, kubeconfig=str(kubeconfig) if kubeconfig else None)


def install(kubeconfig: Path | str, release: str, namespace: str, values: dict | None = None,
            chart: Path | str = CHART, **options: Any) -> dict:
    """`helm install RELEASE CHART -n NAMESPACE --create-namespace` without waiting (no kubelet runs the Pods);
    the release as Helm returns it (its "manifest" is what Helm rendered and applied). `options`: Install.run's."""
    options = {"create_namespace": True, "wait": False, **options}
    action = helm_sdkpy.Install(_configuration(kubeconfig, namespace))
    return asyncio.run(action.run(release, str(chart), values=values or None, **options))


def upgrade(kubeconfig: Path | str, release: str, namespace: str, values: dict | None = None,
            chart: Path | str = CHART, **options: Any) -> dict:
    """`helm upgrade RELEASE CHART -n NAMESPACE` with `values` (the chart's defaults under them, as Helm's CLI
    does without --reuse-values), without waiting."""
    options = {"wait": False, **options}
    action = helm_sdkpy.Upgrade(_configuration(kubeconfig, namespace))
    return asyncio.run(action.run(release, str(chart), values=values or None, **options))


def uninstall(kubeconfig: Path | str, release: str, namespace: str, wait: bool = False) -> dict:
    """`helm uninstall RELEASE -n NAMESPACE`."""
    action = helm_sdkpy.Uninstall(_configuration(kubeconfig, namespace))
    return asyncio.run(action.run(release, wait=wait))


def status(kubeconfig: Path | str, release: str, namespace: str) -> dict:
    """`helm status RELEASE -n NAMESPACE`: the release as Helm keeps it."""
    action = helm_sdkpy.Status(_configuration(kubeconfig, namespace))
    return asyncio.run(action.run(release))


def releases(kubeconfig: Path | str, namespace: str) -> list[dict]:
    """`helm list -n NAMESPACE --all`."""
    action = helm_sdkpy.List(_configuration(kubeconfig, namespace))
    return asyncio.run(action.run(all=True)) or []  # none: null


def manifest(release: dict) -> list[dict]:
    """The objects of a release's manifest (what Helm rendered and applied), in Helm's order."""
    return [obj for obj in yaml.safe_load_all(release["manifest"]) if obj]


def lint(chart: Path | str = CHART) -> dict:
    """`helm lint CHART` (Helm's Lint action: the chart's files, its values.yaml against values.schema.json, and
    its templates rendered with those values)."""
    action = helm_sdkpy.Lint(_configuration(None, "default"))
    return asyncio.run(action.run(str(chart)))


def without_helm_labels(obj: dict) -> dict:
    """`obj` less Helm's standard labels (metadata.labels, and a Pod template's), as the kustomization has it."""
    obj = json.loads(json.dumps(obj))
    for meta in (obj.get("metadata", {}), obj.get("spec", {}).get("template", {}).get("metadata", {})):
        labels = meta.get("labels")
        if labels is None:
            continue
        for label in HELM_LABELS:
            labels.pop(label, None)
    return obj


# ----- the CRDs of the kinds the chart makes beside the built-in ones --------------------------------------------
CERT_MANAGER = "cert-manager.io"
PROMETHEUS_OPERATOR = "monitoring.coreos.com"
KINDS = {CERT_MANAGER: ("Issuer", "Certificate"), PROMETHEUS_OPERATOR: ("ServiceMonitor", "PrometheusRule")}


def crd(group: str, kind: str) -> dict:
    """A minimal CustomResourceDefinition of `kind` (namespaced, v1, any content): what makes the API server serve
    the kind, as installing cert-manager or the Prometheus Operator does."""
    plural = kind.lower() + "s"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


@contextmanager
def served_kinds(api: Any, *groups: str) -> Iterator[None]:
    """The kinds of `groups` (CERT_MANAGER, PROMETHEUS_OPERATOR) served by the API server of `api` (a RawClient,
    e.g. a scenario cluster's .api) while the block runs: their CRDs created, once served, and deleted in a
    finally, with the API server's answer awaited until they are gone. Their names are the real projects' own
    (a group cannot take a suffix), so a cluster that already has them is refused rather than changed."""
    made: list[str] = []
    try:
        for group in groups:
            for kind in KINDS[group]:
                definition = crd(group, kind)
                path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{definition['metadata']['name']}"
                if api.exists(path):
                    raise RuntimeError(f"{definition['metadata']['name']} already exists: not ours to change")
                api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", definition)
                made.append(path)
        until(lambda: all(_served(api, group, kind) for group in groups for kind in KINDS[group]),
              f"the API server to serve {', '.join(groups)}")
        yield
    finally:
        for path in made:
            api.delete(path)
        until(lambda: not any(api.exists(path) for path in made), "the CRDs to go")
        until(lambda: not any(_served(api, group, kind) for group in groups for kind in KINDS[group]),
              f"the API server to stop serving {', '.join(groups)}")


def _served(api: Any, group: str, kind: str) -> bool:
    code, answer = api.send("GET", f"/apis/{group}/v1")
    return code == 200 and any(r["kind"] == kind for r in answer.get("resources", ()))



def delete_namespace(api: Any, name: str) -> None:
    """Delete the namespace `name` (a release's, which `helm uninstall` leaves) and wait until it is gone."""
    path = f"/api/v1/namespaces/{name}"
    if api.exists(path):
        api.delete(path)
    until(lambda: not api.exists(path), f"namespace {name} to go", seconds=120)


def package(destination: Path, chart: Path | str = CHART) -> Path:
    """`helm package CHART -d DESTINATION`: the chart's archive."""
    action = helm_sdkpy.Package(_configuration(None, "default"))
    return Path(asyncio.run(action.run(str(chart), dest_dir=str(destination))))
