"""Safe advice (issue 57), as a user meets it on tests/fakeapi: a Pod waiting for a live kubelet is not drawn as a
node down, and every picture reads its blocking edges one way (`waits for`, as the legends say); a teardown's last
step pastes after the steps before it (`--ignore-not-found`); a refused force-delete says so, with the Pod's name.
(A Ready node's preflight: tests/scenarios/test_preflight.py, on both tiers.)"""

import json
import re

import pytest

from kfin.errors import ExitCode
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin


def node(api, name: str, ready: str) -> None:
    """A Node whose kubelet reports Ready `ready` ("True", or "Unknown": it stopped reporting)."""
    created = api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    now = created["metadata"]["creationTimestamp"]
    api.ok("PUT", f"/api/v1/nodes/{name}/status", dict(created, status={"conditions": [{
        "type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else "NodeStatusUnknown",
        "lastHeartbeatTime": now, "lastTransitionTime": now}]}))


def deleted_pod(api, namespace: str, name: str, on: str) -> None:
    """Pod `name` scheduled on node `on`, deleted gracefully: only that node's kubelet can confirm it stopped."""
    api.create(f"/api/v1/namespaces/{namespace}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                                         "spec": {"nodeName": on, "containers": [
                                                             {"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    api.delete(f"/api/v1/namespaces/{namespace}/pods/{name}")


@pytest.fixture
def api(fake):
    return RawClient(fake.url, "admin-token")


# ----- pictures ----------------------------------------------------------------------------------------------
def test_a_pod_waiting_for_a_live_kubelet_is_not_drawn_as_a_node_down(api, fake_kubeconfig):
    """explain says the kubelet of a Ready node is alive: the pictures drew its root cause `node down` (a 3-D box).
    A node that stopped reporting still is one."""
    node(api, "node-a", "True")
    deleted_pod(api, "default", "web-0", "node-a")
    node(api, "node-b", "Unknown")
    api.create("/api/v1/namespaces", {"metadata": {"name": "lost"}})
    deleted_pod(api, "lost", "db-0", "node-b")
    base = ("--kubeconfig", str(fake_kubeconfig))
    explained = kfin("explain", "pod", "web-0", *base)
    assert "its node node-a is Ready: the kubelet is alive" in explained.stdout
    dot = kfin("graph", "pod", "web-0", "-o", "dot", *base).stdout
    mermaid = kfin("graph", "pod", "web-0", "-o", "mermaid", *base).stdout
    for picture in (dot, mermaid):
        assert "node down" not in picture, picture
        assert "kubelet of node-a" in picture and "root cause: controller should act" in picture, picture
    assert "box3d" not in dot
    page = kfin("report", "-o", "html", "-n", "default", *base).stdout  # its graph: Graphviz's SVG, or the tree
    assert "kubelet of node-a" in page and "node down" not in page
    lost = kfin("graph", "pod", "db-0", "-n", "lost", "-o", "dot", *base).stdout
    assert re.search(r'"Node/node-b\\nroot cause: node down", shape=box3d', lost), lost


def owned_configmap_held(api) -> None:
    """ConfigMap owner deleted in the foreground, held by its dependent ConfigMap `part`, whose finalizer nothing
    removes: an edge `owner waits for part` (a blocking dependent)."""
    owner = api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "owner"}})
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {
        "name": "part", "finalizers": ["example.com/hold"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"],
                             "blockOwnerDeletion": True}]}})
    api.delete("/api/v1/namespaces/default/configmaps/owner", "Foreground")


def test_every_picture_labels_a_blocking_edge_as_its_legend_reads_it(api, fake_kubeconfig):
    """An edge from the object that waits to what it waits for read `blocks` (the owner blocks its dependent: the
    wrong way round) beside a legend saying `waits for`: now `waits for` in the DOT, Mermaid and the tree."""
    owned_configmap_held(api)
    base = ("cm", "owner", "--kubeconfig", str(fake_kubeconfig))
    dot = kfin("graph", *base, "-o", "dot").stdout
    edges = [line for line in dot.splitlines() if 'color="red", penwidth=2' in line and " -> " in line]
    assert len(edges) == 2 and all('label="waits for' in edge for edge in edges), dot  # owner -> part -> its remover
    assert ">waits for<" in dot  # the legend
    mermaid = kfin("graph", *base, "-o", "mermaid").stdout
    assert re.search(r"n\d+ ==>\|waits for\| n\d+", mermaid), mermaid
    assert re.search(r"n\d+ ==>\|waits for<br/>controller\| n\d+", mermaid), mermaid
    tree = kfin("graph", *base).stdout
    assert "⛔ waits for ConfigMap/default/part" in tree, tree
    assert "⛔ waits for (controller) Actor/the controller of example.com" in tree, tree
    assert "blocks" not in dot + mermaid + tree


