"""kfin/api/transport.py's seam: Kube makes each call a Request value and hands it to its Transport; what comes
back is a Response value. MockTransport answers from a function (as httpx's), without a server."""

import json
import threading

import pytest

from kfin.api import protobuf
from kfin.api.connection import METADATA_ACCEPT, METADATA_LIST_ACCEPT, PROTOBUF_METADATA_LIST_ACCEPT, Kube
from kfin.api.transport import ChunkStream, MockTransport, Request, Response
from kfin.errors import APIError, AuthError, ForbiddenError, NotFoundError

STATUS_404 = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
              "message": 'configmaps "gone" not found', "details": {"name": "gone", "kind": "configmaps"}}


def answering(*responses):
    """A mock transport answering `responses` in turn, and the requests it was sent."""
    sent, queue = [], list(responses)

    def handler(request):
        sent.append(request)
        return queue.pop(0)

    return MockTransport(handler), sent


def json_response(document, status=200, headers=None):
    return Response(status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(document).encode())


def test_a_request_reaches_the_transport_as_kube_built_it():
    transport, sent = answering(json_response({"kind": "ConfigMap"}))
    kube = Kube(transport, "default", 7.5)
    operations = [{"op": "remove", "path": "/metadata/finalizers/0"}]
    kube.patch_json("/api/v1/namespaces/a%2Fb/configmaps/x", operations, dry_run=True,
                    what=("patch", "configmaps", "a/b"))
    assert sent == [Request(
        "PATCH",
        "/api/v1/namespaces/a%2Fb/configmaps/x",
        {"dryRun": "All"},
        body=json.dumps(operations).encode(),
        content_type="application/json-patch+json",
        accept="application/json",
        timeout=7.5,
        what=("patch", "configmaps", "a/b"),
    )]
    assert sent[0].target() == "/api/v1/namespaces/a%2Fb/configmaps/x?dryRun=All"


def test_a_query_value_of_none_is_not_sent_and_extra_headers_are():
    transport, sent = answering(json_response({}))
    kube = Kube(transport, "default", None)
    kube.send("DELETE", "/api/v1/namespaces/default/configmaps/x", {"dryRun": None}, body={"kind": "DeleteOptions"},
              headers={"Impersonate-User": "system:serviceaccount:ops:operator"})
    [request] = sent
    assert request.query == {} and request.target() == "/api/v1/namespaces/default/configmaps/x"
    assert request.headers == {"Impersonate-User": "system:serviceaccount:ops:operator"}
    assert request.content_type == "application/json" and json.loads(request.body) == {"kind": "DeleteOptions"}
    assert request.timeout is None and not request.stream


def test_what_the_mock_answers_is_what_kube_returns_and_raises():
    transport, _ = answering(
        json_response({"major": "1", "minor": "36"}),
        json_response(STATUS_404, 404),
        json_response({"kind": "Status", "code": 403, "message": "no"}, 403),
        Response(401, body=b"Unauthorized"),
        Response(302, {"Location": "https://elsewhere.example/"}),
        Response(200, body=b"<html>a login page</html>"),
    )
    kube = Kube(transport, "default", None)
    assert kube.server_version() == {"major": "1", "minor": "36"}
    with pytest.raises(NotFoundError) as gone:
        kube.get("/api/v1/namespaces/default/configmaps/gone")
    assert (gone.value.kind, gone.value.name) == ("configmaps", "gone")
    with pytest.raises(ForbiddenError, match='forbidden: kfin needs "list" on "secrets" in namespace "default"'):
        kube.request("GET", "/api/v1/namespaces/default/secrets", what=("list", "secrets", "default"))
    with pytest.raises(AuthError, match="rejected the credentials of context mock"):
        kube.request("GET", "/version")
    with pytest.raises(APIError, match=r'answered 302 \(a redirect to "https://elsewhere.example/"\): kfin follows'):
        kube.request("GET", "/version")
    with pytest.raises(APIError, match="does not answer like a Kubernetes API server"):
        kube.request("GET", "/version")


