"""The one module that talks to the Kubernetes API: config, requests, discovery, listing, get, patch.

Everything it returns is plain JSON values (dicts and lists), so the rest of kfin works the same on a
live cluster and on a saved snapshot. The `kubernetes` package is imported here only, and only when a
command needs a cluster, because importing it costs a third of a second.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from kfin.errors import (APIError, AuthError, ConfigError, ForbiddenError, KfinError, NotFoundError,
                         UnreachableError)
from kfin.names import api_path, check_namespace

JSON = "application/json"
# Metadata-only answers keep Secret data (and every spec) on the server. The JSON fallback lets
# aggregated APIs that cannot produce PartialObjectMetadata answer with full objects instead of 406.
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"


@dataclass(frozen=True)
class Target:
    """Where a command points: the kubectl-style connection flags."""
    kubeconfig: str | None = None
    context: str | None = None
    request_timeout: float | None = None


def _kubeconfig_paths(explicit: str | None) -> list[str]:
    if explicit:
        return [explicit]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return [str(Path("~/.kube/config").expanduser())]


def context_names(kubeconfig: str | None) -> list[str]:
    """Every context of the kubeconfig (for --all-contexts)."""
    from kubernetes import config

    existing = [p for p in _kubeconfig_paths(kubeconfig) if Path(p).expanduser().is_file()]
    if not existing:
        raise ConfigError("no kubeconfig found: set KUBECONFIG or pass --kubeconfig")
    try:
        contexts, _ = config.list_kube_config_contexts(config_file=os.pathsep.join(existing))
    except Exception as error:
        raise ConfigError(f"cannot read kubeconfig {', '.join(existing)}: {error}") from None
    return [c["name"] for c in contexts or []]


class Kube:
    """A connection to one API server (one kubeconfig context)."""

    def __init__(self, transport, context: str, server: str, namespace: str, timeout: float | None):
        check_namespace(namespace, ConfigError, f'namespace of context "{context}"')
        self._api = transport
        self.context = context
        self.server = server
        self.namespace = namespace
        self.timeout = timeout

    # ----- connecting ------------------------------------------------------------------------------
    @classmethod
    def connect(cls, target: Target = Target()) -> "Kube":
        from kfin.kubeconfig import load_static

        paths = _kubeconfig_paths(target.kubeconfig)
        existing = [p for p in paths if Path(p).expanduser().is_file()]
        if existing and (not target.kubeconfig or existing == paths):
            static = load_static(existing, target.context)
            if static is not None:
                configuration, context, namespace = static
                return cls._make(configuration, context, namespace, target.request_timeout)
        return cls._connect_with_client(target, paths, existing)

    @classmethod
    def _connect_with_client(cls, target: Target, paths: list[str], existing: list[str]) -> "Kube":
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

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
            raise ConfigError("no kubeconfig found: set KUBECONFIG, pass --kubeconfig, or run kfin inside a "
                              f"cluster (looked for {', '.join(paths)})")
        try:
            contexts, active = config.list_kube_config_contexts(config_file=os.pathsep.join(existing))
        except ConfigException as error:
            raise ConfigError(f"cannot use kubeconfig {', '.join(existing)}: {error}") from None
        except Exception as error:  # unreadable YAML and the like
            raise ConfigError(f"cannot read kubeconfig {', '.join(existing)}: {error}") from None
        names = [c["name"] for c in contexts or []]
        name = target.context or (active or {}).get("name")
        if not name:
            raise ConfigError(f"kubeconfig {', '.join(existing)} has no current context: pass --context "
                              f"(available: {', '.join(names) or 'none'})")
        if name not in names:
            raise ConfigError(f'context "{name}" not found in kubeconfig (available: {", ".join(names) or "none"})')
        try:
            config.load_kube_config(config_file=os.pathsep.join(existing), context=name,
                                    client_configuration=configuration, persist_config=False)
        except ConfigException as error:
            raise ConfigError(f'cannot use context "{name}": {error}') from None
        except Exception as error:
            raise ConfigError(f'cannot use context "{name}": {error}') from None
        context = next(c for c in contexts if c["name"] == name)
        namespace = (context.get("context") or {}).get("namespace") or "default"
        return cls._make(configuration, name, namespace, target.request_timeout)

    @classmethod
    def _make(cls, configuration, context, namespace, timeout):
        """Requests go through urllib3 directly, set up from the client's Configuration.

        The kubernetes package is used for what it does best and keeps stable (kubeconfig, in-cluster
        config, exec and token-refresh auth, TLS settings); its generated ApiClient changes shape between
        releases and cannot return raw metadata-only JSON without deserialising it.
        """
        import logging
        import ssl

        import urllib3

        logging.getLogger("urllib3").setLevel(logging.ERROR)  # its retry warnings are not for users

        pool_args = {
            "cert_reqs": ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE,
            "ca_certs": configuration.ssl_ca_cert,
            "cert_file": configuration.cert_file,
            "key_file": configuration.key_file,
            "maxsize": 32,
            # A short retry for dropped connections on idempotent requests; a refused port still fails fast.
            "retries": urllib3.Retry(total=2, connect=1, read=1, status=0, backoff_factor=0.1),
        }
        if getattr(configuration, "ca_cert_data", None):
            pool_args["ca_cert_data"] = configuration.ca_cert_data
        if getattr(configuration, "tls_server_name", None):
            pool_args["server_hostname"] = configuration.tls_server_name
        if configuration.assert_hostname is not None:
            pool_args["assert_hostname"] = configuration.assert_hostname
        if not configuration.verify_ssl:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        if configuration.proxy:
            pool = urllib3.ProxyManager(proxy_url=configuration.proxy, **pool_args)
        else:
            pool = urllib3.PoolManager(**pool_args)
        return cls(_Transport(configuration, pool), context, configuration.host.rstrip("/"), namespace, timeout)

    # ----- requests --------------------------------------------------------------------------------
    def request(self, method: str, path: str, query: dict | None = None, body: Any = None, accept: str = JSON,
                content_type: str | None = None, what: tuple[str, str, str | None] | None = None) -> Any:
        """One API request; JSON in and out. `what` is (verb, resource, namespace) for error messages."""
        import urllib3
        from urllib.parse import urlencode

        headers = {"Accept": accept, "User-Agent": f"kfin/{_version()}"}
        headers.update(self._api.auth_headers())
        data = None
        if body is not None:
            headers["Content-Type"] = content_type or JSON
            data = json.dumps(body).encode()
        params = {k: v for k, v in (query or {}).items() if v is not None}
        url = self.server + path + (("?" + urlencode(params)) if params else "")
        timeout = urllib3.Timeout(total=self.timeout) if self.timeout else None
        try:
            response = self._api.pool.request(method, url, body=data, headers=headers, timeout=timeout)
        except urllib3.exceptions.MaxRetryError as error:
            raise self._connection_error(error.reason) from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise self._connection_error(error) from None
        if response.status >= 400:
            raise self._api_error(response.status, response.reason, response.data, what)
        if not response.data:
            return None
        try:
            return json.loads(response.data)
        except ValueError:
            raise APIError(f"the API server at {self.server} answered {path} with something that is not JSON") from None

    def _connection_error(self, reason) -> KfinError:
        from urllib3.exceptions import NewConnectionError, SSLError, TimeoutError

        text = str(reason)
        if isinstance(reason, NewConnectionError):  # a subclass of the timeout errors, but not one
            return UnreachableError(f"cannot reach the API server at {self.server} (context {self.context}): "
                                    f"{_short(text)}")
        if isinstance(reason, SSLError) or "SSL" in text or "certificate" in text:
            return AuthError(f"TLS handshake with {self.server} failed (context {self.context}): {_short(text)}")
        if isinstance(reason, TimeoutError) or "timed out" in text:
            return UnreachableError(f"the API server at {self.server} did not answer in time (context {self.context})")
        return UnreachableError(f"cannot reach the API server at {self.server} (context {self.context}): {_short(text)}")

    def _api_error(self, code: int, reason: str, body: bytes, what) -> KfinError:
        status = _status_body(body)
        message = status.get("message") or (body or b"").decode(errors="replace").strip() or reason
        if code == 401:
            return AuthError(f"the API server at {self.server} rejected the credentials of context {self.context} "
                             "(401 Unauthorized): log in again or check the kubeconfig user")
        if code == 403:
            verb, resource, namespace = what or ("", "", None)
            if verb:
                where = f' in namespace "{namespace}"' if namespace else " at cluster scope"
                return ForbiddenError(f'forbidden: kfin needs "{verb}" on "{resource}"{where} (server said: {message})',
                                      verb, resource, namespace)
            return ForbiddenError(f"forbidden: {message}")
        if code == 404:
            details = status.get("details") if isinstance(status.get("details"), dict) else {}
            return NotFoundError(message, str(details.get("kind") or ""), str(details.get("name") or ""))
        if code == 503 and not status:  # an aggregated API without a backend answers in plain text
            return APIError(f"{message} (503): the APIService behind it has no available backend", code,
                            "ServiceUnavailable")
        return APIError(f"{message} ({code} {status.get('reason') or reason})", code, status.get("reason", ""))

    # ----- the calls kfin makes --------------------------------------------------------------------
    def server_version(self) -> dict:
        return self.request("GET", "/version")

    def whoami(self) -> str:
        """The user as the API server sees it (SelfSubjectReview), for the audit log."""
        try:
            review = self.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                  body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
            return ((review or {}).get("status") or {}).get("userInfo", {}).get("username") or "unknown"
        except KfinError as error:
            return f"unknown (SelfSubjectReview: {error.message})"

    def get_metadata(self, path: str, what=None) -> dict:
        return self.request("GET", path, accept=METADATA_ACCEPT, what=what)

    def list_metadata_pages(self, path: str, limit: int = 500, what=None) -> Iterator[dict]:
        """Every page of a metadata-only list (an empty list answers `items: null`)."""
        return self._pages(path, limit, METADATA_LIST_ACCEPT, what)

    def list_pages(self, path: str, limit: int = 500, what=None) -> Iterator[dict]:
        """Every page of a list of full objects."""
        return self._pages(path, limit, JSON, what)

    def _pages(self, path: str, limit: int, accept: str, what) -> Iterator[dict]:
        token = None
        while True:
            page = self.request("GET", path, {"limit": limit, "continue": token}, accept=accept, what=what) or {}
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def group_versions(self) -> list[str]:
        """The group/versions the server offers (one cheap request: /apis)."""
        groups = (self.request("GET", "/apis", what=("get", "/apis", None)) or {}).get("groups") or []
        return sorted(v["groupVersion"] for g in groups for v in g.get("versions") or [])

    def discovery_documents(self, concurrency: int = 8):
        """(/api/v1, [(group, version, /apis/GROUP/VERSION)], [(group/version, error)]) for preferred versions.

        A group whose discovery fails (an APIService without backend answers 503) is reported, not fatal.
        """
        from concurrent.futures import ThreadPoolExecutor

        core = self.request("GET", "/api/v1", what=("get", "/api/v1", None))
        groups = (self.request("GET", "/apis", what=("get", "/apis", None)) or {}).get("groups") or []
        wanted = [(g["name"], g["preferredVersion"]["version"]) for g in groups if g.get("preferredVersion")]

        def fetch(gv):
            group, version = gv
            try:
                return group, version, self.request("GET", api_path("apis", group, version)), None
            except KfinError as error:
                return group, version, None, error
        found, failed = [], []
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for group, version, doc, error in pool.map(fetch, wanted):
                if error is None:
                    found.append((group, version, doc))
                else:
                    failed.append((f"{group}/{version}", error))
        return core, found, failed

    def patch_json(self, path: str, operations: list, dry_run: bool = False, what=None) -> dict:
        return self.request("PATCH", path, {"dryRun": "All" if dry_run else None}, body=operations,
                            content_type="application/json-patch+json", what=what)


class _Transport:
    """A urllib3 pool plus the client Configuration that knows the credentials (and refreshes them)."""

    # The client's refresh hook re-applies the whole kubeconfig (and re-reads proxy settings from the
    # environment) on every call: about a millisecond a request, measured in bench/. Tokens that expire
    # are refreshed by that hook 5 minutes early, so asking it every few seconds loses nothing.
    AUTH_REFRESH_SECONDS = 5.0

    def __init__(self, configuration, pool):
        import threading

        self.configuration, self.pool = configuration, pool
        self._auth: dict | None = None
        self._auth_at = 0.0
        self._auth_lock = threading.Lock()

    def auth_headers(self) -> dict:
        import time

        with self._auth_lock:
            now = time.monotonic()
            if self._auth is None or now - self._auth_at >= self.AUTH_REFRESH_SECONDS:
                headers = {}
                for setting in self.configuration.auth_settings().values():
                    if setting.get("in") == "header" and setting.get("value"):
                        headers[setting["key"]] = setting["value"]
                self._auth, self._auth_at = headers, now
            return dict(self._auth)


def _version() -> str:
    from kfin import __version__
    return __version__


def _status_body(body) -> dict:
    try:
        parsed = json.loads(body) if body else {}
    except (ValueError, TypeError):
        return {}
    return parsed if isinstance(parsed, dict) and parsed.get("kind") == "Status" else {}


def _short(text: str) -> str:
    """The useful end of urllib3's long connection messages."""
    for marker in ("Connection refused", "Name or service not known", "No route to host",
                   "nodename nor servname", "timed out", "WRONG_VERSION_NUMBER", "CERTIFICATE_VERIFY_FAILED"):
        if marker in text:
            return marker.lower() if marker[0].isupper() and " " in marker else marker
    return text.splitlines()[0][:200]


def _in_cluster_namespace() -> str:
    try:
        return Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read_text().strip() or "default"
    except OSError:
        return "default"
