"""Ecosystem finalizers on a cluster (issue 24): objects shaped as the projects write them (CRD names and status
fields from their source), explained with the project named, its controller found or its absence proven, the
holders listed and the project's own risk. On a real control plane a project's CRD that already exists (the
project is installed) skips the scenario rather than touch it."""

import json

import pytest
import yaml

from kfin.core.read import catalog
from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenario import node_a_budget_stops

SCHEMA = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def project_crd(cluster, group, plural, kind, scope="Namespaced", version="v1alpha1"):
    """The project's own CRD, created for the scenario (and removed after it); skipped where it exists."""
    name = f"{plural}.{group}"
    if cluster.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}") is not None:
        pytest.skip(f"{name} exists on this cluster: the project is installed, kfin leaves it alone")
    cluster.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": name},
                    "spec": {"group": group, "scope": scope, "names": {"plural": plural, "kind": kind},
                             "versions": [{"name": version, "served": True, "storage": True, "schema": SCHEMA,
                                           "subresources": {"status": {}}}]}})
    cluster.eventually(lambda: cluster.api.send("GET", f"/apis/{group}/{version}")[0] == 200, message="the CRD")


def entry_in(cluster, name, tmp_path):
    """The shipped entry, with the controller's namespace this scenario's (as a user with another namespace would
    write it in catalog.d)."""
    shipped = next(e for e in catalog.read_file(catalog.SHIPPED) if e.name == name).to_dict()
    shipped["controller"]["namespaces"] = [cluster.namespace]
    for key in ("source",):
        shipped.pop(key)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kfin.dev/v1", "kind": "FinalizerCatalog", "entries": [shipped]}))
    return path


