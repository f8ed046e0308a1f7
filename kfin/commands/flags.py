"""Every flag, declared once: kubectl's connection and output flags (accepted before or after the command),
and the flags several commands share; the values they become (Options, durations)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Annotated, Any

import typer
from msgspec import Struct, field
from msgspec.structs import replace

from kfin.api.target import Target
from kfin.commands.outputs import VERDICTS
from kfin.core.explain.selectors import Selector, selector
from kfin.core.read.catalog import Catalog
from kfin.core.read.scope import Scope
from kfin.errors import UsageError
from kfin.names import check_kind, check_name, check_namespace
from kfin.render.terminal import Console
from kfin.settings import Settings
from kfin.util.durations import parse_duration

COMPLETION = "kfin.commands.completion"


def completer(name: str) -> Callable[[typer.Context, str], list[str]]:
    """A Tab-completion callback of kfin.commands.completion, whose module (it reaches the API) is loaded on
    the first Tab only: declaring a flag must not cost `kfin --help` that import."""

    def complete(ctx: typer.Context, incomplete: str) -> list[str]:
        candidates: list[str] = getattr(importlib.import_module(COMPLETION), name)(ctx, incomplete)
        return candidates

    complete.__name__ = name
    return complete


KubeconfigOpt = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig", metavar="PATH", help="Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."
    ),
]
ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context", metavar="NAME", autocompletion=completer("contexts"), help="The kubeconfig context to use."
    ),
]
ContextsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--context",
        metavar="NAME",
        autocompletion=completer("contexts"),
        help="The kubeconfig context; repeat to scan several.",
    ),
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        metavar="NS",
        autocompletion=completer("namespaces"),
        help="Namespace (default: the context's namespace).",
    ),
]
AllNamespacesOpt = Annotated[
    bool | None, typer.Option("--all-namespaces", "-A", help="Every namespace, and cluster-scoped objects.")
]
OutputOpt = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FORMAT",
        autocompletion=completer("outputs"),
        help="Output format: table, wide, json, yaml (and name, prometheus, jsonpath=..., custom-columns=..., "
        "where listed).",
    ),
]
TimeoutOpt = Annotated[
    str | None,
    typer.Option(
        "--request-timeout",
        metavar="DURATION",
        help="Deadline for each API request, retries included, e.g. 10s, 1m; 0 means none.",
    ),
]
# How a scan reads (kfin stuck, snapshot, serve), and how many per-object series its metrics hold.
ConcurrencyOpt = Annotated[
    int, typer.Option("--concurrency", min=1, max=64, help="How many resource types to list at once.")
]
ChunkSizeOpt = Annotated[int, typer.Option("--chunk-size", min=1, help="Objects per list request (page).")]
MaxInfoSeriesOpt = Annotated[
    int,
    typer.Option(
        "--max-info-series",
        min=0,
        metavar="N",
        help="-o prometheus and kfin serve: at most N kfin_stuck_object_info series.",
    ),
]
RefreshOpt = Annotated[bool, typer.Option("--refresh", help="Rediscover the API instead of using the cache.")]
NoDryRunOpt = Annotated[
    bool,
    typer.Option(
        "--no-dry-run",
        help="Send no dry run (dryRun=All) of the writes a deletion still needs: answer from what kfin reads alone.",
    ),
]
KindArg = Annotated[
    str,
    typer.Argument(
        metavar="KIND[/NAME]",
        autocompletion=completer("kinds"),
        help="pvc, pv, ns, pod, or any kind or plural; or KIND/NAME, as kubectl's TYPE/NAME.",
    ),
]
# absent with KIND/NAME
NameArg = Annotated[str | None, typer.Argument(metavar="NAME", autocompletion=completer("names"))]
# kfin remove's: absent with --all-stuck
OptionalKindArg = Annotated[
    str | None,
    typer.Argument(
        metavar="KIND[/NAME]",
        autocompletion=completer("kinds"),
        help="pvc, pv, ns, or any kind or plural; or KIND/NAME.",
    ),
]


# The words for Namespaces (kind, plural, short name; any case, as kubectl resolves them before discovery would)
NAMESPACE_KINDS = frozenset({"namespace", "namespaces", "ns"})


def _is_kind_slash_name(text: str) -> bool:
    """Is `text` a valid KIND/NAME (then a word after it is one too many, not a bad kind)?"""
    kind, _, name = text.partition("/")
    try:
        check_kind(kind)
        check_name(name)
    except UsageError:
        return False
    return True


def subject(kind: str | None, name: str | None, command: str) -> tuple[str, str]:
    """KIND NAME or KIND/NAME (kubectl's TYPE/NAME), both checked as the API server would."""
    if kind is not None and name is None and "/" in kind:
        kind, _, name = kind.partition("/")
    elif kind is not None and name is not None and "/" in kind and _is_kind_slash_name(kind):
        raise UsageError(
            f"kfin {command} takes KIND NAME or KIND/NAME: '{kind}' names the object already, so '{name}' is one "
            "argument too many"
        )
    if kind is None or name is None:
        raise UsageError(f"kfin {command} needs KIND NAME or KIND/NAME")
    if kind.lower() in NAMESPACE_KINDS:  # a Namespace's name is what -n takes: checked as -n is, before any request
        return check_kind(kind), check_namespace(name)
    return check_kind(kind), check_name(name)


KindsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--kind",
        metavar="KIND",
        autocompletion=completer("kinds"),
        help="Only this type (repeatable): pvc, deploy.apps, widgets.example.com.",
    ),
]
# How kfin stuck narrows what it lists, and kfin remove --all-stuck what it selects: the same objects for the same
# flags (kfin.core.explain.stuck.narrowed applies --verdict and the selectors, never to kfin's lists)
OlderThanOpt = Annotated[
    str | None,
    typer.Option("--older-than", metavar="DURATION", help="Only objects terminating for at least this long (10m, 2h)."),
]
LabelSelectorOpt = Annotated[
    str | None,
    typer.Option("--selector", "-l", metavar="SELECTOR", help="Only stuck objects whose labels match (kubectl's -l)."),
]
FieldSelectorOpt = Annotated[
    str | None,
    typer.Option(
        "--field-selector", metavar="SELECTOR", help="Only stuck objects with metadata.name or .namespace so."
    ),
]
VERDICT_HELP = (
    "Only objects with this verdict: HOLDING, WAITING, STALLED, ORPHANED, UNKNOWN or BLOCKED (repeat, or a,b)."
)


