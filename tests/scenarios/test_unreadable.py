"""A namespace holding an object kube-apiserver cannot read from storage (issue 40, item 4; KEP-3926): bytes that
are no protobuf under /registry/configmaps/NS/NAME, written in the real tier's etcd behind kube-apiserver's back
(tests/control_plane.py's etcd_put), in the fake through its hook (tests/fakeapi/undecodable.py, which answers as
the real tier did). Every list of configmaps there answers 500, the namespace controller never finishes: kfin names
the type, the way out (the delete option, its feature gate, the verb and whether the user has it), never "empty",
never "wait"."""

import json
from contextlib import contextmanager

import pytest

from kfin.errors import ExitCode
from tests.fakeapi import undecodable
from tests.runner import kfin

BYTES = b"k8s\x00\x0f\xff\xff garbage"  # kube-apiserver's protobuf envelope around no protobuf
PROTO_ERROR = "proto: wrong wireType = 7 for field TypeMeta"  # what v1.36.2 answers for them (undecodable.py)


def run(cluster, *args):
    return kfin(*args, "--kubeconfig", str(cluster.kubeconfig))


@contextmanager
def undecodable_configmap(cluster, request, namespace: str, name: str):
    """Undecodable bytes under the ConfigMap's key while the block runs; removed after, and the configmaps watch
    cache (which cannot initialize meanwhile, on a real server: every unpaginated list answers 429) back."""
    key = f"/registry/configmaps/{namespace}/{name}"
    if cluster.is_fake:
        rtype = cluster.fake.cluster.types[("", "configmaps")]
        undecodable.write(cluster.fake.cluster, rtype, namespace, name)
    elif cluster.backend == "envtest":
        plane = request.getfixturevalue("envtest")
        plane.etcd_put(key, BYTES)
    else:
        pytest.skip("writes into etcd: only the fake and the real control plane of the session")
    try:
        yield key
    finally:
        if cluster.is_fake:
            undecodable.remove(cluster.fake.cluster, rtype, namespace, name)
        else:
            plane.etcd_delete(key)
        cluster.eventually(lambda: cluster.api.send("GET", "/api/v1/configmaps")[0] == 200,
                           message="the configmaps watch cache to read again")


@pytest.mark.controllers  # the namespace controller's condition is the evidence
def test_an_object_that_cannot_be_read_from_storage_blocks_its_namespace_and_is_named_with_the_way_out(
        cluster, request):
    ns = cluster.name("unreadable")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.api.create(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "fine"}})
    with undecodable_configmap(cluster, request, ns, "broken"):
        cluster.eventually(lambda: cluster.api.send("GET", f"/api/v1/namespaces/{ns}/configmaps?limit=500")[0] == 500,
                           message="the list of configmaps to fail")
        code, answer = cluster.api.send("GET", f"/api/v1/namespaces/{ns}/configmaps?limit=500")
        assert (code, answer.get("reason"), answer["message"]) == (500, None, PROTO_ERROR)  # the gate is off
        cluster.delete(f"/api/v1/namespaces/{ns}")
        failure = f"Failed to delete all resource types, 1 remaining: {PROTO_ERROR}"
        cluster.eventually(lambda: any(
            c["type"] == "NamespaceDeletionContentFailure" and c["status"] == "True" and c["message"] == failure
            for c in ((cluster.get(f"/api/v1/namespaces/{ns}") or {}).get("status") or {}).get("conditions", [])),
            message="the namespace controller to fail")

        scan = run(cluster, "stuck", "-A", "-o", "json")
        assert scan.code == ExitCode.PARTIAL  # kfin's own list of configmaps failed: never an all-clear
        warnings = scan.stderr.splitlines()
        assert len(warnings) == len(set(warnings)), scan.stderr  # each said once
        [cause] = [w for w in warnings if w.startswith("warning: root cause of the failed list of configmaps")]
        assert "kube-apiserver cannot read what it stored of configmaps" in cause
        [item] = [i for i in json.loads(scan.stdout)["items"] if i["name"] == ns]
        assert item["verdict"] == "BLOCKED"
        assert item["blocker"] == (f"namespace: configmaps in namespace {ns} cannot be read from storage "
                                   f"({PROTO_ERROR}): the namespace controller can never finish")
        table = run(cluster, "stuck", "-A")
        [row] = [line for line in table.stdout.splitlines() if line.split()[:3] == ["-", "Namespace", ns]]
        assert "BLOCKED" in row and "waiting" not in row

        explained = run(cluster, "explain", "ns", ns, "-o", "json")
        assert explained.code == ExitCode.PARTIAL
        report = json.loads(explained.stdout)
        [finding] = report["findings"]
        assert finding["verdict"] == "BLOCKED"
        assert finding["condition"].startswith(
            f"kube-apiserver cannot read configmaps in namespace {ns} from storage ({PROTO_ERROR}): ")
        assert "the namespace controller can never list or delete them" in finding["condition"]
        assert ("the AllowUnsafeMalformedObjectDeletion feature gate is off on the API server that answered"
                in " ".join(finding["evidence"]))
        assert (f"you have the verb unsafe-delete-ignore-read-errors on configmaps in namespace {ns} "
                "(SelfSubjectAccessReview)") in finding["evidence"]
        assert f"condition NamespaceDeletionContentFailure: {failure}" in finding["evidence"]
        fix = finding["fix"]
        assert "put that key back in kube-apiserver's --encryption-provider-config" in fix
        assert "delete option ignoreStoreReadErrorWithClusterBreakingPotential=true" in fix
        assert "AllowUnsafeMalformedObjectDeletion feature gate off here: turn it on" in fix
        assert f"etcdctl get --prefix --keys-only /registry/configmaps/{ns}/" in fix
        [step] = report["plan"]["steps"]
        # the same actions, each its own: no command to paste while the server cannot name the objects
        assert step["type"] == "operator" and [step["command"], *(m["command"] for m in step["more"])] == [None, None]
        assert step["when"].startswith("if configmaps in namespace") and step["note"] in fix
        assert [m["when"] for m in step["more"]] == ["otherwise (AllowUnsafeMalformedObjectDeletion feature gate off "
                                                     "here: turn it on)"]
        assert step["more"][0]["note"] in fix
        panel = run(cluster, "explain", "ns", ns).stdout
        for said in (panel, explained.stdout):
            for never in ("empty", "within seconds", "wait"):
                assert never not in said.lower().replace("waits", ""), never
        assert "ignoreStoreReadErrorWithClusterBreakingPotential" in panel