def test_a_dry_runs_rejection_is_its_answer_but_a_401_still_raises():
    transport, _ = answering(json_response({"kind": "Status", "code": 422, "message": "invalid"}, 422),
                             Response(401))
    kube = Kube(transport, "default", None)
    assert kube.send("PUT", "/api/v1/namespaces/x", {"dryRun": "All"}, body={}, check=False).status == 422
    with pytest.raises(AuthError):
        kube.send("PUT", "/api/v1/namespaces/x", {"dryRun": "All"}, body={}, check=False)


def test_the_warnings_of_a_write_are_shown_and_those_of_a_dry_run_are_not(capsys):
    warned = {"Warning": '299 - "finalizer name \\"x\\" is not fully qualified"'}
    transport, _ = answering(json_response({}, headers=warned), json_response({}, headers=warned))
    kube = Kube(transport, "default", None)
    kube.patch_json("/api/v1/namespaces/default/configmaps/x", [], dry_run=True)
    assert capsys.readouterr().err == ""
    kube.patch_json("/api/v1/namespaces/default/configmaps/x", [])
    assert capsys.readouterr().err == 'Warning: finalizer name "x" is not fully qualified\n'


def test_a_server_that_refuses_protobuf_is_asked_json_from_then_on(monkeypatch):
    monkeypatch.setattr(protobuf, "wanted", lambda: True)
    page = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": {"continue": "next"},
            "items": [{"metadata": {"name": "a"}}]}
    last = dict(page, metadata={}, items=[{"metadata": {"name": "b"}}])
    transport, sent = answering(json_response({"kind": "Status", "code": 406}, 406), json_response(page),
                                json_response(last))
    kube = Kube(transport, "default", None)
    pages = list(kube.list_metadata_pages("/api/v1/configmaps", 2))
    assert [p["items"][0]["metadata"]["name"] for p in pages] == ["a", "b"]
    assert [r.accept for r in sent] == [PROTOBUF_METADATA_LIST_ACCEPT, METADATA_LIST_ACCEPT, METADATA_LIST_ACCEPT]
    assert [r.query for r in sent] == [{"limit": 2}, {"limit": 2}, {"limit": 2, "continue": "next"}]


def _events(*events):
    return [json.dumps(e).encode() + b"\n" for e in events]


def test_a_watch_through_the_mock_yields_its_events_whatever_the_chunks():
    added = {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "2"}}}
    bookmark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "3"}}}
    wire = b"".join(_events(added, bookmark))
    chunks = [wire[:7], wire[7:40], wire[40:]]  # events split across chunks, two in one
    transport, sent = answering(Response(200, {"Content-Type": "application/json"}, stream=ChunkStream(chunks)))
    kube = Kube(transport, "default", 12.0)
    opened = []
    events = list(kube.watch("/api/v1/namespaces/default/configmaps", {"resourceVersion": "1", "fieldSelector": None},
                             60, what=("watch", "configmaps", "default"), opened=opened.append))
    assert events == [added, bookmark]
    assert len(opened) == 1
    [request] = sent
    assert request.stream and request.method == "GET" and request.accept == METADATA_ACCEPT
    assert request.query == {"resourceVersion": "1", "watch": "1", "allowWatchBookmarks": "true",
                             "timeoutSeconds": "60"}
    assert (request.timeout, request.idle) == (12.0, 75)


def test_a_watch_refused_raises_what_its_status_means():
    status = {"kind": "Status", "code": 403, "message": "watch is forbidden"}
    transport, _ = answering(Response(403, stream=ChunkStream([json.dumps(status).encode()])))
    kube = Kube(transport, "default", None)
    with pytest.raises(ForbiddenError, match='kfin needs "watch" on "configmaps" at cluster scope'):
        list(kube.watch("/api/v1/configmaps", {}, 5, what=("watch", "configmaps", None)))


def test_a_watch_shut_down_from_another_thread_yields_nothing_more():
    more = threading.Event()

    def endless():
        yield from _events({"type": "ADDED", "object": {"metadata": {"name": "a"}}})
        more.wait(10)
        yield from _events({"type": "ADDED", "object": {"metadata": {"name": "late"}}})

    transport, _ = answering(Response(200, stream=ChunkStream(endless())))
    kube = Kube(transport, "default", None)
    streams = []
    events = kube.watch("/api/v1/configmaps", {}, 60, opened=streams.append)
    assert next(events)["object"]["metadata"]["name"] == "a"
    streams[0].shutdown()
    more.set()
    assert list(events) == []