def _verdict_option(more: str = "") -> Any:
    return typer.Option(
        "--verdict", metavar="VERDICT", autocompletion=completer("verdicts"), help=f"{VERDICT_HELP} {more}".strip()
    )


VerdictsOpt = Annotated[list[str] | None, _verdict_option()]
# kfin remove --all-stuck's: the same objects, and it never widens what is removed (kfin.core.remove.plan.plan)
RemovalVerdictsOpt = Annotated[
    list[str] | None,
    _verdict_option(
        "With --all-stuck, as kfin stuck lists them. It narrows, never widens, what is removed: by default only "
        "ORPHANED finalizers; a STALLED one only named by --finalizer; a HOLDING, UNKNOWN or BLOCKED one only "
        "named by --finalizer, with --force."
    ),
]


AuditLogOpt = Annotated[
    str | None,
    typer.Option("--audit-log", metavar="PATH", help="Audit log file (default ~/.local/state/kfin/audit.jsonl)."),
]
TimeoutFlag = Annotated[str, typer.Option("--timeout", metavar="DURATION", help="How long to wait (30s, 5m, 1h).")]


def snapshot_flag(help_text: str) -> Any:
    """--from-snapshot FILE, with the command's own help."""
    return typer.Option(None, "--from-snapshot", metavar="FILE", help=f"{help_text} - reads standard input.")


MAX_REQUEST_TIMEOUT_SECONDS = 86400  # longer is a typo, and too long for the socket layer to represent
MAX_WAIT_SECONDS = 7 * 86400


