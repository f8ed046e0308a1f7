"""The connection to one API server (Kube): every request kfin sends goes through it.

Everything it returns is plain JSON values (dicts and lists), so the rest of kfin works the same on a
live cluster and on a saved snapshot. Callers outside kfin.api name objects by ResourceType, namespace
and name; the paths are built here and in kfin.api.paths only. The `kubernetes` package is imported
only when a kubeconfig needs it, because importing it costs a third of a second.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from kfin import __version__
from kfin.api import protobuf, trace
from kfin.api.exec_credential import bounded_provider
from kfin.api.kubeconfig import load_static
from kfin.api.kubeconfig_types import check_kubeconfig, header_safe
from kfin.api.paths import api_path, group_version_path, resource_path
from kfin.api.shapes import ShapeError, check_dict, check_object, check_page
from kfin.api.target import Target
from kfin.errors import APIError, AuthError, ConfigError, ForbiddenError, KfinError, NotFoundError, UnreachableError
from kfin.model import ResourceType
from kfin.names import check_namespace, quoted
from kfin.util.text import printable, redact_url

# (verb, resource, namespace) of a request, for the message of a 403
What = tuple[str, str, str | None]

JSON = "application/json"
# A Warning header's value (RFC 7234 5.5): code, agent, "quoted text" (k8s.io/apimachinery pkg/util/net
# NewWarningHeader escapes quotes and backslashes); kube-apiserver sends one header per warning, and a proxy may
# join them with commas.
WARNING = re.compile(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"')


def show_warning(text: str) -> None:
    """What the API server warns about a write kfin made (an admission webhook's `warnings`, kfin guard's among
    them; a finalizer name it dislikes), on stderr as kubectl shows it."""
    print(f"Warning: {printable(text, one_line=True)}", file=sys.stderr, flush=True)


def warnings_of(headers: Any) -> list[str]:
    """The texts of a response's Warning headers, unescaped."""
    values = headers.getlist("Warning") if hasattr(headers, "getlist") else headers.get_all("Warning") or []
    return [re.sub(r"\\(.)", r"\1", m) for value in values for m in WARNING.findall(value)]


_PARSING = threading.Lock()  # one page parsed at a time: see Kube._pages
# Metadata-only answers keep Secret data (and every spec) on the server. The JSON fallback lets
# aggregated APIs that cannot produce PartialObjectMetadata answer with full objects instead of 406.
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
# Lists of metadata as protobuf first (half the bytes; kfin.api.protobuf), JSON where that is not served.
PROTOBUF_METADATA_LIST_ACCEPT = protobuf.CONTENT_TYPE + protobuf.METADATA_LIST + "," + METADATA_LIST_ACCEPT
AGGREGATED_ACCEPT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"


def _kubeconfig_paths(explicit: str | None) -> list[str]:
    if explicit:
        return [explicit]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return [str(Path("~/.kube/config").expanduser())]


def context_names(kubeconfig: str | None) -> list[str]:
    """Every context of the kubeconfig (for --all-contexts), in the order kubectl merges them: the first file
    that names a context wins. Read by kfin's own typed reading, not the kubernetes package (0.3 s to import)."""
    existing = [p for p in _kubeconfig_paths(kubeconfig) if Path(p).expanduser().is_file()]
    if not existing:
        raise ConfigError("no kubeconfig found: set KUBECONFIG or pass --kubeconfig")
    names: dict[str, None] = {}
    for document in check_kubeconfig(existing):
        names.update((entry["name"], None) for entry in document.get("contexts") or [])
    if not names:
        raise ConfigError(f"kubeconfig {', '.join(existing)} has no contexts")
    return list(names)


def load_transport() -> None:
    """Import what requests go through (urllib3, ssl: ~80 ms) now, in a process about to fork workers that
    would each import it again."""
    import ssl  # noqa: F401

    import urllib3  # noqa: F401


# Without --request-timeout, a connection (TLS handshake included) and each silence of the server are still
# bounded: kubectl's dial timeout, and more than any real server stays silent while it answers.
DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT = 30.0, 120.0
# At 500 items a page, 10 million objects: a server paging beyond is not a real one, or not one to read whole.
MAX_PAGES = 20_000


