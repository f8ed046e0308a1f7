"""Every kubeconfig field read by its type before anything uses it, as kubectl's strict decoder does.

YAML is loose: `insecure-skip-tls-verify: "false"` is a string, and a string is true in Python (and in the
kubernetes package, which reads the field with `not value`): verification would be turned off silently.
A number where a string belongs, a token with a line break (a header that splits), an alias bomb, a file
of gigabytes: each is one line naming the file and the field, exit 3, before any connection is made.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from kfin.errors import ConfigError
from kfin.model import JSON
from kfin.names import quoted

MAX_BYTES = 16 * 1024 * 1024  # far above any real kubeconfig (certificates inline included)
MAX_TOKEN_FILE = 1024 * 1024  # a bearer token is a few KiB; /dev/zero or a FIFO is not a token file
MAX_ALIASES = 100  # kubeconfigs written by tools never use YAML aliases; a "billion laughs" uses many

STRING, BOOLEAN, STRINGS, MAPPING, LIST = (
    "a string",
    "a boolean (true or false)",
    "a list of strings",
    "a map",
    "a list",
)

CLUSTER_FIELDS = {
    "server": STRING,
    "certificate-authority": STRING,
    "certificate-authority-data": STRING,
    "insecure-skip-tls-verify": BOOLEAN,
    "tls-server-name": STRING,
    "proxy-url": STRING,
    "disable-compression": BOOLEAN,
    "extensions": LIST,
}
USER_FIELDS = {
    "token": STRING,
    "tokenFile": STRING,
    "client-certificate": STRING,
    "client-certificate-data": STRING,
    "client-key": STRING,
    "client-key-data": STRING,
    "username": STRING,
    "password": STRING,
    "as": STRING,
    "as-uid": STRING,
    "as-groups": STRINGS,
    "exec": MAPPING,
    "auth-provider": MAPPING,
    "extensions": LIST,
}
EXEC_FIELDS = {
    "command": STRING,
    "args": STRINGS,
    "env": LIST,
    "apiVersion": STRING,
    "installHint": STRING,
    "provideClusterInfo": BOOLEAN,
    "interactiveMode": STRING,
}
CONTEXT_FIELDS = {"cluster": STRING, "user": STRING, "namespace": STRING, "extensions": LIST}
# Values that end up in an HTTP header or a command line: a line break or a control character would split
# or smuggle one, and http.client refuses anything beyond Latin-1 with a traceback.
HEADER_VALUES = {"token", "username", "password", "as", "as-uid"}


def _fits(value: Any, expected: str) -> bool:
    if expected == STRING:
        return isinstance(value, str)
    if expected == BOOLEAN:
        return isinstance(value, bool)
    if expected == STRINGS:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if expected == MAPPING:
        return isinstance(value, dict)
    return isinstance(value, list)


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f'the string "{value[:40]!s}"' if value.isprintable() else "a string"
    return f"{type(value).__name__} {str(value)[:40]}" if isinstance(value, int | float) else type(value).__name__


def _check_fields(where: str, entry: Any, fields: dict[str, str]) -> None:
    if entry is None:
        return
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a map, not {_shown(entry)}")
    for key, value in entry.items():
        expected = fields.get(key)
        if expected is None or value is None:
            continue  # unknown fields are the loaders' business; null is "not set"
        if not _fits(value, expected):
            secret = key in HEADER_VALUES or key.endswith("-data")  # a credential is never printed
            shown = f"a value of type {type(value).__name__}" if secret else _shown(value)
            raise ConfigError(f"{where}.{key} must be {expected}, not {shown}")
        if key in HEADER_VALUES and not header_safe(value):
            raise ConfigError(
                f"{where}.{key} holds a line break, a control character or a character outside Latin-1: it "
                "cannot be sent in an HTTP header"
            )


def header_safe(text: str) -> bool:
    return all(" " <= c <= "\xff" and c != "\x7f" for c in text)


def _named_list(where: str, value: Any, inner: str, fields: dict[str, str]) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        raise ConfigError(f"{where} must be a list, not {_shown(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ConfigError(f"{where}[{index}] must be a map, not {_shown(item)}")
        name = item.get("name")
        if not isinstance(name, str):
            raise ConfigError(f"{where}[{index}].name must be a string, not {_shown(name)}")
        here = f'{where}["{name}"].{inner}' if name.isprintable() else f"{where}[{index}].{inner}"
        body = item.get(inner)
        _check_fields(here, body, fields)
        if inner == "user" and isinstance(body, dict):
            _check_fields(f"{here}.exec", body.get("exec"), EXEC_FIELDS)
            for position, pair in enumerate((body.get("exec") or {}).get("env") or []):
                _check_fields(f"{here}.exec.env[{position}]", pair, {"name": STRING, "value": STRING})


# Documents already parsed, by their bytes: a fleet connects to each of its contexts through the same file
# (twenty parses of a twenty-context file were a tenth of its scan), and forked workers inherit them. Callers
# only read the documents. Kubeconfigs are kilobytes: a file over a MiB is parsed each time, not kept.
_parsed: dict[bytes, Any] = {}
KEPT_PARSED, KEPT_BYTES = 16, 1024 * 1024


def load_document(path: Path) -> Any:
    """The YAML of one kubeconfig, bounded in size and in aliases; ConfigError when it cannot be read."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"cannot read kubeconfig {path}: {error.strerror or error}") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"kubeconfig {path} is larger than {MAX_BYTES // (1024 * 1024)} MiB: not a kubeconfig")
    if len(raw) > KEPT_BYTES:
        return _parse(path, raw)
    if raw not in _parsed:
        if len(_parsed) >= KEPT_PARSED:
            _parsed.clear()
        _parsed[raw] = _parse(path, raw)
    return _parsed[raw]


def _parse(path: Path, raw: bytes) -> Any:
    """YAML, with its aliases counted before they are expanded."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        aliases = (  # an alias needs an anchor (&) and a reference (*); base64 and PEM have neither
            sum(1 for event in yaml.parse(raw, Loader=loader) if isinstance(event, yaml.AliasEvent))
            if b"&" in raw and b"*" in raw
            else 0
        )
        if aliases > MAX_ALIASES:
            raise ConfigError(f"kubeconfig {path} uses {aliases} YAML aliases: refused (a kubeconfig needs none)")
        return yaml.load(raw, Loader=loader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"kubeconfig {path} is not valid YAML{at}") from None
    except RecursionError:
        raise ConfigError(f"kubeconfig {path} is nested too deeply") from None


# What the kubernetes package can run; kubectl itself knows only oidc since 1.26 (gcp and azure moved to exec
# plugins). Any other name is ignored by the package: the request would go without credentials, and the 401
# would be blamed on the credentials instead of the kubeconfig.
AUTH_PROVIDERS = ("oidc", "gcp", "azure")


def check_kubeconfig(paths: list[str], context: str | None = None) -> list[JSON]:
    """Read every kubeconfig file by its types; raise ConfigError (exit 3) naming the file and field. Returns
    the documents read (an empty file left out), so that nothing parses them again."""
    documents = _typed_documents(paths)
    current = context or next((d.get("current-context") for d, _ in documents if d.get("current-context")), None)
    # merged as kubectl merges several files: the first file that names an entry wins
    entries: dict[tuple[str, str], tuple[JSON, Path | None]] = {}
    for document, origin in documents:
        for section, inner in (("contexts", "context"), ("users", "user")):
            for item in document.get(section) or []:
                entries.setdefault((section, item["name"]), (item.get(inner) or {}, origin))
    chosen, _ = entries.get(("contexts", current), ({}, None)) if isinstance(current, str) else ({}, None)
    user_name = chosen.get("user")
    user, source = entries.get(("users", user_name), ({}, None)) if isinstance(user_name, str) else ({}, None)
    if user.get("tokenFile") and source is not None:
        _check_token_file(source.parent / Path(user["tokenFile"]).expanduser(), str(current))
    provider = (user or {}).get("auth-provider")
    if provider is not None:
        name = provider.get("name")
        if name not in AUTH_PROVIDERS:
            raise ConfigError(
                f"context {quoted(str(current))}: its user names auth provider {quoted(str(name))}, which kfin "
                f"does not know ({', '.join(AUTH_PROVIDERS)}): use an exec credential plugin"
            )
    return [document for document, _ in documents]


def _check_token_file(path: Path, context: str) -> None:
    """A tokenFile is read whole by the package, and again at each refresh: it must be a small regular file."""
    try:
        facts = path.stat()
    except OSError as error:
        raise ConfigError(f"context {quoted(context)}: its tokenFile {path} cannot be read: {error.strerror}") from None
    if not stat.S_ISREG(facts.st_mode):
        raise ConfigError(f"context {quoted(context)}: its tokenFile {path} is not a regular file")
    if facts.st_size > MAX_TOKEN_FILE:
        raise ConfigError(
            f"context {quoted(context)}: its tokenFile {path} is larger than {MAX_TOKEN_FILE // 1024} KiB: not a token"
        )


def _typed_documents(paths: list[str]) -> list[tuple[JSON, Path]]:
    out = []
    for text in paths:
        path = Path(text).expanduser()
        document = load_document(path)
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ConfigError(f"kubeconfig {path} is not a map of clusters, users and contexts")
        current = document.get("current-context")
        if current is not None and not isinstance(current, str):
            raise ConfigError(f"kubeconfig {path}: current-context must be a string, not {_shown(current)}")
        try:
            _named_list("clusters", document.get("clusters"), "cluster", CLUSTER_FIELDS)
            _named_list("users", document.get("users"), "user", USER_FIELDS)
            _named_list("contexts", document.get("contexts"), "context", CONTEXT_FIELDS)
        except ConfigError as error:
            raise ConfigError(f"kubeconfig {path}: {error}") from None
        out.append((document, path))
    return out
