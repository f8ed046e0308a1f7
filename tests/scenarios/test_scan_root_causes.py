"""Root causes first (issue 41, item 6): a scan names each root cause once, with every stuck object it holds and
the step that frees them, before the objects; kfin graph lists them once instead of a plan per object."""

import json

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenarios.test_root_cause import volume_claim_and_pod


@pytest.mark.controllers
def test_one_node_that_never_reported_is_one_root_cause_of_three_stuck_objects(cluster):
    """PV -> claim -> Pod in graceful deletion -> its Node: three stuck objects, one root cause, named once with
    the three it holds and its step, in kfin stuck's JSON, table and kfin graph's tree."""
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": cluster.name("node")}})
    pv, pod = volume_claim_and_pod(cluster, "Retain", node["metadata"]["name"])
    cluster.delete(pod)  # graceful: only the node's kubelet could confirm
    cluster.delete(f"/api/v1/namespaces/{cluster.namespace}/persistentvolumeclaims/data")
    cluster.delete(pv)
    node_ref, ns = f"Node/{node['metadata']['name']}", cluster.namespace
    held = {f"PersistentVolume/{pv['metadata']['name']}", f"PersistentVolumeClaim/{ns}/data", f"Pod/{ns}/db-0"}

    result = kfin("stuck", "-A", "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    report = json.loads(result.stdout)
    mine = [c for c in report["rootCauses"] if held & set(c["holds"])]
    assert [(c["object"], c["type"], set(c["holds"])) for c in mine] == [(node_ref, "kubelet", held)]
    assert mine[0]["step"] is not None and "node.kubernetes.io/out-of-service" in json.dumps(mine[0]["step"])
    assert list(report).index("rootCauses") < list(report).index("items")  # first, as on the screen

    table = kfin("stuck", "-n", ns, "--kubeconfig", str(cluster.kubeconfig))
    lines = table.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["KIND", "NAME"])
    before = "\n".join(lines[:header])
    assert before.count(node_ref) == 1 and "holds 2:" in before  # the claim and the Pod, in this namespace
    assert "node.kubernetes.io/out-of-service" in before

    graph = kfin("graph", "namespace", ns, "--kubeconfig", str(cluster.kubeconfig))
    assert graph.code in (0, ExitCode.PARTIAL), graph.stderr
    roots = graph.stdout.partition("Root causes")[2]
    assert node_ref in roots and "Before " not in graph.stdout  # once, not each object's own list