class Kube:
    """A connection to one API server (one kubeconfig context)."""

    def __init__(self, transport: _Transport, context: str, server: str, namespace: str, timeout: float | None):
        check_namespace(namespace, ConfigError, f'namespace of context "{context}"')
        self._api = transport
        self.context = context
        self.server = server
        self.shown = redact_url(server)  # how messages name it: never with a password in it
        self.namespace = namespace
        self.timeout = timeout

    def bounded(self, seconds: float) -> Kube:
        """This connection with each request's deadline at most `seconds`: a read after Ctrl-C must not keep
        kfin waiting on a slow server."""
        short = copy.copy(self)
        short.timeout = min(self.timeout, seconds) if self.timeout else seconds
        return short

    # ----- connecting ------------------------------------------------------------------------------
    @classmethod
    def connect(cls, target: Target = Target()) -> Kube:
        paths = _kubeconfig_paths(target.kubeconfig)
        existing = [p for p in paths if Path(p).expanduser().is_file()]
        documents = check_kubeconfig(existing, target.context)
        if existing and (not target.kubeconfig or existing == paths):
            static = load_static(existing, target.context, documents[0] if len(documents) == 1 else None)
            if static is not None:
                configuration, context, namespace = static
                return cls._make(configuration, context, namespace, target.request_timeout)
        return cls._connect_with_client(target, paths, existing)

    @classmethod
    def _connect_with_client(cls, target: Target, paths: list[str], existing: list[str]) -> Kube:
        from kubernetes import client, config
        from kubernetes.config import kube_config
        from kubernetes.config.config_exception import ConfigException
        from kubernetes.config.exec_provider import ExecProvider

        # the package looks its ExecProvider up when it runs a plugin (at load and at each refresh)
        kube_config.ExecProvider = bounded_provider(ExecProvider, target.request_timeout)  # type: ignore[misc]
        configuration = client.Configuration()
        if target.kubeconfig and not existing:
            raise ConfigError(f"kubeconfig {target.kubeconfig} does not exist")
        if not existing:
            if os.environ.get(IN_CLUSTER_HOST) and target.context is None:
                try:
                    config.load_incluster_config(client_configuration=configuration)
                except ConfigException as error:
                    raise ConfigError(f"in-cluster config is incomplete: {error}") from None
                namespace = _in_cluster_namespace()
                return cls._make(configuration, "in-cluster", namespace, target.request_timeout)
            raise ConfigError(
                "no kubeconfig found: set KUBECONFIG, pass --kubeconfig, or run kfin inside a "
                f"cluster (looked for {', '.join(paths)})"
            )
        try:
            contexts, active = config.list_kube_config_contexts(config_file=os.pathsep.join(existing))
        except ConfigException as error:
            raise ConfigError(f"cannot use kubeconfig {', '.join(existing)}: {error}") from None
        except Exception as error:  # unreadable YAML and the like
            raise ConfigError(f"cannot read kubeconfig {', '.join(existing)}: {error}") from None
        names = [c["name"] for c in contexts or []]
        name = target.context or (active or {}).get("name")
        if not name:
            raise ConfigError(
                f"kubeconfig {', '.join(existing)} has no current context: pass --context "
                f"(available: {', '.join(names) or 'none'})"
            )
        if name not in names:
            raise ConfigError(f'context "{name}" not found in kubeconfig (available: {", ".join(names) or "none"})')
        with _LoggedErrors() as logged:  # the package logs a failing exec plugin instead of raising
            try:
                config.load_kube_config(
                    config_file=os.pathsep.join(existing),
                    context=name,
                    client_configuration=configuration,
                    persist_config=False,
                )
            except Exception as error:  # ConfigException, and the package's own slips
                raise ConfigError(f'cannot use context "{name}": {error}') from None
        if logged:
            raise ConfigError(f'cannot use context "{name}": {logged[0]}')
        context = next(c for c in contexts if c["name"] == name)
        namespace = (context.get("context") or {}).get("namespace") or "default"
        return cls._make(configuration, name, namespace, target.request_timeout)

    @classmethod
    def _make(cls, configuration: Any, context: str, namespace: str, timeout: float | None) -> Kube:
        """Requests go through urllib3 directly, set up from the client's Configuration.

        The kubernetes package is used for what it does best and keeps stable (kubeconfig, in-cluster
        config, exec and token-refresh auth, TLS settings); its generated ApiClient changes shape between
        releases and cannot return raw metadata-only JSON without deserialising it.
        """
        import ssl  # with urllib3, 40 ms: only once a command needs a cluster

        import urllib3

        logging.getLogger("urllib3").setLevel(logging.ERROR)  # its retry warnings are not for users
        host = configuration.host or ""
        try:
            url = urlsplit(host)
            usable = url.scheme in ("http", "https") and bool(url.hostname)
            extra = url.query or url.fragment or "?" in host or "#" in host
        except ValueError:
            usable, extra = False, False
        if not usable:
            raise ConfigError(
                f"context {quoted(context)} names no usable server (server: {quoted(redact_url(host))}): it must be "
                "an http:// or https:// URL"
            )
        if extra:  # every request path is appended to it: a query or fragment would swallow them
            raise ConfigError(
                f"context {quoted(context)}: its server URL {quoted(redact_url(host))} has a query or a fragment; "
                "a server URL is a scheme, a host and an optional path"
            )
        for attribute, what in (
            ("ssl_ca_cert", "certificate-authority"),
            ("cert_file", "client-certificate"),
            ("key_file", "client-key"),
        ):
            path = getattr(configuration, attribute, None)
            if path and not Path(path).is_file():
                raise ConfigError(f'context "{context}": its {what} file {path} does not exist')

        pool_args = {
            "cert_reqs": ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE,
            "ssl_context": _tls_context(configuration, context),
            "maxsize": 32,
            # A short retry for dropped connections on idempotent requests; a refused port still fails fast.
            "retries": urllib3.Retry(total=2, connect=1, read=1, status=0, backoff_factor=0.1),
        }
        if getattr(configuration, "tls_server_name", None):
            pool_args["server_hostname"] = configuration.tls_server_name
        if configuration.assert_hostname is not None:
            pool_args["assert_hostname"] = configuration.assert_hostname
        if not configuration.verify_ssl:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        pool: urllib3.PoolManager
        if configuration.proxy:
            pool = urllib3.ProxyManager(proxy_url=configuration.proxy, **pool_args)
        else:
            pool = urllib3.PoolManager(**pool_args)
        return cls(
            _Transport(configuration, pool, context), context, configuration.host.rstrip("/"), namespace, timeout
        )

    # ----- requests --------------------------------------------------------------------------------
    # Dropped connections are retried within the deadline: a refused port at most once, a lost answer
    # once for reads only. A write whose answer is lost may have been carried out: repeated, a PUT /finalize
    # or a DELETE answers 404 or 409 for its own success, and the audit log would say "nothing removed". The
    # caller reads the object again instead (kfin.core.removal).
    RETRY_CONNECT, RETRY_READ = 1, 1
    SAFE_TO_REPEAT = frozenset({"GET", "HEAD"})

    def request(
        self,
        method: str,
        path: str,
        query: dict | None = None,
        body: Any = None,
        accept: str = JSON,
        content_type: str | None = None,
        what: What | None = None,
    ) -> Any:
        """One API request; JSON in and out. `what` is (verb, resource, namespace) for error messages."""
        _, _, data = self.send(method, path, query, body, accept, content_type, what)
        return self._json(path, data)

    def send(
        self,
        method: str,
        path: str,
        query: dict | None = None,
        body: Any = None,
        accept: str = JSON,
        content_type: str | None = None,
        what: What | None = None,
        headers: dict | None = None,
        check: bool = True,
    ) -> tuple[int, Any, bytes]:
        """(status, response headers, body bytes) of one request; an error status raises (unless `check` is
        False: a dry run's rejection is its answer).

        --request-timeout is a deadline for the whole request, retries and a slowly trickled body
        included, as kubectl's: each wait on the socket gets only the time that is left.
        """
        import urllib3

        deadline = time.monotonic() + self.timeout if self.timeout else None
        sent = self._headers(accept, headers)
        data = None
        if body is not None:
            sent["Content-Type"] = content_type or JSON
            data = json.dumps(body).encode()
        params = {k: v for k, v in (query or {}).items() if v is not None}
        url = self.server + path + (("?" + urlencode(params)) if params else "")
        tries = {"connect": 0, "read": 0}
        while True:
            started = time.monotonic()
            left = self._left(deadline)
            try:
                response = self._api.pool.request(
                    method,
                    url,
                    body=data,
                    headers=sent,
                    retries=False,
                    redirect=False,
                    preload_content=False,
                    timeout=urllib3.Timeout(connect=left, read=left)
                    if left
                    else urllib3.Timeout(connect=DEFAULT_CONNECT_TIMEOUT, read=DEFAULT_READ_TIMEOUT),
                )
                payload = _read_body(response, deadline)
                trace.request(method, url, response.status, response.reason or "", started, sent, payload)
            except _DeadlinePassedError:
                raise self._connection_error(TimeoutError("timed out")) from None
            except (urllib3.exceptions.HTTPError, OSError) as error:
                step = (
                    "connect"
                    if isinstance(
                        error, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)
                    )
                    else "read"
                )
                limit = self.RETRY_CONNECT if step == "connect" else self.RETRY_READ
                retry = (
                    tries[step] < limit
                    and (step == "connect" or method in self.SAFE_TO_REPEAT)
                    and not isinstance(error, urllib3.exceptions.TimeoutError)
                    and not _is_tls(error)
                )
                if retry and (deadline is None or deadline - time.monotonic() > 0.1):
                    tries[step] += 1
                    time.sleep(0.1)
                    continue
                raise self._connection_error(error) from None
            if response.status >= 400 and (check or response.status == 401):  # a 401 is the credentials'
                raise self._api_error(response.status, response.reason, payload, what)
            if 300 <= response.status < 400 and response.status != 304:  # 304: an ETag kfin sent still matches
                raise self._redirect_error(response.status, response.headers.get("Location"))
            if method not in self.SAFE_TO_REPEAT and not params.get("dryRun") and response.status < 300:
                for text in warnings_of(response.headers):  # a dry run's are kfin's own business (explain)
                    show_warning(text)
            return response.status, response.headers, payload

    def _headers(self, accept: str, extra: dict | None = None) -> dict:
        """What every request sends: what it accepts, who asks, and the credentials (those win)."""
        return {"Accept": accept, "User-Agent": f"kfin/{__version__}", **(extra or {}), **self._api.auth_headers()}

    def _left(self, deadline: float | None) -> float | None:
        if deadline is None:
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            raise self._connection_error(TimeoutError("timed out"))
        return left

    def _json(self, path: str, data: bytes) -> Any:
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError:
            if _html(data):
                raise self._not_kubernetes(f"an HTML page for {path}") from None
            raise APIError(f"the API server at {self.shown} answered {path} with something that is not JSON") from None
        except RecursionError:  # json's decoder recurses: no real answer nests this deep
            raise APIError(f"the API server at {self.shown} answered {path} with JSON nested too deeply") from None

    def _connection_error(self, reason: BaseException) -> KfinError:
        from urllib3.exceptions import MaxRetryError, NewConnectionError, SSLError
        from urllib3.exceptions import TimeoutError as Urllib3Timeout

        if isinstance(reason, MaxRetryError) and reason.reason is not None:
            reason = reason.reason
        text = str(reason)
        if isinstance(reason, NewConnectionError):  # a subclass of the timeout errors, but not one
            return UnreachableError(
                f"cannot reach the API server at {self.shown} (context {self.context}): {_short(text)}"
            )
        if isinstance(reason, SSLError) or "SSL" in text or "certificate" in text:
            return AuthError(f"TLS handshake with {self.shown} failed (context {self.context}): {_short(text)}")
        if isinstance(reason, (Urllib3Timeout, TimeoutError)) or "timed out" in text:
            return UnreachableError(f"the API server at {self.shown} did not answer in time (context {self.context})")
        return UnreachableError(f"cannot reach the API server at {self.shown} (context {self.context}): {_short(text)}")

    def _redirect_error(self, code: int, location: str | None) -> KfinError:
        """A 3xx: the API server never redirects; following one could send the credentials elsewhere."""
        to = f" to {quoted(redact_url(location))}" if location else ""
        return APIError(
            f"the API server at {self.shown} answered {code} (a redirect{to}): kfin follows no "
            "redirects; check the server URL of context " + quoted(self.context)
        )

    def _not_kubernetes(self, answer: str) -> APIError:
        """Another HTTP server than a Kubernetes API server: its page is no message for the user."""
        return APIError(
            f"the server at {self.shown} does not answer like a Kubernetes API server ({answer}): check the server "
            f"URL of context {quoted(self.context)}"
        )

    def _api_error(self, code: int, reason: str, body: bytes, what: What | None) -> KfinError:
        status = _status_body(body)
        message = status.get("message") or (body or b"").decode(errors="replace").strip() or reason
        if code == 401:
            return AuthError(
                f"the API server at {self.shown} rejected the credentials of context {self.context} "
                "(401 Unauthorized): log in again or check the kubeconfig user"
            )
        if not status and (_html(body) or _json_document(body)):
            # kube-apiserver's errors are a Status, or a line of plain text (Go's "404 page not found")
            kind = "an HTML page" if _html(body) else "JSON that is not a Kubernetes Status"
            return self._not_kubernetes(f"{code} {reason} with {kind}")
        if code == 403:
            verb, resource, namespace = what or ("", "", None)
            if verb:
                where = f' in namespace "{namespace}"' if namespace else " at cluster scope"
                return ForbiddenError(
                    f'forbidden: kfin needs "{verb}" on "{resource}"{where} (server said: {message})',
                    verb,
                    resource,
                    namespace,
                )
            return ForbiddenError(f"forbidden: {message}")
        if code == 404:
            details: dict = status["details"] if isinstance(status.get("details"), dict) else {}
            return NotFoundError(message, str(details.get("kind") or ""), str(details.get("name") or ""))
        if code == 503 and not status:  # an aggregated API without a backend answers in plain text
            return APIError(
                f"{message} (503): the APIService behind it has no available backend", code, "ServiceUnavailable"
            )
        return APIError(
            f"{message} ({code} {status.get('reason') or reason})", code, status.get("reason", ""), _causes(status)
        )

    # ----- the calls kfin makes --------------------------------------------------------------------
    def server_version(self) -> dict:
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

    def get(self, path: str, what: What | None = None) -> dict:
        """One whole object."""
        return check_object(self.request("GET", path, what=what), f"GET {path}")

    def get_metadata(self, path: str, what: What | None = None) -> dict:
        return check_object(self.request("GET", path, accept=METADATA_ACCEPT, what=what), f"GET {path}")

    # ----- objects by type, namespace and name: what kfin's core asks for ------------------------------
    def read_object(
        self, rtype: ResourceType, namespace: str | None, name: str, *, metadata_only: bool = False
    ) -> dict:
        """One object, whole or metadata-only; NotFoundError when it does not exist."""
        path, what = resource_path(rtype, namespace, name), ("get", rtype.qualified, namespace)
        return self.get_metadata(path, what) if metadata_only else self.get(path, what)

    def read_object_or_none(self, rtype: ResourceType, namespace: str | None, name: str) -> dict | None:
        """One whole object, or None when it is gone."""
        try:
            return self.read_object(rtype, namespace, name)
        except NotFoundError:
            return None

    def patch_object(
        self, rtype: ResourceType, namespace: str | None, name: str, operations: list, dry_run: bool = False
    ) -> Any:
        """A JSON Patch (RFC 6902) of one object: its `test` operations guard it."""
        return self.patch_json(
            resource_path(rtype, namespace, name), operations, dry_run, ("patch", rtype.qualified, namespace)
        )

    def delete_object(
        self, rtype: ResourceType, namespace: str | None, name: str, options: dict, dry_run: bool = False
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

    def finalize_namespace(self, rtype: ResourceType, name: str, namespace_body: dict, dry_run: bool = False) -> Any:
        """PUT the whole Namespace to its /finalize subresource (its resourceVersion guards the change)."""
        return self.request(
            "PUT",
            resource_path(rtype, None, name, "finalize"),
            {"dryRun": "All" if dry_run else None},
            body=namespace_body,
            content_type=JSON,
            what=("update", "namespaces/finalize", None),
        )

    def create_namespace(self, name: str) -> dict:
        """Create a Namespace; the object the server made."""
        created = self.request(
            "POST",
            api_path("api", "v1", "namespaces"),
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            what=("create", "namespaces", None),
        )
        return created if isinstance(created, dict) else {}

    def first_page(self, rtype: ResourceType, namespace: str | None, limit: int = 500) -> dict:
        """The first page of a metadata-only list (Tab completion's candidates)."""
        return next(
            self.list_metadata_pages(resource_path(rtype, namespace), limit, ("list", rtype.qualified, namespace))
        )

    def list_metadata_pages(
        self,
        path: str,
        limit: int = 500,
        what: What | None = None,
        reduce: Callable[[dict], Any] | None = None,
        query: dict | None = None,
        keep: protobuf.Keep | None = None,
    ) -> Iterator:
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
        reduce: Callable[[dict], Any] | None = None,
        query: dict | None = None,
    ) -> Iterator:
        """Every page of a list of full objects."""
        return self._pages(path, limit, JSON, what, reduce, query)

    def _pages(
        self,
        path: str,
        limit: int,
        accept: str,
        what: What | None,
        reduce: Callable[[dict], Any] | None = None,
        query: dict | None = None,
        keep: protobuf.Keep | None = None,
    ) -> Iterator:
        """Pages are fetched by as many threads as list at once, but parsed (and reduced) one at a time:
        parsing holds the GIL anyway, and so only one page is ever held parsed, not one per thread, which is
        most of a large scan's memory (issue 17)."""
        token, tokens = None, set[str]()
        while True:
            params = dict(query or {}, limit=limit, **{"continue": token})
            try:
                _, headers, data = self.send("GET", path, params, accept=accept, what=what)
            except APIError as error:
                if error.status != 406 or accept != PROTOBUF_METADATA_LIST_ACCEPT:
                    raise
                accept = METADATA_LIST_ACCEPT  # a server that refuses the protobuf offer outright: JSON from now
                continue
            with _PARSING:
                if protobuf.is_protobuf(headers.get("Content-Type")):  # its messages type every field: no check_page
                    page = protobuf.metadata_list(data, f"GET {path}", keep is not None, keep)
                else:
                    page = check_page(self._json(path, data), f"GET {path}")
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

    def aggregated_discovery(self, path: str, etag: str | None) -> tuple[dict | None, str | None]:
        """(document, ETag) of /api or /apis as an APIGroupDiscoveryList; (None, etag) when the server
        answers 304 Not Modified to `etag`. A server without aggregated discovery answers its legacy
        document, returned with no ETag."""
        status, headers, data = self.send(
            "GET",
            path,
            accept=AGGREGATED_ACCEPT,
            what=("get", path, None),
            headers={"If-None-Match": etag} if etag else None,
        )
        if status == 304:
            return None, etag
        document = check_dict(self._json(path, data), f"GET {path} of {self.shown}")
        if document.get("kind") != "APIGroupDiscoveryList":
            return document, None
        return document, headers.get("ETag")

    def resource_list(self, group: str, version: str) -> dict:
        """Legacy discovery of one group version (/api/v1 or /apis/GROUP/VERSION)."""
        path = group_version_path(group, version)
        return check_dict(self.request("GET", path, what=("get", path, None)), f"GET {path} of {self.shown}")

    def watch(
        self,
        path: str,
        query: dict,
        timeout_seconds: int,
        accept: str = METADATA_ACCEPT,
        what: What | None = None,
        opened: Callable[[Any], None] | None = None,
        idle: float | None = None,
    ) -> Iterator[dict]:
        """The events of one watch (dicts), until the server ends it after `timeout_seconds`; bookmarks
        asked for. An ERROR event (410 Expired) is yielded like the others: the caller lists again.
        `opened(response)`: given the response once it is open, so that another thread may end the watch
        at once (response.shutdown()). `idle`: seconds without a byte after which the watch is taken as lost
        (ended, for the caller to start again); by default the watch's own length and 15 s."""
        import urllib3

        params = {
            k: v
            for k, v in dict(query, watch="1", allowWatchBookmarks="true", timeoutSeconds=str(timeout_seconds)).items()
            if v is not None
        }
        headers = self._headers(accept)
        wait = urllib3.Timeout(connect=self.timeout or 30, read=idle or timeout_seconds + 15)
        url = self.server + path + "?" + urlencode(params)
        started = time.monotonic()
        try:
            response = self._api.pool.request(
                "GET", url, headers=headers, preload_content=False, retries=False, timeout=wait
            )
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise self._connection_error(error) from None
        trace.request("WATCH", url, response.status, response.reason or "", started, headers, b"")
        if opened is not None:
            opened(response)
        try:
            if response.status >= 400:
                raise self._api_error(response.status, response.reason, response.read(), what)
            if response.status >= 300:
                raise self._redirect_error(response.status, response.headers.get("Location"))
            pending = b""
            try:
                for chunk in response.stream(1 << 16):
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
            except (urllib3.exceptions.HTTPError, OSError):  # the stream broke: the caller watches again
                return
            except ValueError:
                raise ShapeError(f"a watch of {path} answered something that is not JSON") from None
        finally:  # a watch left before its end still has data on the wire: never reuse that connection
            response.close()
            response.release_conn()

    def patch_json(self, path: str, operations: list, dry_run: bool = False, what: What | None = None) -> Any:
        return self.request(
            "PATCH",
            path,
            {"dryRun": "All" if dry_run else None},
            body=operations,
            content_type="application/json-patch+json",
            what=what,
        )