def test_an_argo_cd_application_names_what_it_will_delete_and_its_controller_that_does_not_run(cluster, tmp_path):
    project_crd(cluster, "argoproj.io", "applications", "Application")
    override = entry_in(cluster, "argocd-application", tmp_path)
    cluster.create({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {
        "name": "argocd-application-controller", "labels": {"app.kubernetes.io/name": "argocd-application-controller"}},
        "spec": {"replicas": 1, "serviceName": "argocd-application-controller",
                 "selector": {"matchLabels": {"app.kubernetes.io/name": "argocd-application-controller"}},
                 "template": {"metadata": {"labels": {"app.kubernetes.io/name": "argocd-application-controller"}},
                              "spec": {"containers": [{"name": "c", "image": "registry.invalid/argocd:none"}]}}}})
    app = cluster.create({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {
        "name": "guestbook", "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
        "spec": {"project": "default", "destination": {"namespace": "guestbook"}}})
    cluster.set_status(app, {"resources": [
        {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook", "name": "guestbook-ui"},
        {"version": "v1", "kind": "Service", "namespace": "guestbook", "name": "guestbook-ui"}]})
    cluster.delete(app)
    base = ("--catalog", str(override), "--kubeconfig", str(cluster.kubeconfig))
    report = json.loads(kfin(*base, "explain", "application", "guestbook", "-n", cluster.namespace, "-o",
                             "json").stdout)
    [f] = report["findings"]
    assert f["family"] == "argocd-application" and f["verdict"] == "STALLED" and f["controllerAlive"] is False
    assert "the Argo CD application controller is installed but not running (StatefulSet " in f["condition"]
    assert [h["what"] for h in f["holders"]] == ["Deployment guestbook/guestbook-ui", "Service guestbook/guestbook-ui"]
    assert f["risk"].startswith("removing it deletes the Application but leaves every resource it deployed running")
    items = json.loads(kfin(*base, "stuck", "-n", cluster.namespace, "-o", "json").stdout)["items"]
    [item] = [i for i in items if i["name"] == "guestbook"]
    assert "2 Argo CD deletes them when its controller runs" in item["blocker"]
    graph = json.loads(kfin(*base, "graph", "application", "guestbook", "-n", cluster.namespace, "-o",
                            "json").stdout)
    labels = {n["id"]: f"{n['kind']} {n['namespace']}/{n['name']}" for n in graph["nodes"]}
    drawn = {(labels[e["target"]], e["holder"]) for e in graph["edges"] if e.get("holder")}
    assert drawn == {("Deployment guestbook/guestbook-ui", "cleans-up"), ("Service guestbook/guestbook-ui",
                                                                         "cleans-up")}
    tree = kfin(*base, "graph", "application", "guestbook", "-n", cluster.namespace).stdout
    assert "cleans-up (Argo CD deletes them when its controller runs) Deployment/guestbook/guestbook-ui" in tree
    cluster.strip_finalizers(app)


def test_a_crossplane_providerconfig_is_held_by_its_usages(cluster):
    group = f"{cluster.suffix}.upbound.io"  # a provider's own group (each provider has one): suffixed
    project_crd(cluster, group, "providerconfigs", "ProviderConfig", scope="Cluster", version="v1beta1")
    project_crd(cluster, group, "providerconfigusages", "ProviderConfigUsage", scope="Cluster", version="v1beta1")
    config = cluster.create({"apiVersion": f"{group}/v1beta1", "kind": "ProviderConfig", "metadata": {
        "name": cluster.name("default"), "finalizers": ["in-use.crossplane.io"]}})
    cluster.create({"apiVersion": f"{group}/v1beta1", "kind": "ProviderConfigUsage", "metadata": {
        "name": cluster.name("usage")}, "providerConfigRef": {"name": config["metadata"]["name"]},
        "resourceRef": {"apiVersion": f"s3.{group}/v1beta1", "kind": "Bucket", "name": "logs"}})
    cluster.delete(config)
    report = json.loads(kfin("explain", f"providerconfigs.{group}", config["metadata"]["name"], "-o", "json",
                             "--kubeconfig", str(cluster.kubeconfig)).stdout)
    [f] = report["findings"]
    assert f["family"] == "crossplane-in-use" and f["verdict"] == "HOLDING"
    assert f["condition"].startswith(f"1 still uses it: Bucket logs (ProviderConfigUsage {cluster.name('usage')})")
    assert report["plan"] is not None and report["chain"]["rootCauses"][0]["object"].startswith("ProviderConfigUsage")
    cluster.strip_finalizers(config)


def test_a_karpenter_node_names_the_pod_and_the_budget_that_stop_its_drain(cluster):
    """A Node Karpenter is terminating (karpenter.sh/termination), a Pod on it covered by a PodDisruptionBudget
    with maxUnavailable 0 (no disruption allowed, whatever the Pods' health: the disruption controller computes 0
    on a real cluster, the test writes it on the fake), and one free Pod."""
    node = node_a_budget_stops(cluster)
    cluster.delete(node)
    report = json.loads(kfin("explain", "node", node["metadata"]["name"], "-o", "json",
                             "--kubeconfig", str(cluster.kubeconfig)).stdout)
    [f] = report["findings"]
    assert f["family"] == "karpenter" and f["verdict"] == "HOLDING"
    assert f"Pod {cluster.namespace}/db-0 is covered by PodDisruptionBudget db, which allows no disruption" \
        in f["condition"]
    assert {h["what"] for h in f["holders"] if h["effect"] == "cleans-up"} == {f"Pod {cluster.namespace}/web-0"}
    # issue 44: what it guards outside the cluster leads, then the project's own words
    assert f["risk"].startswith("it guards infrastructure outside the cluster (the cloud instance behind the Node): ")
    assert "; removing it deletes the Node object but leaves the cloud instance running" in f["risk"]
    cluster.strip_finalizers(node)


def test_a_flux_kustomization_lists_its_inventory(cluster):
    project_crd(cluster, "kustomize.toolkit.fluxcd.io", "kustomizations", "Kustomization", version="v1")
    kustomization = cluster.create({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                                    "metadata": {"name": "apps", "finalizers": ["finalizers.fluxcd.io"]},
                                    "spec": {"interval": "10m", "path": "./apps", "prune": True,
                                             "sourceRef": {"kind": "GitRepository", "name": "flux-system"}}})
    cluster.set_status(kustomization, {"inventory": {"entries": [
        {"id": f"{cluster.namespace}_web_apps_Deployment", "v": "v1"},
        {"id": f"{cluster.namespace}_web__Service", "v": "v1"}]}})
    cluster.delete(kustomization)
    report = json.loads(kfin("explain", "kustomization", "apps", "-n", cluster.namespace, "-o", "json",
                             "--kubeconfig", str(cluster.kubeconfig)).stdout)
    [f] = report["findings"]
    # no Flux controller here; on a real cluster a wildcard role bound elsewhere may make it UNKNOWN or WAITING
    assert f["family"] == "flux" and f["verdict"] in ("ORPHANED", "UNKNOWN", "WAITING")
    assert [h["what"] for h in f["holders"]] == [f"Deployment {cluster.namespace}/web",
                                                 f"Service {cluster.namespace}/web"]
    assert f["fix"].startswith("bring the Flux controllers back")
    cluster.strip_finalizers(kustomization)


def test_an_orphaned_finalizer_guarding_cloud_infrastructure_is_removed_in_bulk_only_with_force(cluster, tmp_path,
                                                                                                 monkeypatch):
    """Issue 44, item 2: an ACK Bucket (its finalizer as ACK's code generator names it) whose controller is gone:
    ORPHANED, and yet forcing it leaves the AWS bucket behind. explain says so first; remove --all-stuck --confirm
    --yes leaves it, saying why; with --force it is removed."""
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    group = f"s3.{cluster.suffix}.services.k8s.aws"  # the service's own group, suffixed for this scenario
    project_crd(cluster, group, "buckets", "Bucket")
    bucket = cluster.create({"apiVersion": f"{group}/v1alpha1", "kind": "Bucket", "metadata": {
        "name": "logs", "finalizers": ["finalizers.s3.services.k8s.aws/Bucket"]}, "spec": {"name": "acme-logs"}})
    cluster.delete(bucket)
    base = ("--kubeconfig", str(cluster.kubeconfig))
    report = json.loads(kfin(*base, "explain", f"buckets.{group}", "logs", "-n", cluster.namespace, "-o",
                             "json").stdout)
    [f] = report["findings"]
    assert f["family"] == "aws-controllers-k8s" and f["verdict"] == "ORPHANED"
    assert f["infrastructure"] == "the AWS resource it represents"
    assert f["risk"].startswith("it guards infrastructure outside the cluster (the AWS resource it represents)")
    shown = kfin(*base, "explain", f"buckets.{group}", "logs", "-n", cluster.namespace).stdout
    flat = " ".join(shown.replace("│", " ").split())
    assert flat.index("Guards infrastructure outside the cluster: the AWS resource it represents") < flat.index(
        "Family aws-controllers-k8s")
    bulk = ("remove", "--all-stuck", "-n", cluster.namespace, *base)
    kept = kfin(*bulk, "--confirm", "--yes")
    assert kept.code == ExitCode.REFUSED, kept
    assert "refused: it guards infrastructure outside the cluster (the AWS resource it represents)" in " ".join(
        kept.stdout.split())
    assert cluster.get(bucket)["metadata"]["finalizers"] == ["finalizers.s3.services.k8s.aws/Bucket"]
    forced = kfin(*bulk, "--confirm", "--yes", "--force")
    assert forced.code == ExitCode.OK, forced
    assert "remove: forced although it guards infrastructure outside the cluster" in " ".join(forced.stdout.split())
    cluster.eventually(lambda: cluster.get(bucket) is None, message="the Bucket, once its finalizer was forced")


def test_a_controller_that_may_run_outside_the_cluster_makes_its_finalizer_unknown_not_orphaned(cluster, tmp_path,
                                                                                                 monkeypatch):
    """Issue 44, item 3: a NodeClaim whose Karpenter runs nowhere in the cluster is ORPHANED only when nothing says
    Karpenter may run outside it; once the cluster serves EKS Auto Mode's API group (eks.amazonaws.com, where AWS
    runs Karpenter), it is UNKNOWN, named so, and remove --all-stuck leaves it."""
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    group = f"{cluster.suffix}.karpenter.sh"  # the NodeClaim's own CRD, suffixed: the finalizer names the entry
    project_crd(cluster, group, "nodeclaims", "NodeClaim", scope="Cluster", version="v1")
    claim = cluster.create({"apiVersion": f"{group}/v1", "kind": "NodeClaim", "metadata": {
        "name": cluster.name("default"), "finalizers": ["karpenter.sh/termination"]}})
    cluster.delete(claim)
    base = ("--kubeconfig", str(cluster.kubeconfig))
    explain = ("explain", f"nodeclaims.{group}", claim["metadata"]["name"], "-o", "json")
    [before] = json.loads(kfin(*base, *explain).stdout)["findings"]
    assert before["family"] == "karpenter" and before["verdict"] == "ORPHANED"
    assert any(e.startswith("no sign that it runs outside the cluster: EKS Auto Mode") for e in before["evidence"])
    project_crd(cluster, "eks.amazonaws.com", "nodeclasses", "NodeClass", scope="Cluster", version="v1")
    [after] = json.loads(kfin(*base, *explain).stdout)["findings"]
    assert after["family"] == "karpenter" and after["verdict"] == "UNKNOWN" and after["removeCommand"] is None
    assert after["condition"].startswith("no Karpenter runs in the cluster, but it may run outside it, which kfin "
                                         "cannot see: EKS Auto Mode, where AWS runs Karpenter outside the cluster: "
                                         "the cluster serves the API group eks.amazonaws.com")
    kept = kfin(*base, "remove", "--all-stuck", "--kind", f"nodeclaims.{group}", "--confirm", "--yes")
    assert cluster.get(claim)["metadata"]["finalizers"] == ["karpenter.sh/termination"], kept
    cluster.strip_finalizers(claim)


def test_a_cluster_api_delete_hook_is_named_as_the_blocker_of_its_machine(cluster):
    """Issue 44, item 4: a Machine whose deletion waits on a pre-drain delete hook (an annotation, not a
    finalizer) names the hook and its owner as what holds it, in explain, its plan and the graph."""
    group = f"{cluster.suffix}.cluster.x-k8s.io"  # the Machine's CRD, suffixed: the finalizer names the entry
    project_crd(cluster, group, "machines", "Machine", version="v1beta2")
    hook = "pre-drain.delete.hook.machine.cluster.x-k8s.io/migrate-storage"
    machine = cluster.create({"apiVersion": f"{group}/v1beta2", "kind": "Machine", "metadata": {
        "name": "worker-a1", "finalizers": ["machine.cluster.x-k8s.io"], "annotations": {hook: "storage-operator"}},
        "spec": {"clusterName": "prod"}})
    cluster.delete(machine)
    base = ("--kubeconfig", str(cluster.kubeconfig))
    report = json.loads(kfin(*base, "explain", f"machines.{group}", "worker-a1", "-n", cluster.namespace, "-o",
                             "json").stdout)
    [f] = report["findings"]
    assert f["family"] == "cluster-api" and f["verdict"] == "HOLDING"
    assert f["condition"].endswith(": pre-drain delete hook migrate-storage (owned by storage-operator)")
    assert f["fix"].startswith(f"let storage-operator finish its pre-drain work and remove the annotation {hook}")
    assert [h["what"] for h in f["holders"] if h["effect"] == "holds"] == [
        "pre-drain delete hook migrate-storage (owned by storage-operator)"]
    [step] = report["plan"]["steps"]
    assert step["note"].startswith(f"let storage-operator finish its pre-drain work and remove the annotation {hook}")
    [root] = report["chain"]["rootCauses"]
    assert "pre-drain delete hook migrate-storage (owned by storage-operator)" in json.dumps(root)
    graph = kfin(*base, "graph", f"machines.{group}", "worker-a1", "-n", cluster.namespace).stdout
    assert "pre-drain delete hook migrate-storage (owned by storage-operator)" in graph
    cluster.strip_finalizers(machine)


def test_a_composed_crossplane_usage_is_held_by_the_resource_that_still_uses(cluster):
    """Issue 44, item 4: a Usage its composite composed (labelled crossplane.io/composite) goes only after the
    resource in its spec.by: kfin names that resource as what holds it, and the Usage is free once it is gone."""
    group = f"{cluster.suffix}.protection.crossplane.io"  # the Usage's CRD, suffixed: the finalizer names the entry
    project_crd(cluster, group, "usages", "Usage", version="v1beta1")
    config = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config"}})
    used = cluster.create({"apiVersion": f"{group}/v1beta1", "kind": "Usage", "metadata": {
        "name": "settings-used-by-app", "finalizers": ["usage.apiextensions.crossplane.io"],
        "labels": {"crossplane.io/composite": "shop-xyz"}},
        "spec": {"of": {"apiVersion": "v1", "kind": "Secret", "resourceRef": {"name": "db-credentials"}},
                 "by": {"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "app-config"}}}})
    cluster.delete(used)
    base = ("--kubeconfig", str(cluster.kubeconfig))
    explain = ("explain", f"usages.{group}", "settings-used-by-app", "-n", cluster.namespace, "-o", "json")
    report = json.loads(kfin(*base, *explain).stdout)
    [f] = report["findings"]
    assert f["family"] == "crossplane-usage" and f["verdict"] == "HOLDING"
    assert f["condition"].endswith(f": ConfigMap {cluster.namespace}/app-config")
    assert [h["object"] for h in f["holders"]] == [f"ConfigMap/{cluster.namespace}/app-config"]
    cluster.delete(config)
    cluster.eventually(lambda: cluster.get(config) is None, message="the ConfigMap that used it")
    [after] = json.loads(kfin(*base, *explain).stdout)["findings"]
    assert after["verdict"] != "HOLDING" and not [h for h in after["holders"] if h["effect"] == "holds"]
    cluster.strip_finalizers(used)
