"""The common kubeconfig, read without the `kubernetes` package.

Importing that package costs about 0.2 s, a third of a small scan (measured in bench/). A kubeconfig
whose context uses a static token or client certificate (kind, k3s, kubeadm, most CI) needs none of
its machinery, so it is read here. Anything else (exec plugins, auth providers, token files,
basic auth, proxies, several files, or anything odd) gets `None`, and kfin.api.connection lets the
package do it, with its own error messages.
"""

from __future__ import annotations

import atexit
import base64
import os
import tempfile
from pathlib import Path
from typing import Any

from msgspec import Struct

from kfin.model import JSON

PROXY_VARIABLES = ("https_proxy", "http_proxy", "all_proxy", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
CLUSTER_KEYS = {
    "server",
    "certificate-authority",
    "certificate-authority-data",
    "insecure-skip-tls-verify",
    "tls-server-name",
    "extensions",
    "disable-compression",
}
USER_KEYS = {"token", "client-certificate", "client-certificate-data", "client-key", "client-key-data", "extensions"}


class StaticConfiguration(Struct):
    """What kfin.api.connection reads of a client Configuration, for credentials that never change."""

    host: str
    verify_ssl: bool = True
    ssl_ca_cert: str | None = None
    ca_cert_data: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    tls_server_name: str | None = None
    assert_hostname: str | None = None
    proxy: str | None = None
    token: str | None = None

    def auth_settings(self) -> JSON:
        if not self.token:
            return {}
        return {
            "BearerToken": {"type": "api_key", "in": "header", "key": "authorization", "value": f"Bearer {self.token}"}
        }


def _named(entries: Any, name: object) -> JSON | None:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


def _data_file(data: str) -> str:
    """A file holding base64 `data` decoded (TLS libraries read certificates from files), removed at exit."""
    handle, path = tempfile.mkstemp(prefix="kfin-")
    with os.fdopen(handle, "wb") as out:
        out.write(base64.b64decode(data))
    atexit.register(lambda: Path(path).unlink(missing_ok=True))
    return path


def load_static(
    paths: list[str], context: str | None, document: JSON | None = None
) -> tuple[StaticConfiguration, str, str] | None:
    """(configuration, context name, namespace) when the kubeconfig is simple enough, else None. `document`:
    the file's YAML already read (kfin.api.kubeconfig_types), else it is read here."""
    if len(paths) != 1 or any(os.environ.get(v) for v in PROXY_VARIABLES):
        return None
    path = Path(paths[0]).expanduser()
    config: Any = document
    if config is None:
        try:
            import yaml

            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            config = yaml.load(path.read_text(), Loader=loader)
        except Exception:  # unreadable or not YAML: the package says what is wrong
            return None
    if not isinstance(config, dict):
        return None
    name = context or config.get("current-context")
    entry = _named(config.get("contexts"), name) if name else None
    if not entry or not isinstance(entry.get("context"), dict):
        return None
    ctx = entry["context"]
    if set(ctx) - {"cluster", "user", "namespace", "extensions"}:
        return None  # impersonation and the like
    cluster = (_named(config.get("clusters"), ctx.get("cluster", "")) or {}).get("cluster")
    user = (_named(config.get("users"), ctx.get("user", "")) or {}).get("user") or {}
    if not isinstance(cluster, dict) or not isinstance(user, dict) or not cluster.get("server"):
        return None
    if set(cluster) - CLUSTER_KEYS or set(user) - USER_KEYS:
        return None
    base = path.parent
    configuration = StaticConfiguration(host=str(cluster["server"]).rstrip("/"), token=user.get("token"))
    try:
        if configuration.host.startswith("https"):
            if cluster.get("certificate-authority-data"):
                configuration.ca_cert_data = base64.b64decode(cluster["certificate-authority-data"]).decode()
            elif cluster.get("certificate-authority"):
                configuration.ssl_ca_cert = str(base / Path(cluster["certificate-authority"]).expanduser())
            for kind, attribute in (("client-certificate", "cert_file"), ("client-key", "key_file")):
                if user.get(f"{kind}-data"):
                    setattr(configuration, attribute, _data_file(user[f"{kind}-data"]))
                elif user.get(kind):
                    setattr(configuration, attribute, str(base / Path(user[kind]).expanduser()))
    except (ValueError, TypeError):  # bad base64: the package reports it
        return None
    if cluster.get("insecure-skip-tls-verify"):
        configuration.verify_ssl = False
    configuration.tls_server_name = cluster.get("tls-server-name")
    return configuration, str(name), ctx.get("namespace") or "default"
