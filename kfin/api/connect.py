"""Connecting from a kubeconfig (or from inside a cluster): which file, which context, which credentials and TLS
settings, read by kfin's own typed reading where it can and by the `kubernetes` package where it must (its
import costs a third of a second). What it makes is the transport to one API server (Urllib3Transport)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kfin.api.exec_credential import bounded_loader
from kfin.api.kubeconfig import load_static
from kfin.api.kubeconfig_types import check_kubeconfig
from kfin.api.target import Target
from kfin.api.transport import Urllib3Transport, short_error
from kfin.errors import ConfigError
from kfin.names import quoted
from kfin.settings import Settings
from kfin.util.text import redact_url

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


def open_transport(target: Target = Target()) -> tuple[Urllib3Transport, str]:
    """The transport to the target's API server, and the namespace its context names (default: default)."""
    paths = _kubeconfig_paths(target.kubeconfig)
    existing = [p for p in paths if Path(p).expanduser().is_file()]
    documents = check_kubeconfig(existing, target.context)
    if existing and (not target.kubeconfig or existing == paths):
        static = load_static(existing, target.context, documents[0] if len(documents) == 1 else None)
        if static is not None:
            configuration, context, namespace = static
            return _transport(configuration, context, target.settings), namespace
    return _with_client(target, paths, existing)


def _with_client(target: Target, paths: list[str], existing: list[str]) -> tuple[Urllib3Transport, str]:
    from kubernetes import client
    from kubernetes import config as untyped_config
    from kubernetes.config import kube_config as untyped_kube_config
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.exec_provider import ExecProvider

    config: Any = untyped_config  # the package has no type annotations: its calls are checked by the tests
    kube_config: Any = untyped_kube_config
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
            return _transport(configuration, "in-cluster", target.settings), namespace
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
            # config.load_kube_config, with kfin's runner of exec plugins handed to the loader (bounded_loader)
            merged = kube_config.KubeConfigMerger(os.pathsep.join(existing)).config
            if merged is None:
                raise ConfigException("Invalid kube-config file. No configuration found.")
            loader = bounded_loader(kube_config.KubeConfigLoader, ExecProvider, target.request_timeout)
            loader(config_dict=merged, config_base_path=None, active_context=name).load_and_set(configuration)
        except Exception as error:  # ConfigException, and the package's own slips
            raise ConfigError(f'cannot use context "{name}": {error}') from None
    if logged:
        raise ConfigError(f'cannot use context "{name}": {logged[0]}')
    context = next(c for c in contexts if c["name"] == name)
    namespace = (context.get("context") or {}).get("namespace") or "default"
    return _transport(configuration, name, target.settings), namespace


def _transport(configuration: Any, context: str, settings: Settings) -> Urllib3Transport:
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
        "ssl_context": _tls_context(
            configuration, context, over_tls=url.scheme == "https" or _proxied_over_tls(configuration)
        ),
        "maxsize": 32,
        # No retries here: every request says how it is retried (Urllib3Transport: retries=False, and its own
        # policy for dropped connections, within the request's deadline).
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
    return Urllib3Transport(configuration, pool, context, configuration.host.rstrip("/"), settings)


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


def _proxied_over_tls(configuration: Any) -> bool:
    try:
        return urlsplit(configuration.proxy or "").scheme == "https"
    except ValueError:
        return False


def _tls_context(configuration: Any, context: str, *, over_tls: bool) -> Any:
    """One SSLContext for every connection to the server, its CA and client certificate loaded once: urllib3
    loads them again for each new connection otherwise, a third of a connection's CPU (bench/RESULTS.md). The
    system's CAs are read only when a connection will use TLS: 40 ms of a core, for nothing, over plain HTTP."""
    import ssl

    from urllib3.util import create_urllib3_context

    tls = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE)
    ca_file, ca_data = configuration.ssl_ca_cert, getattr(configuration, "ca_cert_data", None)
    try:
        if ca_file or ca_data:
            tls.load_verify_locations(cafile=ca_file, cadata=ca_data)
        elif configuration.verify_ssl and over_tls:
            tls.load_default_certs()
    except (ssl.SSLError, OSError, ValueError) as error:
        raise ConfigError(
            f"context {quoted(context)}: its certificate-authority cannot be used: {short_error(str(error))}"
        ) from None
    try:
        if configuration.cert_file:
            tls.load_cert_chain(configuration.cert_file, configuration.key_file)
    except (ssl.SSLError, OSError, ValueError) as error:
        raise ConfigError(
            f"context {quoted(context)}: its client-certificate and client-key cannot be used: "
            + short_error(str(error))
        ) from None
    return tls


def _in_cluster_namespace() -> str:
    try:
        return Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read_text().strip() or "default"
    except OSError:
        return "default"
