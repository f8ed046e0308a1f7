"""The connection to one API server (Kube): the calls kfin makes, every one through its Transport.

Everything it returns is plain JSON values (dicts and lists), so the rest of kfin works the same on a
live cluster and on a saved snapshot. Callers outside kfin.api name objects by ResourceType, namespace
and name; the paths are built here and in kfin.api.paths only. Each call is made a kfin.api.transport.Request
and handed to the Transport (sending, deadlines, retries; a test's MockTransport); connecting (kubeconfig,
credentials, TLS) is kfin.api.connect's job.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import replace
from functools import partial
from typing import Any

from kfin.api import protobuf
from kfin.api.connect import open_transport
from kfin.api.paths import api_path, group_version_path, resource_path
from kfin.api.shapes import ShapeError, check_dict, check_object, check_page
from kfin.api.target import Target
from kfin.api.transport import (
    APPLICATION_JSON,
    ByteStream,
    Headers,
    Query,
    Request,
    Response,
    Transport,
    What,
    check_answer,
    decode,
    max_answer_bytes,
    redirect_error,
)
from kfin.errors import APIError, ConfigError, KfinError, NotFoundError
from kfin.model import JSON, ResourceType
from kfin.names import check_namespace
from kfin.settings import Settings
from kfin.util.parallel import in_background

# One page parsed at a time (see Kube._pages); what reads what parsing builds while lists page takes it too
# (kfin.api.inventory: a lean scan's owner edges, while its last list still pages)
PARSING = threading.Lock()
# Metadata-only answers keep Secret data (and every spec) on the server. The JSON fallback lets
# aggregated APIs that cannot produce PartialObjectMetadata answer with full objects instead of 406.
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
# Lists of metadata as protobuf first (half the bytes; kfin.api.protobuf), JSON where that is not served.
PROTOBUF_METADATA_LIST_ACCEPT = protobuf.CONTENT_TYPE + protobuf.METADATA_LIST + "," + METADATA_LIST_ACCEPT
AGGREGATED_ACCEPT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
# At 500 items a page, 10 million objects: a server paging beyond is not a real one, or not one to read whole.
MAX_PAGES = 20_000


class Kube:
    """A connection to one API server (one kubeconfig context)."""

    def __init__(self, transport: Transport, namespace: str, timeout: float | None):
        check_namespace(namespace, ConfigError, f'namespace of context "{transport.context}"')
        self._transport = transport
        self.context = transport.context
        self.server = transport.server
        self.shown = transport.shown
        self.namespace = namespace
        self.timeout = timeout

    @property
    def settings(self) -> Settings:
        """The choices of the command that connected (kfin.settings): its -v."""
        return self._transport.settings

    def bounded(self, seconds: float) -> Kube:
        """This connection with each request's deadline at most `seconds`: a read after Ctrl-C must not keep
        kfin waiting on a slow server."""
        short = copy.copy(self)
        short.timeout = min(self.timeout, seconds) if self.timeout else seconds
        return short

    # ----- connecting ------------------------------------------------------------------------------
    @classmethod
    def connect(cls, target: Target = Target()) -> Kube:
        """A connection to the target's API server (kfin.api.connect reads the kubeconfig)."""
        transport, namespace = open_transport(target)
        return cls(transport, namespace, target.request_timeout)

    # ----- requests --------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        query: Query | None = None,
        body: Any = None,
        accept: str = APPLICATION_JSON,
        content_type: str | None = None,
        what: What | None = None,
    ) -> Any:
        """One API request; JSON in and out. `what` is (verb, resource, namespace) for error messages."""
        return decode(self._transport, path, self.send(method, path, query, body, accept, content_type, what).body)

    def send(
        self,
        method: str,
        path: str,
        query: Query | None = None,
        body: Any = None,
        accept: str = APPLICATION_JSON,
        content_type: str | None = None,
        what: What | None = None,
        headers: Headers | None = None,
        check: bool = True,
    ) -> Response:
        """The answer to one request (a JSON body), through the transport within this connection's deadline; an
        error status raises (unless `check` is False: a dry run's rejection is its answer)."""
        request = Request(
            method,
            path,
            _sent(query),
            body=None if body is None else json.dumps(body).encode(),
            content_type=None if body is None else content_type or APPLICATION_JSON,
            accept=accept,
            headers=headers or {},
            timeout=self.timeout,
            what=what,
        )
        response = self._transport.send(request)
        check_answer(self._transport, request, response, check)
        return response

    # ----- the calls kfin makes --------------------------------------------------------------------
    def server_version(self) -> JSON:
        return check_dict(self.request("GET", "/version"), f"GET /version of {self.shown}")

    def whoami(self) -> str:
        """The user as the API server sees it (SelfSubjectReview), for the audit log."""
        try:
            review = self.request(
                "POST",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
            )
            status = review.get("status") if isinstance(review, dict) else None
            user = status.get("userInfo") if isinstance(status, dict) else None
            name = user.get("username") if isinstance(user, dict) else None
            return name if isinstance(name, str) and name else "unknown (SelfSubjectReview answered no user name)"
        except KfinError as error:
            return f"unknown (SelfSubjectReview: {error.message})"

    def get(self, path: str, what: What | None = None) -> JSON:
        """One whole object."""
        return check_object(self.request("GET", path, what=what), f"GET {path}")

    def get_metadata(self, path: str, what: What | None = None) -> JSON:
        return check_object(self.request("GET", path, accept=METADATA_ACCEPT, what=what), f"GET {path}")

    # ----- objects by type, namespace and name: what kfin's core asks for ------------------------------
    def read_object(
        self, rtype: ResourceType, namespace: str | None, name: str, *, metadata_only: bool = False
    ) -> JSON:
        """One object, whole or metadata-only; NotFoundError when it does not exist."""
        path, what = resource_path(rtype, namespace, name), ("get", rtype.qualified, namespace)
        return self.get_metadata(path, what) if metadata_only else self.get(path, what)

    def read_object_or_none(self, rtype: ResourceType, namespace: str | None, name: str) -> JSON | None:
        """One whole object, or None when it is gone."""
        try:
            return self.read_object(rtype, namespace, name)
        except NotFoundError:
            return None

    def patch_object(
        self, rtype: ResourceType, namespace: str | None, name: str, operations: list[JSON], dry_run: bool = False
    ) -> Any:
        """A JSON Patch (RFC 6902) of one object: its `test` operations guard it."""
        return self.patch_json(
            resource_path(rtype, namespace, name), operations, dry_run, ("patch", rtype.qualified, namespace)
        )

    def create_object(self, rtype: ResourceType, namespace: str | None, body: JSON) -> JSON:
        """POST one new object; the object the server made (409 AlreadyExists when its name is taken)."""
        return check_object(
            self.request(
                "POST", resource_path(rtype, namespace), body=body, what=("create", rtype.qualified, namespace)
            ),
            f"POST {resource_path(rtype, namespace)}",
        )

    def replace_object(self, rtype: ResourceType, namespace: str | None, name: str, body: JSON) -> JSON:
        """PUT one whole object: its metadata.resourceVersion guards the change (409 Conflict when it moved)."""
        path = resource_path(rtype, namespace, name)
        return check_object(
            self.request(
                "PUT", path, body=body, content_type=APPLICATION_JSON, what=("update", rtype.qualified, namespace)
            ),
            f"PUT {path}",
        )

    def delete_object(
        self, rtype: ResourceType, namespace: str | None, name: str, options: JSON, dry_run: bool = False
    ) -> Any:
        """DELETE one object with DeleteOptions (preconditions, grace period). A dry run is asked for in the
        DeleteOptions: kube-apiserver reads a DELETE's query parameters only when it has no body, so dryRun=All in
        the query of a DELETE with a body deletes for real (seen on a real v1.36 control plane; the Kubernetes
        source: apiserver's endpoints/handlers/delete.go). The query says it too, for whoever reads a log."""
        return self.request(
            "DELETE",
            resource_path(rtype, namespace, name),
            {"dryRun": "All" if dry_run else None},
            body=dict(options, dryRun=["All"]) if dry_run else options,
            what=("delete", rtype.qualified, namespace),
        )

    def finalize_namespace(self, rtype: ResourceType, name: str, namespace_body: JSON, dry_run: bool = False) -> Any:
        """PUT the whole Namespace to its /finalize subresource (its resourceVersion guards the change)."""
        return self.request(
            "PUT",
            resource_path(rtype, None, name, "finalize"),
            {"dryRun": "All" if dry_run else None},
            body=namespace_body,
            content_type=APPLICATION_JSON,
            what=("update", "namespaces/finalize", None),
        )

    def create_namespace(self, name: str) -> JSON:
        """Create a Namespace; the object the server made."""
        created = self.request(
            "POST",
            api_path("api", "v1", "namespaces"),
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            what=("create", "namespaces", None),
        )
        return created if isinstance(created, dict) else {}

    def first_page(self, rtype: ResourceType, namespace: str | None, limit: int = 500) -> JSON:
        """The first page of a metadata-only list (Tab completion's candidates)."""
        return next(
            self.list_metadata_pages(resource_path(rtype, namespace), limit, ("list", rtype.qualified, namespace))
        )

    def list_metadata_pages(
        self,
        path: str,
        limit: int = 500,
        what: What | None = None,
        reduce: Callable[[JSON], Any] | None = None,
        query: Query | None = None,
        keep: protobuf.Keep | None = None,
    ) -> Iterator[Any]:
        """Every page of a metadata-only list (an empty list answers `items: null`); `reduce(page)` is
        yielded instead of a page when given (see _pages). Asked as protobuf first (kfin.api.protobuf);
        `keep`: of a protobuf page, objects neither being deleted nor with finalizers are made by it from their
        name, namespace, uid and owners (what a lean scan keeps of them) and come in the page's "kept"."""
        accept = PROTOBUF_METADATA_LIST_ACCEPT if protobuf.wanted() else METADATA_LIST_ACCEPT
        return self._pages(path, limit, accept, what, reduce, query, keep)

    def list_pages(
        self,
        path: str,
        limit: int = 500,
        what: What | None = None,
        reduce: Callable[[JSON], Any] | None = None,
        query: Query | None = None,
    ) -> Iterator[Any]:
        """Every page of a list of full objects."""
        return self._pages(path, limit, APPLICATION_JSON, what, reduce, query)

    def _pages(
        self,
        path: str,
        limit: int,
        accept: str,
        what: What | None,
        reduce: Callable[[JSON], Any] | None = None,
        query: Query | None = None,
        keep: protobuf.Keep | None = None,
    ) -> Iterator[Any]:
        """Pages are fetched by as many threads as list at once, but parsed (and reduced) one at a time:
        parsing holds the GIL anyway, and so only one page is ever held parsed, not one per thread, which is
        most of a large scan's memory. The next page of a protobuf list is asked for as soon as its
        continue token is read off the wire, while this one waits its turn to be parsed: a long list's pages
        (Events, 38 of them at 50,000 objects) had each waited for the parse of the one before, 0.55 s in all
        on a real server (bench/PROFILE.md). One raw page more is held per list meanwhile."""
        token, tokens = None, set[str]()
        ahead: tuple[str, Future[Response]] | None = None  # (its token, the next page asked for)
        while True:
            params = dict(query or {}, limit=limit, **{"continue": token})
            try:
                if ahead is not None and ahead[0] == token:
                    answer = ahead[1].result()
                else:
                    answer = self.send("GET", path, params, accept=accept, what=what)
            except APIError as error:
                if error.status != 406 or accept != PROTOBUF_METADATA_LIST_ACCEPT:
                    raise
                accept = METADATA_LIST_ACCEPT  # a server that refuses the protobuf offer outright: JSON from now
                ahead = None
                continue
            ahead = None
            data, is_protobuf = answer.body, protobuf.is_protobuf(answer.headers.get("Content-Type"))
            del answer
            early = protobuf.continue_of(data) if is_protobuf else None
            if early and early not in tokens and len(tokens) < MAX_PAGES:  # what the parse would refuse waits for it
                following = dict(query or {}, limit=limit, **{"continue": early})
                ahead = (early, in_background(partial(self.send, "GET", path, following, accept=accept, what=what)))
            with PARSING:
                if is_protobuf:  # its messages type every field: no check_page
                    page = protobuf.metadata_list(data, f"GET {path}", keep is not None, keep)
                else:
                    page = check_page(decode(self._transport, path, data), f"GET {path}")
                del data
                token = (page.get("metadata") or {}).get("continue")
                if token and (token in tokens or len(tokens) >= MAX_PAGES):  # a list that would never end
                    raise ShapeError(
                        f"GET {path} answered a continue token it gave before: the list would never end"
                        if token in tokens
                        else f"GET {path} answered more than {MAX_PAGES} pages: refused"
                    )
                tokens.add(str(token))
                out = reduce(page) if reduce else page
                del page
            yield out
            if not token:
                return

    def api_groups(self) -> list[tuple[str, list[str], str]]:
        """(group, versions, preferred version) of every API group, from legacy /apis: one cheap request
        that also names the groups whose APIService has no backend (aggregated discovery leaves them out)."""
        where = f"GET /apis of {self.shown}"
        groups = check_dict(self.request("GET", "/apis", what=("get", "/apis", None)), where).get("groups")
        if not isinstance(groups, list):
            raise ShapeError(f"{where} answered without a list of groups")
        out: list[tuple[str, list[str], str]] = []
        for g in groups:
            versions = (
                [v.get("version") for v in g.get("versions") or [] if isinstance(v, dict)]
                if isinstance(g, dict) and isinstance(g.get("versions"), list)
                else None
            )
            if (
                not versions
                or not isinstance(g.get("name"), str)
                or not all(isinstance(v, str) and v for v in versions)
            ):
                raise ShapeError(f"{where} answered a malformed API group: {str(g)[:100]}")
            preferred = g.get("preferredVersion") if isinstance(g.get("preferredVersion"), dict) else {}
            version = preferred.get("version")
            out.append(
                (
                    g["name"],
                    [str(v) for v in versions],
                    version if isinstance(version, str) and version else str(versions[0]),
                )
            )
        return out

    def aggregated_discovery(self, path: str, etag: str | None) -> tuple[JSON | None, str | None]:
        """(document, ETag) of /api or /apis as an APIGroupDiscoveryList; (None, etag) when the server
        answers 304 Not Modified to `etag`. A server without aggregated discovery answers its legacy
        document, returned with no ETag."""
        answer = self.send(
            "GET",
            path,
            accept=AGGREGATED_ACCEPT,
            what=("get", path, None),
            headers={"If-None-Match": etag} if etag else None,
        )
        if answer.status == 304:
            return None, etag
        document = check_dict(decode(self._transport, path, answer.body), f"GET {path} of {self.shown}")
        if document.get("kind") != "APIGroupDiscoveryList":
            return document, None
        return document, answer.headers.get("ETag")

    def resource_list(self, group: str, version: str) -> JSON:
        """Legacy discovery of one group version (/api/v1 or /apis/GROUP/VERSION)."""
        path = group_version_path(group, version)
        return check_dict(self.request("GET", path, what=("get", path, None)), f"GET {path} of {self.shown}")

    def watch(
        self,
        path: str,
        query: Query,
        timeout_seconds: int,
        accept: str = METADATA_ACCEPT,
        what: What | None = None,
        opened: Callable[[ByteStream], None] | None = None,
        idle: float | None = None,
    ) -> Iterator[JSON]:
        """The events of one watch (dicts), until the server ends it after `timeout_seconds`; bookmarks
        asked for. An ERROR event (410 Expired) is yielded like the others: the caller lists again.
        `opened(stream)`: given the stream once it is open, so that another thread may end the watch
        at once (stream.shutdown()). `idle`: seconds without a byte after which the watch is taken as lost
        (ended, for the caller to start again); by default the watch's own length and 15 s."""
        request = Request(
            "GET",
            path,
            _sent(dict(query, watch="1", allowWatchBookmarks="true", timeoutSeconds=str(timeout_seconds))),
            accept=accept,
            timeout=self.timeout,
            stream=True,
            idle=idle or timeout_seconds + 15,
            what=what,
        )
        response = self._transport.send(request)
        stream = response.stream
        if stream is None:
            raise APIError(f"the watch of {path} was answered without a stream")
        if opened is not None:
            opened(stream)
        try:
            if response.status >= 300:  # its Status read whole: the error it means
                check_answer(self._transport, request, replace(response, body=stream.read(), stream=None))
                raise redirect_error(self._transport, response.status, response.headers.get("Location"))  # a 304
            pending = b""
            try:
                for chunk in stream:
                    pending += chunk
                    while b"\n" in pending:
                        line, pending = pending.split(b"\n", 1)
                        if line.strip():
                            try:
                                event = json.loads(line)
                            except (ValueError, RecursionError):
                                raise ShapeError(f"the watch of {path} sent a line that is not a JSON event") from None
                            if isinstance(event, dict):
                                yield event
                    if len(pending) > max_answer_bytes():
                        raise ShapeError(f"the watch of {path} sent an event larger than {max_answer_bytes()} bytes")
            except ValueError:
                raise ShapeError(f"a watch of {path} answered something that is not JSON") from None
        finally:  # a watch left before its end still has data on the wire: never reuse that connection
            stream.close()

    def patch_json(self, path: str, operations: list[JSON], dry_run: bool = False, what: What | None = None) -> Any:
        return self.request(
            "PATCH",
            path,
            {"dryRun": "All" if dry_run else None},
            body=operations,
            content_type="application/json-patch+json",
            what=what,
        )


def _sent(query: Query | None) -> dict[str, Any]:
    """The query parameters sent: those with a value."""
    return {k: v for k, v in (query or {}).items() if v is not None}