class _Transport:
    """A urllib3 pool plus the client Configuration that knows the credentials (and refreshes them)."""

    # The client's refresh hook re-applies the whole kubeconfig (and re-reads proxy settings from the
    # environment) on every call: about a millisecond a request, measured in bench/. Tokens that expire
    # are refreshed by that hook 5 minutes early, so asking it every few seconds loses nothing.
    AUTH_REFRESH_SECONDS = 5.0

    def __init__(self, configuration: Any, pool: Any, context: str):
        self.configuration, self.pool, self.context = configuration, pool, context
        self._auth: dict | None = None
        self._auth_at = 0.0
        self._auth_lock = threading.Lock()

    def auth_headers(self) -> dict:
        with self._auth_lock:
            now = time.monotonic()
            if self._auth is None or now - self._auth_at >= self.AUTH_REFRESH_SECONDS:
                headers = {}
                for setting in self.configuration.auth_settings().values():
                    if setting.get("in") == "header" and setting.get("value"):
                        # a token file ends with a line break more often than not: kubectl trims it too
                        value = str(setting["value"]).strip()
                        if not header_safe(value):  # from a token file or a plugin; never printed
                            raise ConfigError(
                                f"the credentials of context {quoted(self.context)} hold a line break, a control "
                                "character or a character outside Latin-1: they cannot be sent in an HTTP header"
                            )
                        headers[setting["key"]] = value
                self._auth, self._auth_at = headers, now
            return dict(self._auth)


