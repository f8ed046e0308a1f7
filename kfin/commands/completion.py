"""Shell completion: kinds from the discovery cache, object names, namespaces and contexts.

Completion runs on every Tab: it reads the kubeconfig with PyYAML (not the kubernetes client), serves
kinds from the discovery cache (or the built-in table), asks the API server only for names, with a
one-second limit, and never lets an error reach the shell.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import typer

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.connection import Kube
from kfin.api.discovery import cached_resources
from kfin.api.resources import KindLookup
from kfin.api.target import Target
from kfin.commands.outputs import OUTPUTS, VERDICTS
from kfin.model import JSON, ResourceType
from kfin.names import path_segment_problem

NAME_TIMEOUT_SECONDS = 1.0
Completer = Callable[[typer.Context, str], list[str]]


def _safe(fn: Callable[[typer.Context, str], Iterable[str]]) -> Completer:
    def wrapper(ctx: typer.Context, incomplete: str) -> list[str]:
        try:
            return [c for c in fn(ctx, incomplete) if c.startswith(incomplete)]
        except Exception:  # completion must never print errors into the shell
            return []

    wrapper.__name__ = fn.__name__
    return wrapper


def _param(ctx: Any, name: str) -> Any:
    while ctx is not None:
        value = (ctx.params or {}).get(name)
        if value:
            return value
        ctx = ctx.parent
    return None


def _kubeconfig(ctx: typer.Context) -> tuple[JSON, str | None]:
    """(merged kubeconfig, its current or chosen context) read directly, without the kubernetes client."""
    import yaml  # 20 ms: only on Tab

    explicit = _param(ctx, "kubeconfig")
    paths = (
        [explicit]
        if explicit
        else [p for p in (os.environ.get("KUBECONFIG") or "").split(os.pathsep) if p]
        or [str(Path("~/.kube/config").expanduser())]
    )
    merged: JSON = {"clusters": [], "contexts": [], "users": []}
    for path in paths:
        if not Path(path).is_file():
            continue
        doc = yaml.safe_load(Path(path).read_text()) or {}
        for key in ("clusters", "contexts", "users"):
            merged[key] += doc.get(key) or []
        merged.setdefault("current-context", doc.get("current-context"))
    context = _param(ctx, "context")
    if isinstance(context, list):
        context = context[0] if context else None
    return merged, context or merged.get("current-context")


def _server_and_namespace(ctx: typer.Context) -> tuple[str | None, str]:
    config, name = _kubeconfig(ctx)
    context = next((c.get("context") or {} for c in config["contexts"] if c.get("name") == name), {})
    cluster = next((c.get("cluster") or {} for c in config["clusters"] if c.get("name") == context.get("cluster")), {})
    return cluster.get("server"), _param(ctx, "namespace") or context.get("namespace") or "default"


def _resources(ctx: typer.Context) -> list[ResourceType]:
    server, _ = _server_and_namespace(ctx)
    # An old cache still completes (better than none); no cache: the built-in kinds.
    return (cached_resources(server.rstrip("/")) if server else None) or builtin_resources()


@_safe
def kinds(ctx: typer.Context, incomplete: str) -> list[str]:
    return sorted({name for r in _resources(ctx) for name in (r.qualified, *r.short_names)})


def _kube(ctx: typer.Context) -> Kube:
    return Kube.connect(
        Target(
            _param(ctx, "kubeconfig"),
            _param(ctx, "context") if not isinstance(_param(ctx, "context"), list) else _param(ctx, "context")[0],
            NAME_TIMEOUT_SECONDS,
        )
    )


@_safe
def names(ctx: typer.Context, incomplete: str) -> list[str]:
    kind = _param(ctx, "kind")
    if not kind:
        return kinds(ctx, incomplete)
    return _names_of(ctx, kind)


@_safe
def namespaces(ctx: typer.Context, incomplete: str) -> list[str]:
    namespaces_type = KindLookup(builtin_resources()).find("namespaces")
    return _candidates(_kube(ctx).first_page(namespaces_type, None))


def _candidates(page: JSON) -> list[str]:
    """Names from a list page; only those that can be names (a hostile server's newlines or escape
    sequences never reach the shell)."""
    names = [(item.get("metadata") or {}).get("name") for item in page.get("items") or [] if isinstance(item, dict)]
    return sorted(n for n in names if isinstance(n, str) and not path_segment_problem(n) and " " not in n)


@_safe
def verdicts(ctx: typer.Context, incomplete: str) -> list[str]:
    """--verdict's values, in the case being typed, after those already given (a,b)."""
    head, comma, last = incomplete.rpartition(",")
    given = {v.strip().upper() for v in head.split(",")}
    return [head + comma + (v.lower() if last.islower() else v) for v in VERDICTS if v not in given]


@_safe
def contexts(ctx: typer.Context, incomplete: str) -> list[str]:
    config, _ = _kubeconfig(ctx)
    return sorted(c.get("name", "") for c in config["contexts"])


@_safe
def outputs(ctx: typer.Context, incomplete: str) -> list[str]:
    """The -o formats of the command being typed (every command's before one is named)."""
    command = ctx.command.name if ctx.command is not None else None
    if command in OUTPUTS:
        return list(OUTPUTS[command])
    return sorted({f for formats in OUTPUTS.values() for f in formats})


@_safe
def subjects(ctx: typer.Context, incomplete: str) -> list[str]:
    """kfin graph's KIND NAME | KIND/NAME | namespace NAME: a kind first, then a name of that kind."""
    typed = [w for w in (_param(ctx, "target") or []) if w]
    if not typed:
        if "/" in incomplete:
            kind = incomplete.partition("/")[0]
            return [f"{kind}/{name}" for name in _names_of(ctx, kind)]
        return ["namespace", *kinds(ctx, incomplete)]
    if len(typed) == 1 and "/" not in typed[0]:
        return _names_of(ctx, typed[0])
    return []


def _names_of(ctx: typer.Context, kind: str) -> list[str]:
    rtype = KindLookup(_resources(ctx)).find(kind)
    _, namespace = _server_and_namespace(ctx)
    return _candidates(_kube(ctx).first_page(rtype, namespace if rtype.namespaced else None))
