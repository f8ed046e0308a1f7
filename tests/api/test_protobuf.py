"""Metadata lists read as protobuf (kfin.api.protobuf): what kube-apiserver serves for built-in and custom
resources alike (PartialObjectMetadataList, as the garbage collector lists), JSON where a server does not,
and the same answer either way. tests/fakeapi encodes with the same messages, framed as kube-apiserver
frames them (the "k8s\\0" magic and a runtime.Unknown: k8s.io/apimachinery runtime/serializer/protobuf)."""

import json
import time

import pytest

from kfin.api import protobuf
from kfin.api.connection import Kube
from kfin.api.target import Target
from kfin.api.proto import metadata_pb2
from kfin.api.shapes import ShapeError
from kfin.errors import ExitCode
from tests.fakeapi import Fault
from tests.fakeapi import protobuf as fake_protobuf
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin

META = {
    "name": "db", "namespace": "shop", "uid": "u-1", "resourceVersion": "42", "generation": 3,
    "creationTimestamp": "2026-01-02T03:04:05Z", "deletionTimestamp": "2026-01-02T04:00:00Z",
    "deletionGracePeriodSeconds": 0, "labels": {"app": "db"}, "annotations": {"note": "x"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u-0",
                         "controller": True, "blockOwnerDeletion": False}],
    "finalizers": ["example.com/backup"],
    "managedFields": [{"manager": "backup-operator", "fieldsV1": {"f:metadata": {"f:finalizers": {
        'v:"example.com/backup"': {}}}}}],
}


def test_a_protobuf_list_reads_as_the_json_list_would():
    data = fake_protobuf.metadata_list([{"metadata": META}], {"resourceVersion": "50", "continue": "next"})
    page = protobuf.metadata_list(data, "GET /api/v1/pods")
    assert page["metadata"] == {"resourceVersion": "50", "continue": "next"}
    assert page["items"] == [{"metadata": META}]


def test_a_light_read_gives_only_what_a_lean_scan_keeps_of_objects_nobody_deletes():
    plain = {k: v for k, v in META.items() if k not in ("deletionTimestamp", "finalizers", "managedFields")}
    plain.update(uid="u-2", resourceVersion="43")
    data = fake_protobuf.metadata_list([{"metadata": plain}, {"metadata": META}], {})
    light, whole = protobuf.metadata_list(data, "GET /api/v1/pods", light=True)["items"]
    assert light["metadata"] == {k: plain[k] for k in ("name", "namespace", "uid", "ownerReferences")}
    assert whole["metadata"] == META  # being deleted: everything, the finalizer's manager included


@pytest.mark.parametrize("data, message", [
    (b"\x00\x01", "without the Kubernetes magic prefix"),
    (b"k8s\x00\xff\xff\xff", "cannot decode"),
    (fake_protobuf.MAGIC + metadata_pb2.Unknown(raw=b"\x12\x05\x0a\x03\x0a\x01\xff").SerializeToString(),
     "cannot decode"),  # a name that is not UTF-8
])
def test_a_protobuf_answer_kfin_cannot_read_is_a_shape_error(data, message):
    with pytest.raises(ShapeError, match=message):
        protobuf.metadata_list(data, "GET /api/v1/pods")


def test_a_protobuf_item_without_a_name_is_a_shape_error_as_in_json():
    """The messages type every field, so a protobuf page skips the JSON shape check; a name can still be empty."""
    data = fake_protobuf.metadata_list([{"metadata": META}, {"metadata": dict(META, name="", uid="u-9")}], {})
    for light in (False, True):
        with pytest.raises(ShapeError, match="item 2 is malformed: metadata.name is missing"):
            protobuf.metadata_list(data, "GET /api/v1/pods", light=light)