class _LoggedErrors:
    """Collects what is logged at ERROR while a kubeconfig is loaded (and keeps it off the terminal)."""

    def __enter__(self) -> list[str]:
        self.messages: list[str] = []
        self.handler = logging.Handler(logging.ERROR)
        self.handler.emit = lambda record: self.messages.append(record.getMessage())  # type: ignore[method-assign]
        root = logging.getLogger()
        self.had_handlers = bool(root.handlers)
        root.addHandler(self.handler)
        return self.messages

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        root.removeHandler(self.handler)
        if not self.had_handlers:  # a later refresh of the plugin must not print "ERROR:root:" either
            root.addHandler(logging.NullHandler())


class _DeadlinePassedError(Exception):
    """--request-timeout ran out while the answer was still arriving."""


def max_answer_bytes() -> int:
    """The largest answer kfin reads (256 MiB; KFIN_MAX_ANSWER_MB sets it): a page of 500 objects is a few MiB,
    an endless chunked answer or a decompression bomb never ends."""
    try:
        megabytes = int(os.environ.get("KFIN_MAX_ANSWER_MB", "256"))
    except ValueError:
        megabytes = 256
    return max(megabytes, 1) << 20


def _read_body(response: Any, deadline: float | None) -> bytes:
    """The whole body, each socket wait limited to the time left before `deadline`."""
    chunks, size, limit = [], 0, max_answer_bytes()
    try:
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _DeadlinePassedError()
                sock = getattr(getattr(response, "connection", None), "sock", None)
                if sock is not None:
                    sock.settimeout(left)
            chunk = response.read1(1 << 16)  # decompressed: a gzip bomb is counted as what it becomes
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise ShapeError(
                    f"an answer larger than {limit // (1 << 20)} MiB: refused (set KFIN_MAX_ANSWER_MB to allow more)"
                )
    except BaseException:
        response.close()  # the connection is in an unknown state: never back to the pool
        raise
    response.release_conn()
    return b"".join(chunks)


