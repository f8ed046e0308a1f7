"""Shell completion: kinds from the discovery cache, object names, namespaces and contexts.

Completion runs on every Tab: it reads the kubeconfig with PyYAML (not the kubernetes client), serves
kinds from the discovery cache (or the built-in table), asks the API server only for names, with a
one-second limit, and never lets an error reach the shell.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

COMPLETE_VAR = "_KFIN_COMPLETE"
NAME_TIMEOUT_SECONDS = 1.0


def _safe(fn):
    def wrapper(ctx, incomplete: str) -> list[str]:
        try:
            return [c for c in fn(ctx, incomplete) if c.startswith(incomplete)]
        except Exception:  # completion must never print errors into the shell
            return []
    wrapper.__name__ = fn.__name__
    return wrapper


def _param(ctx, name: str):
    while ctx is not None:
        value = (ctx.params or {}).get(name)
        if value:
            return value
        ctx = ctx.parent
    return None


def _kubeconfig(ctx) -> tuple[dict, str | None]:
    """(merged kubeconfig, its current or chosen context) read directly, without the kubernetes client."""
    import yaml

    explicit = _param(ctx, "kubeconfig")
    paths = [explicit] if explicit else [p for p in (os.environ.get("KUBECONFIG") or "").split(os.pathsep) if p] \
        or [str(Path("~/.kube/config").expanduser())]
    merged: dict = {"clusters": [], "contexts": [], "users": []}
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


def _server_and_namespace(ctx) -> tuple[str | None, str]:
    config, name = _kubeconfig(ctx)
    context = next((c.get("context") or {} for c in config["contexts"] if c.get("name") == name), {})
    cluster = next((c.get("cluster") or {} for c in config["clusters"] if c.get("name") == context.get("cluster")), {})
    return cluster.get("server"), _param(ctx, "namespace") or context.get("namespace") or "default"


def _resources(ctx):
    from kfin.api.builtin_kinds import builtin_resources
    from kfin.api.discovery import cached_resources

    server, _ = _server_and_namespace(ctx)
    # An old cache still completes (better than none); no cache: the built-in kinds.
    return (cached_resources(server.rstrip("/")) if server else None) or builtin_resources()


@_safe
def kinds(ctx, incomplete: str) -> list[str]:
    return sorted({name for r in _resources(ctx) for name in (r.qualified, *r.short_names)})


def _kube(ctx):
    from kfin.api.connection import Kube, Target
    return Kube.connect(Target(_param(ctx, "kubeconfig"), _param(ctx, "context") if not isinstance(
        _param(ctx, "context"), list) else _param(ctx, "context")[0], NAME_TIMEOUT_SECONDS))


@_safe
def names(ctx, incomplete: str) -> list[str]:
    from kfin.api.resources import Catalog

    kind = _param(ctx, "kind")
    if not kind:
        return kinds(ctx, incomplete)
    rtype = Catalog(_resources(ctx)).find(kind)
    _, namespace = _server_and_namespace(ctx)
    kube = _kube(ctx)
    page = next(kube.list_metadata_pages(rtype.path(namespace if rtype.namespaced else None), 500))
    return _candidates(page)


@_safe
def namespaces(ctx, incomplete: str) -> list[str]:
    page = next(_kube(ctx).list_metadata_pages("/api/v1/namespaces", 500))
    return _candidates(page)


def _candidates(page) -> list[str]:
    """Names from a list page; only those that can be names (a hostile server's newlines or escape
    sequences never reach the shell)."""
    from kfin.names import path_segment_problem

    names = [(item.get("metadata") or {}).get("name") for item in page.get("items") or [] if isinstance(item, dict)]
    return sorted(n for n in names if isinstance(n, str) and not path_segment_problem(n) and " " not in n)


@_safe
def contexts(ctx, incomplete: str) -> list[str]:
    config, _ = _kubeconfig(ctx)
    return sorted(c.get("name", "") for c in config["contexts"])


def kubectl_complete() -> None:
    """`kubectl_complete-kfin`: kubectl's plugin completion (cobra's __complete protocol).

    kubectl runs `kubectl_complete-kfin __complete ARGS... INCOMPLETE` and reads one candidate per line,
    then `:4` (no file completion).
    """
    import contextlib
    import io

    from kfin.commands.app import app

    args = sys.argv[1:]
    if args and args[0] in ("__complete", "__completeNoDesc"):
        args = args[1:]
    words = ["kfin", *args] if args else ["kfin", ""]
    env = {COMPLETE_VAR: "complete_bash", "COMP_WORDS": " ".join(_quote(w) for w in words),
           "COMP_CWORD": str(len(words) - 1)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            try:
                app(args=[], prog_name="kfin")
            except SystemExit:
                pass
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    for line in out.getvalue().splitlines():
        if line.strip():
            print(line)
    print(":4")


def _quote(word: str) -> str:
    import shlex
    return shlex.quote(word) if word else "''"