@pytest.mark.parametrize("lean", ["scan", "file"])
def test_objects_kept_straight_from_protobuf_messages_are_those_kept_from_their_metadata(lean):
    """A lean read makes what it keeps of objects nobody deletes from the messages, without metadata dicts
    (Lean.keep_refs); the same objects as Lean.keep makes from the dicts of the same page."""
    from functools import partial

    from kfin.api.scan import Lean, to_object
    from kfin.model import ResourceType, ThinObject

    rtype = ResourceType("", "v1", "pods", "Pod", True)
    owners = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-rs", "controller": True,
               "blockOwnerDeletion": False}, {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u-cm",
                                              "blockOwnerDeletion": True}]
    metas = [{"name": "alone", "namespace": "shop", "uid": "u-1"},
             {"name": "owned", "namespace": "shop", "uid": "u-2", "ownerReferences": owners[:1]},
             {"name": "twice", "namespace": "gone", "uid": "u-3", "ownerReferences": owners},
             {"name": "sep\x1fname", "namespace": "shop", "uid": "u-4", "ownerReferences": owners[1:]},
             # not being deleted, with finalizers: read again whole, every finalizer kept
             {"name": "held", "namespace": "shop", "uid": "u-5", "finalizers": ["a.example.com/x", "b.example.com/y"]},
             META]
    data = fake_protobuf.metadata_list([{"metadata": m} for m in metas], {})

    def made(**options):
        return Lean(**options) if lean == "scan" else Lean(for_file=True)

    def seen(objects):
        return sorted((type(o).__name__, o.name, o.namespace, o.uid, tuple(o.owner_uids()),
                       tuple(o.owner_uids(blocking=True)), tuple(map(str, o.owner_references))) for o in objects)

    for whole in ({"gone"}, None):
        by_dicts, by_messages = made(whole_namespaces=whole), made(whole_namespaces=whole)
        page = protobuf.metadata_list(data, "GET /api/v1/pods", light=True)
        from_dicts = [o for o in (to_object(rtype, item, False, by_dicts) for item in page["items"]) if o]
        page = protobuf.metadata_list(data, "GET /api/v1/pods", True, partial(by_messages.keep_refs, rtype))
        # with finalizers or being deleted: read again whole, as a dict
        assert [i["metadata"]["name"] for i in page["items"]] == ["held", "db"]
        assert page["items"][0]["metadata"]["finalizers"] == ["a.example.com/x", "b.example.com/y"]
        from_messages = [*(to_object(rtype, item, False, by_messages) for item in page["items"]), *page["kept"]]
        assert seen(from_messages) == seen(from_dicts)
        assert by_messages.dropped == by_dicts.dropped
        if lean == "scan":  # objects kept only as owner edges: the same dependents come back
            assert seen(by_messages.edges.dependents_of({"u-rs", "u-cm"})) == \
                seen(by_dicts.edges.dependents_of({"u-rs", "u-cm"}))
        assert any(isinstance(o, ThinObject) for o in from_messages)


def test_a_scan_lists_metadata_as_protobuf_and_finds_what_json_finds(fake, fake_kubeconfig, monkeypatch):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"metadata": {"name": "shop"}})
    api.create("/api/v1/namespaces/shop/configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    api.delete("/api/v1/namespaces/shop/configmaps/held")
    as_protobuf = kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(fake_kubeconfig))
    lists = [r for r in fake.requests if r.metadata_only and r.method == "GET" and "watch" not in r.query]
    assert lists and all(r.protobuf for r in lists), [r.path for r in lists if not r.protobuf]
    monkeypatch.setenv("KFIN_LIST_ENCODING", "json")
    fake.requests.clear()
    as_json = kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(fake_kubeconfig))
    assert not any(r.protobuf for r in fake.requests)
    assert as_protobuf.code == as_json.code == ExitCode.OK
    first, second = json.loads(as_protobuf.stdout), json.loads(as_json.stdout)
    for report in (first, second):
        report.pop("observedAt")
        for item in report["items"]:
            item.pop("terminatingSeconds")
    assert first == second and first["items"][0]["name"] == "held"


def test_a_snapshot_is_the_same_read_as_protobuf_or_json(fake, fake_kubeconfig, monkeypatch, tmp_path):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"metadata": {"name": "shop", "labels": {"team": "a"}}})
    api.create("/api/v1/namespaces/shop/configmaps", {"metadata": {"name": "c", "annotations": {"a": "b"}}})
    assert kfin("snapshot", "-f", str(tmp_path / "pb.json"), "--kubeconfig", str(fake_kubeconfig)).code == 0
    monkeypatch.setenv("KFIN_LIST_ENCODING", "json")
    assert kfin("snapshot", "-f", str(tmp_path / "js.json"), "--kubeconfig", str(fake_kubeconfig)).code == 0
    pb, js = (json.loads((tmp_path / f).read_text()) for f in ("pb.json", "js.json"))
    pb.pop("observedAt"), js.pop("observedAt")
    assert pb == js