def _tls_context(configuration: Any, context: str) -> Any:
    """One SSLContext for every connection to the server, its CA and client certificate loaded once: urllib3
    loads them again for each new connection otherwise, a third of a connection's CPU (bench/RESULTS.md)."""
    import ssl

    from urllib3.util import create_urllib3_context

    tls = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE)
    ca_file, ca_data = configuration.ssl_ca_cert, getattr(configuration, "ca_cert_data", None)
    try:
        if ca_file or ca_data:
            tls.load_verify_locations(cafile=ca_file, cadata=ca_data)
        elif configuration.verify_ssl:
            tls.load_default_certs()
    except (ssl.SSLError, OSError, ValueError) as error:
        raise ConfigError(
            f"context {quoted(context)}: its certificate-authority cannot be used: {_short(str(error))}"
        ) from None
    try:
        if configuration.cert_file:
            tls.load_cert_chain(configuration.cert_file, configuration.key_file)
    except (ssl.SSLError, OSError, ValueError) as error:
        raise ConfigError(
            f"context {quoted(context)}: its client-certificate and client-key cannot be used: {_short(str(error))}"
        ) from None
    return tls


def _is_tls(error: BaseException) -> bool:
    import urllib3

    return isinstance(error, urllib3.exceptions.SSLError) or "SSL" in str(error) or "certificate" in str(error)