def test_the_html_report_names_its_graph_by_the_same_words(api, fake_kubeconfig):
    owned_configmap_held(api)
    page = kfin("report", "-o", "html", "-n", "default", "--kubeconfig", str(fake_kubeconfig)).stdout
    assert "<h2>What waits for what</h2>" in page and "What blocks what" not in page
    assert "waits for" in page.split("<h2>What waits for what</h2>")[1].split("<h2>")[0]


# ----- a teardown's last step ----------------------------------------------------------------------------------
def test_a_teardowns_last_step_passes_over_what_the_steps_before_it_deleted(api, fake_kubeconfig, tmp_path):
    """The webhook configuration goes first (its Service goes with the teardown); `kubectl delete -f` after it
    answered NotFound for it and exited 1: the last step carries --ignore-not-found."""
    api.create("/api/v1/namespaces/default/services", {"apiVersion": "v1", "kind": "Service",
                                                       "metadata": {"name": "checker"},
                                                       "spec": {"ports": [{"port": 443}]}})
    api.create("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
        "metadata": {"name": "checker-1", "labels": {"kubernetes.io/service-name": "checker"}},
        "endpoints": [{"addresses": ["10.0.0.9"], "conditions": {"ready": True}}], "ports": [{"port": 8443}]})
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "settings"}})
    api.create("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "checker"},
        "webhooks": [{"name": "check.example.com", "failurePolicy": "Fail", "sideEffects": "None",
                      "admissionReviewVersions": ["v1"],
                      "clientConfig": {"service": {"namespace": "default", "name": "checker"}},
                      "rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                                 "resources": ["configmaps"]}]}]})
    manifest = tmp_path / "release.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: checker}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n---\n"
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
        "metadata: {name: checker}\n")
    base = ("preflight", "-f", str(manifest), "--no-dry-run", "--kubeconfig", str(fake_kubeconfig))
    report = json.loads(kfin(*base, "-o", "json").stdout)
    commands = [s["command"] for s in report["plan"]]
    assert commands == ["kubectl delete validatingwebhookconfiguration checker",
                        f"kubectl delete -f {manifest} --ignore-not-found"], commands
    assert report["command"] == f"kubectl delete -f {manifest}"  # the teardown predicted, as it would be typed
    screen = kfin(*base).stdout
    assert f"  2. kubectl delete -f {manifest} --ignore-not-found\n" in screen, screen
    # with no step before it, nothing is deleted before it: the teardown is pasted as it is typed
    settings = tmp_path / "settings.yaml"
    settings.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
    alone = json.loads(kfin("preflight", "-f", str(settings), "--no-dry-run", "-o", "json", "--kubeconfig",
                            str(fake_kubeconfig)).stdout)
    assert [s["command"] for s in alone["plan"]] == [f"kubectl delete -f {settings}"], alone["plan"]


# ----- a refused force-delete -------------------------------------------------------------------------------
def test_a_refused_force_delete_says_what_is_refused_and_names_the_pod(api, fake_kubeconfig):
    """A Pod without finalizers on a node lost moments ago: kfin refused "to remove finalizers from
    Pod/billing/ledger-0: : its kubelet..." (finalizers it has not, an empty name). It refuses a force-delete."""
    api.create("/api/v1/namespaces", {"metadata": {"name": "billing"}})
    node(api, "node-b", "Unknown")
    deleted_pod(api, "billing", "ledger-0", "node-b")
    result = kfin("remove", "pod", "ledger-0", "-n", "billing", "--confirm", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.REFUSED, result
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith("error: refused to force-delete Pod/billing/ledger-0 (it has no finalizer; only the "
                           "kubelet of node node-b can confirm its containers stopped): its node node-b has been lost "
                           "for "), line
    assert "finalizers" not in line.split(":")[1] and ": :" not in line
    assert "Safe fix: if the node is shut down for good, mark it out of service" in line
