"""kubectl's connection and output flags, accepted before or after the command name."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Optional

import typer

from kfin.commands import completion
from kfin.util.durations import parse_duration
from kfin.errors import UsageError
from kfin.names import check_namespace

KubeconfigOpt = Annotated[Optional[str], typer.Option("--kubeconfig", metavar="PATH",
                          help="Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).")]
ContextOpt = Annotated[Optional[str], typer.Option("--context", metavar="NAME", autocompletion=completion.contexts,
                       help="The kubeconfig context to use.")]
NamespaceOpt = Annotated[Optional[str], typer.Option("--namespace", "-n", metavar="NS",
                         autocompletion=completion.namespaces,
                         help="Namespace (default: the context's namespace).")]
AllNamespacesOpt = Annotated[Optional[bool], typer.Option("--all-namespaces", "-A",
                             help="Every namespace, and cluster-scoped objects.")]
OutputOpt = Annotated[Optional[str], typer.Option("--output", "-o", metavar="FORMAT",
                      help="Output format: table, wide, json, yaml (and name, prometheus, where listed).")]
TimeoutOpt = Annotated[Optional[str], typer.Option("--request-timeout", metavar="DURATION",
                       help="Deadline for each API request, retries included, e.g. 10s, 1m; 0 means none.")]
# How a scan reads (kfin stuck, snapshot, serve), and how many per-object series its metrics hold.
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", min=1, max=64,
                           help="How many resource types to list at once.")]
ChunkSizeOpt = Annotated[int, typer.Option("--chunk-size", min=1, help="Objects per list request (page).")]
MaxInfoSeriesOpt = Annotated[int, typer.Option("--max-info-series", min=0, metavar="N",
                             help="-o prometheus and kfin serve: at most N kfin_stuck_object_info series.")]


MAX_TIMEOUT_SECONDS = 86400  # longer is a typo, and too long for the socket layer to represent


@dataclass(frozen=True)
class Options:
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    all_namespaces: bool = False
    output: str | None = None
    request_timeout: float | None = None

    def __post_init__(self):
        if self.namespace is not None:
            check_namespace(self.namespace)

    def target(self):
        from kfin.api.connection import Target
        return Target(self.kubeconfig, self.context, self.request_timeout)


def parse_timeout(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise UsageError(f"--request-timeout: {error}") from None
    if seconds > MAX_TIMEOUT_SECONDS:
        raise UsageError(f'--request-timeout: "{text}" is too long (at most 24h; 0 means none)')
    return seconds or None


def merged(ctx: typer.Context, *, kubeconfig=None, context=None, namespace=None, all_namespaces=None,
           output=None, request_timeout=None) -> Options:
    """The options given after the command override those given before it."""
    base: Options = (ctx.find_root().obj or Options()) if ctx else Options()
    given = {"kubeconfig": kubeconfig, "context": context, "namespace": namespace,
             "all_namespaces": all_namespaces, "output": output,
             "request_timeout": parse_timeout(request_timeout) if request_timeout is not None else None}
    return replace(base, **{k: v for k, v in given.items() if v is not None})


def check_output(options: Options, allowed: tuple[str, ...]) -> str:
    output = options.output or allowed[0]
    if output not in allowed:
        raise UsageError(f'--output "{output}" is not supported here (use one of: {", ".join(allowed)})')
    return output