def _status_body(body: bytes | None) -> dict:
    try:
        parsed = json.loads(body) if body else {}
    except (ValueError, TypeError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) and parsed.get("kind") == "Status" else {}


def _html(body: bytes | None) -> bool:
    """An HTML (or XML) page: no answer of kube-apiserver starts with '<'."""
    return (body or b"").lstrip()[:1] == b"<"


def _json_document(body: bytes | None) -> bool:
    """A JSON object or array (a Status is one too: the caller tells them apart)."""
    try:
        return isinstance(json.loads(body or b""), (dict, list))
    except (ValueError, RecursionError):
        return False


def _causes(status: dict) -> tuple[dict, ...]:
    """A Status's details.causes, those of the expected shape (strings only)."""
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(causes, list):
        return ()
    return tuple(
        {k: v for k, v in cause.items() if k in ("reason", "message", "field") and isinstance(v, str)}
        for cause in causes
        if isinstance(cause, dict)
    )


def _short(text: str) -> str:
    """The useful end of urllib3's long connection messages."""
    for marker in (
        "Connection refused",
        "Name or service not known",
        "No route to host",
        "nodename nor servname",
        "timed out",
        "WRONG_VERSION_NUMBER",
        "CERTIFICATE_VERIFY_FAILED",
    ):
        if marker in text:
            return marker.lower() if marker[0].isupper() and " " in marker else marker
    return text.splitlines()[0][:200]


def _in_cluster_namespace() -> str:
    try:
        return Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read_text().strip() or "default"
    except OSError:
        return "default"