def test_an_aggregated_api_without_protobuf_is_read_as_json(fake, fake_kubeconfig):
    fake.add_aggregated_backend("metrics.k8s.io", "v1beta1", [
        {"name": "nodes", "kind": "NodeMetrics", "namespaced": False, "verbs": ["get", "list"]}],
        supports_protobuf=False)
    api = RawClient(fake.url, "admin-token")
    api.create("/apis/apiregistration.k8s.io/v1/apiservices", {"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {
        "group": "metrics.k8s.io", "version": "v1beta1", "service": {"namespace": "kube-system", "name": "m"}}})
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.OK, result.stderr
    [nodes] = [r for r in fake.requests if r.path == "/apis/metrics.k8s.io/v1beta1/nodes"]
    assert nodes.status == 200 and nodes.metadata_only and not nodes.protobuf
    assert any(r.protobuf for r in fake.requests)  # the others stay protobuf


def test_a_server_that_refuses_the_protobuf_offer_is_asked_for_json(fake, fake_kubeconfig):
    fake.faults.append(Fault(path="/api/v1/configmaps$", status=406, times=1))
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.OK, result.stderr
    asked = [r for r in fake.requests if r.path == "/api/v1/configmaps"]
    assert [r.status for r in asked] == [406, 200] and "protobuf" not in asked[1].accept


def test_a_corrupt_protobuf_list_is_one_line_and_a_partial_scan(fake, fake_kubeconfig):
    fake.faults.append(Fault(path="/api/v1/configmaps$", body=b"k8s\x00\xff\xff", content_type=protobuf.CONTENT_TYPE))
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL and "Traceback" not in result.stderr
    assert "answered a protobuf list kfin cannot decode" in result.stderr


def test_a_lists_continue_token_is_read_off_the_wire_as_the_parse_reads_it(fake, fake_kubeconfig):
    """kfin.api.protobuf.continue_of: the token of a page, without decoding its items; None for what is not a
    protobuf list (JSON, a truncated answer), which the parse then judges."""
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"metadata": {"name": "pages"}})
    for n in range(3):
        api.create("/api/v1/namespaces/pages/configmaps", {"metadata": {"name": f"c{n}"}})
    kube = Kube.connect(Target(str(fake_kubeconfig)))
    accept = "application/vnd.kubernetes.protobuf" + protobuf.METADATA_LIST
    first = kube.send("GET", "/api/v1/namespaces/pages/configmaps", {"limit": 2}, accept=accept).body
    token = protobuf.metadata_list(first, "GET")["metadata"]["continue"]
    assert token and protobuf.continue_of(first) == token
    last = kube.send("GET", "/api/v1/namespaces/pages/configmaps", {"limit": 2, "continue": token}, accept=accept).body
    assert protobuf.continue_of(last) is None and "continue" not in protobuf.metadata_list(last, "GET")["metadata"]
    assert protobuf.continue_of(first[: len(first) // 2]) is None
    assert protobuf.continue_of(b'{"metadata": {"continue": "x"}}') is None


def test_the_next_page_is_asked_for_while_this_one_waits_to_be_parsed(fake, fake_kubeconfig, monkeypatch):
    """Issue 47: a long list's pages each waited for the parse of the one before (0.55 s of the 38 pages of
    Events at 50,000 objects on a real server, while other lists' pages were parsed). Here each page's parse
    waits until the next page has been asked for: one after another, it never would be."""
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"metadata": {"name": "pages"}})
    for n in range(5):
        api.create("/api/v1/namespaces/pages/configmaps", {"metadata": {"name": f"c{n}"}})
    parse, asked_first = protobuf.metadata_list, []

    def parsed_once_the_next_is_asked_for(data, where, *args, **kwargs):
        token = protobuf.continue_of(data)
        deadline = time.monotonic() + 5
        while token and not any(token in r.query.get("continue", []) for r in list(fake.requests)):
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)  # the condition: the next page's request has reached the server
        else:
            asked_first.append(token)
        return parse(data, where, *args, **kwargs)

    monkeypatch.setattr(protobuf, "metadata_list", parsed_once_the_next_is_asked_for)
    kube = Kube.connect(Target(str(fake_kubeconfig)))
    pages = list(kube.list_metadata_pages("/api/v1/namespaces/pages/configmaps", limit=2))
    names = [item["metadata"]["name"] for page in pages for item in page["items"]]
    assert sorted(names) == ["c0", "c1", "c2", "c3", "c4", "kube-root-ca.crt"]  # every page, each once
    assert len(asked_first) == 3 and all(asked_first[:2]) and asked_first[2] is None  # two tokens, then the end