class Options(Struct, frozen=True):
    """The connection and output flags, wherever they were given."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    all_namespaces: bool = False
    output: str | None = None
    request_timeout: float | None = None
    catalog: Catalog = field(default_factory=Catalog)  # with --catalog FILE: entries of the user's own
    trace: int = 0  # -v: kfin.api.trace
    # where the command writes: made once as it starts (kfin.commands.app.root), or here for a command run alone
    console: Console = field(default_factory=Console.of_process)

    def __post_init__(self) -> None:
        if self.namespace is not None:
            check_namespace(self.namespace)

    def target(self) -> Target:
        """Where the command points, with its settings: every connection made for it traces at its -v and
        explains with its catalog."""
        return Target(self.kubeconfig, self.context, self.request_timeout, Settings(self.trace))

    def scope(
        self,
        *,
        contexts: list[str] | None = None,
        from_snapshot: str | None = None,
        refresh: bool = False,
        concurrency: int = 16,
        chunk_size: int = 500,
        dry_run: bool = False,
    ) -> Scope:
        return Scope(
            self.target(),
            self.namespace,
            self.all_namespaces,
            tuple(contexts or ()),
            from_snapshot,
            refresh,
            concurrency,
            chunk_size,
            self.catalog,
            dry_run,
        )


def request_timeout_seconds(text: str | None) -> float | None:
    """--request-timeout: a duration up to 24h; 0 (or none given) means no deadline."""
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise UsageError(f"--request-timeout: {error}") from None
    if seconds > MAX_REQUEST_TIMEOUT_SECONDS:
        raise UsageError(f'--request-timeout: "{text}" is too long (at most 24h; 0 means none)')
    return seconds or None


def wait_seconds(text: str, flag: str = "--timeout") -> float:
    """--timeout and --node-lost-after: a duration of more than 0 and at most 7d."""
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise UsageError(f"{flag}: {error}") from None
    if not 0 < seconds <= MAX_WAIT_SECONDS:
        raise UsageError(f'{flag}: "{text}" must be more than 0 and at most 7d')
    return seconds


def verdicts(values: list[str] | None) -> set[str]:
    """--verdict: repeated or comma-separated, any case."""
    chosen = {part.strip().upper() for value in values or [] for part in value.split(",") if part.strip()}
    unknown = sorted(chosen - set(VERDICTS))
    if unknown:
        raise UsageError(f'--verdict: unknown verdict "{unknown[0]}" (one of {", ".join(VERDICTS)})')
    return chosen


class Narrowing(Struct, frozen=True):
    """--kind, --older-than, --verdict, -l and --field-selector, checked before anything is read: what kfin stuck
    lists and kfin remove --all-stuck selects (kinds and older for the scan, the rest for
    kfin.core.explain.stuck.narrowed)."""

    kinds: tuple[str, ...] = ()
    older: float | None = None
    verdicts: set[str] = field(default_factory=set)
    chosen: Selector | None = None

    @property
    def given(self) -> bool:
        return bool(self.kinds or self.older is not None or self.verdicts or self.chosen)


def narrowing(
    kinds: list[str] | None,
    older_than: str | None,
    verdict: list[str] | None,
    label_selector: str | None,
    field_selector: str | None,
) -> Narrowing:
    return Narrowing(
        tuple(check_kind(text) for text in kinds or ()),
        duration_seconds(older_than, "--older-than") if older_than else None,
        verdicts(verdict),
        selector(label_selector, field_selector),
    )


def duration_seconds(text: str, flag: str) -> float:
    """Any other duration flag (--older-than, --interval)."""
    try:
        return parse_duration(text)
    except ValueError as error:
        raise UsageError(f"{flag}: {error}") from None


def merged(
    ctx: typer.Context | None,
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    namespace: str | None = None,
    all_namespaces: bool | None = None,
    output: str | None = None,
    request_timeout: str | None = None,
) -> Options:
    """The options given after the command override those given before it."""
    base: Options = (ctx.find_root().obj or Options()) if ctx else Options()
    given: dict[str, Any] = {
        "kubeconfig": kubeconfig,
        "context": context,
        "namespace": namespace,
        "all_namespaces": all_namespaces,
        "output": output,
        "request_timeout": request_timeout_seconds(request_timeout) if request_timeout is not None else None,
    }
    return replace(base, **{k: v for k, v in given.items() if v is not None})


TEMPLATES = ("jsonpath=", "custom-columns=")  # -o FORMAT=ARGUMENT, as kubectl's


def check_output(options: Options, allowed: tuple[str, ...]) -> str:
    """The -o value (the first allowed one by default); any other is a usage error. A template format
    (jsonpath=..., custom-columns=...) is allowed where `allowed` names its prefix."""
    output = options.output or allowed[0]
    if any(output.startswith(t) and t in allowed for t in TEMPLATES):
        return output
    if output not in allowed:
        raise UsageError(f'--output "{output}" is not supported here (use one of: {", ".join(allowed)})')
    return output
