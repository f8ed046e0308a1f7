"""The kfin command line: thin commands over the core, kubectl's flags and habits."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer
from typer.core import TyperGroup

from kfin import __version__
from kfin.commands import completion
from kfin.errors import ExitCode, KfinError, UsageError
from kfin.names import check_kind, check_name
from kfin.commands.flags import (AllNamespacesOpt, ChunkSizeOpt, ConcurrencyOpt, ContextOpt, KubeconfigOpt, MaxInfoSeriesOpt,
                          NamespaceOpt, Options, OutputOpt, TimeoutOpt, check_output, merged, parse_timeout)

class SuggestingGroup(TyperGroup):
    """Unknown commands get the nearest valid one: `did you mean stuck?`."""

    def resolve_command(self, ctx, args):
        import difflib

        if args and not args[0].startswith("-") and args[0] not in self.commands:
            close = difflib.get_close_matches(args[0], list(self.commands), n=1, cutoff=0.6)
            if close:
                raise UsageError(f'unknown command "{args[0]}" (did you mean {close[0]}?)')
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="kfin",
    cls=SuggestingGroup,
    help="Find out why Kubernetes objects are stuck in Terminating, and unstick them safely.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _client_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("kubernetes")
    except PackageNotFoundError:
        return "not installed"


def _print_version(value: bool):
    if value:
        typer.echo(f"kfin {__version__} (kubernetes client {_client_version()}, Python {sys.version.split()[0]})")
        raise typer.Exit()


@app.callback()
def root(ctx: typer.Context, kubeconfig: KubeconfigOpt = None, context: ContextOpt = None,
         namespace: NamespaceOpt = None, all_namespaces: AllNamespacesOpt = None, output: OutputOpt = None,
         request_timeout: TimeoutOpt = None,
         version: Optional[bool] = typer.Option(None, "--version", callback=_print_version, is_eager=True,
                                                help="Show kfin's version and the Kubernetes client's, and exit.")):
    """Find out why Kubernetes objects are stuck in Terminating, and unstick them safely.

    Connection flags (--kubeconfig, --context, -n, -A, -o, --request-timeout) work before or after the command.
    """
    ctx.obj = Options(kubeconfig, context, namespace, bool(all_namespaces), output, parse_timeout(request_timeout))


@app.command("version")
def version_command(ctx: typer.Context, kubeconfig: KubeconfigOpt = None, context: ContextOpt = None,
                    output: OutputOpt = None, request_timeout: TimeoutOpt = None):
    """Show kfin's version and the API server's.

    Example: kfin version --context prod -o json
    """
    from kfin.api.connection import Kube
    from kfin.render import tables as render

    options = merged(ctx, kubeconfig=kubeconfig, context=context, output=output, request_timeout=request_timeout)
    fmt = check_output(options, ("table", "json", "yaml"))
    kube = Kube.connect(options.target())
    server = kube.server_version()
    data = {"kfinVersion": __version__, "clientVersion": _client_version(), "context": kube.context,
            "server": kube.server, "serverVersion": server.get("gitVersion", "")}
    if fmt == "table":
        typer.echo(f"kfin: {__version__} (kubernetes client {data['clientVersion']})")
        typer.echo(f"Server: {data['serverVersion']} at {kube.server} (context {kube.context})")
    else:
        render.dump(data, fmt)


@app.command("stuck")
def stuck_command(
        ctx: typer.Context,
        kind: Optional[list[str]] = typer.Option(None, "--kind", metavar="KIND", autocompletion=completion.kinds,
                                                 help="Only this type (repeatable): pvc, deploy.apps, widgets.example.com."),
        finalizer: Optional[str] = typer.Option(None, "--finalizer", metavar="PATTERN",
                                                help="Only objects with a matching finalizer (glob or substring)."),
        older_than: Optional[str] = typer.Option(None, "--older-than", metavar="DURATION",
                                                 help="Only objects terminating for at least this long (10m, 2h)."),
        exit_code: bool = typer.Option(False, "--exit-code", help="Exit 1 when anything is stuck (for cron and CI)."),
        refresh: bool = typer.Option(False, "--refresh", help="Rediscover the API instead of using the cache."),
        from_snapshot: Optional[str] = typer.Option(None, "--from-snapshot", metavar="FILE",
                                                    help="Read a kfin snapshot or `kubectl get -o json` output."),
        context: Optional[list[str]] = typer.Option(None, "--context", metavar="NAME",
                                                    autocompletion=completion.contexts,
                                                    help="The kubeconfig context; repeat to scan several."),
        all_contexts: bool = typer.Option(False, "--all-contexts", help="Scan every context of the kubeconfig."),
        concurrency: ConcurrencyOpt = 16, chunk_size: ChunkSizeOpt = 500,
        max_info_series: MaxInfoSeriesOpt = 500,
        kubeconfig: KubeconfigOpt = None, namespace: NamespaceOpt = None, all_namespaces: AllNamespacesOpt = None,
        output: OutputOpt = None, request_timeout: TimeoutOpt = None):
    """List every object stuck in Terminating, with its finalizers and its blocker.

    Scans every listable resource type (built-in, aggregated and CRDs) with metadata-only requests.

    Examples:

      kfin stuck -A

      kfin stuck -n team-a --kind pvc -o wide

      kfin stuck --from-snapshot examples/stuck-cluster.json
    """
    from kfin.commands.stuck import stuck

    options = merged(ctx, kubeconfig=kubeconfig, namespace=namespace, all_namespaces=all_namespaces,
                     output=output, request_timeout=request_timeout)
    raise typer.Exit(int(stuck(options, kinds=kind, finalizer=finalizer, older_than=older_than,
                               exit_code=exit_code, refresh=refresh, from_snapshot=from_snapshot,
                               contexts=context or ([options.context] if options.context else []),
                               all_contexts=all_contexts, concurrency=concurrency, chunk_size=chunk_size,
                               max_info_series=max_info_series)))


@app.command("explain")
def explain_command(
        ctx: typer.Context,
        kind: str = typer.Argument(..., metavar="KIND", autocompletion=completion.kinds,
                                   help="pvc, pv, namespace/ns, pod, or any kind or plural."),
        name: str = typer.Argument(..., metavar="NAME", autocompletion=completion.names),
        refresh: bool = typer.Option(False, "--refresh", help="Rediscover the API instead of using the cache."),
        from_snapshot: Optional[str] = typer.Option(None, "--from-snapshot", metavar="FILE",
                                                    help="Explain from a kfin snapshot instead of a live cluster."),
        kubeconfig: KubeconfigOpt = None, context: ContextOpt = None, namespace: NamespaceOpt = None,
        output: OutputOpt = None, request_timeout: TimeoutOpt = None):
    """Why each finalizer of an object is still there, and what is safe to do.

    For each finalizer: what it protects, which controller removes it, what holds it now
    (HOLDING, WAITING or ORPHANED), the safe fix, the risk of forcing it, and the kfin remove
    command when removal is the right step.

    Examples:

      kfin explain pvc data-postgres-0 -n shop

      kfin explain ns team-a -o yaml

      kfin explain databases.acme.io orders -n team-a
    """
    from kfin.commands.explain import explain

    check_kind(kind)
    check_name(name)
    options = merged(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output,
                     request_timeout=request_timeout)
    raise typer.Exit(int(explain(options, kind=kind, name=name, from_snapshot=from_snapshot, refresh=refresh)))


@app.command("graph")
def graph_command(
        ctx: typer.Context,
        target: list[str] = typer.Argument(..., metavar="KIND NAME | KIND/NAME | namespace NAME"),
        depth: Optional[int] = typer.Option(None, "--depth", min=1, help="Draw the tree this many levels deep."),
        kind: Optional[list[str]] = typer.Option(None, "--kind", metavar="KIND", autocompletion=completion.kinds,
                                                 help="Only these kinds (and their owners); repeatable."),
        only_stuck: bool = typer.Option(False, "--only-stuck", help="Only stuck objects and their blocking chains."),
        owners_only: bool = typer.Option(False, "--owners-only",
                                         help="Only ownerReferences: leave out the blocking graph's links and actors."),
        from_snapshot: Optional[str] = typer.Option(None, "--from-snapshot", metavar="FILE",
                                                    help="Draw from a kfin snapshot instead of a live cluster."),
        refresh: bool = typer.Option(False, "--refresh", help="Rediscover the API instead of using the cache."),
        kubeconfig: KubeconfigOpt = None, context: ContextOpt = None, namespace: NamespaceOpt = None,
        output: OutputOpt = None, request_timeout: TimeoutOpt = None):
    """The owner/dependent graph (ownerReferences), and what blocks what.

    `namespace NAME` draws every object of a namespace; `KIND NAME` one object's owners up to the roots
    and dependents down to the leaves. -o tree (default), json, dot, mermaid or graphml.

    Examples:

      kfin graph namespace shop --only-stuck

      kfin graph deploy/web -n shop

      kfin graph namespace shop -o mermaid > shop.mmd
    """
    from kfin.commands.graph import graph

    options = merged(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output,
                     request_timeout=request_timeout)
    raise typer.Exit(int(graph(options, target=target, depth=depth, kinds=list(kind or []), only_stuck=only_stuck,
                               from_snapshot=from_snapshot, refresh=refresh, owners_only=owners_only)))


@app.command("remove")
def remove_command(
        ctx: typer.Context,
        kind: Optional[str] = typer.Argument(None, metavar="KIND", autocompletion=completion.kinds,
                                             help="pvc, pv, ns, or any kind or plural."),
        name: Optional[str] = typer.Argument(None, metavar="NAME", autocompletion=completion.names),
        finalizer: Optional[list[str]] = typer.Option(
            None, "--finalizer", metavar="NAME",
            help="Finalizer to remove (repeatable; globs allowed). Default: those ORPHANED, or WAITING on a "
                 "controller that is down."),
        confirm: bool = typer.Option(False, "--confirm", help="Apply the change. Without it kfin only shows the plan."),
        force: bool = typer.Option(False, "--force", help="Remove even a HOLDING finalizer (read the risk first)."),
        allow_live: bool = typer.Option(False, "--allow-live", help="Allow objects that are not being deleted."),
        server_dry_run: bool = typer.Option(False, "--server-dry-run",
                                            help="Send the change with dryRun=All: validated, never persisted."),
        all_stuck: bool = typer.Option(False, "--all-stuck", help="Every stuck object in -n NS (or -A)."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before a bulk removal."),
        wait: bool = typer.Option(False, "--wait", help="After removing, follow the deletion until the object is gone."),
        timeout: str = typer.Option("5m", "--timeout", metavar="DURATION", help="With --wait: how long to wait."),
        recreate_namespace: bool = typer.Option(False, "--recreate-namespace",
                                                help="For an object left in a namespace that was forced away: "
                                                     "create that namespace again first (recorded)."),
        node_lost_after: str = typer.Option("5m", "--node-lost-after", metavar="DURATION",
                                            help="Force-delete a Pod in graceful deletion only when its node is gone "
                                                 "or has not reported for this long."),
        audit_log: Optional[str] = typer.Option(None, "--audit-log", metavar="PATH",
                                                help="Audit log file (default ~/.local/state/kfin/audit.jsonl)."),
        refresh: bool = typer.Option(False, "--refresh", help="Rediscover the API instead of using the cache."),
        kubeconfig: KubeconfigOpt = None, context: ContextOpt = None, namespace: NamespaceOpt = None,
        all_namespaces: AllNamespacesOpt = None, request_timeout: TimeoutOpt = None):
    """Remove finalizers that block a deletion: guarded, race-safe, recorded.

    Dry run unless --confirm. A HOLDING finalizer is refused with its safe fix unless --force.
    Every applied change is appended to the audit log (kfin audit).

    Examples:

      kfin remove databases.acme.io orders -n team-a

      kfin remove databases.acme.io orders -n team-a --confirm

      kfin remove -n team-a --all-stuck --finalizer 'acme.io/*' --confirm
    """
    from kfin.commands.remove import remove

    options = merged(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace,
                     all_namespaces=all_namespaces, request_timeout=request_timeout)
    raise typer.Exit(int(remove(options, kind=kind, name=name, patterns=list(finalizer or []), confirm=confirm,
                                force=force, allow_live=allow_live, server_dry_run=server_dry_run,
                                audit_log=audit_log, refresh=refresh, all_stuck=all_stuck, yes=yes,
                                wait=wait, timeout=timeout, node_lost_after=node_lost_after,
                                recreate_namespace=recreate_namespace)))


@app.command("wait")
def wait_command(
        ctx: typer.Context,
        kind: str = typer.Argument(..., metavar="KIND", autocompletion=completion.kinds,
                                   help="pvc, pv, ns, pod, or any kind or plural."),
        name: str = typer.Argument(..., metavar="NAME", autocompletion=completion.names),
        timeout: str = typer.Option("5m", "--timeout", metavar="DURATION", help="How long to wait (30s, 5m, 1h)."),
        kubeconfig: KubeconfigOpt = None, context: ContextOpt = None, namespace: NamespaceOpt = None,
        request_timeout: TimeoutOpt = None):
    """Follow a deletion until the object is gone (a watch), showing what remains.

    Exit 0 once it is gone; exit 1 after --timeout, naming what still holds it.

    Example: kfin wait ns team-a --timeout 10m
    """
    from kfin.commands.wait import wait

    check_kind(kind)
    check_name(name)
    options = merged(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace,
                     request_timeout=request_timeout)
    raise typer.Exit(int(wait(options, kind=kind, name=name, timeout=timeout)))


@app.command("serve")
def serve_command(
        ctx: typer.Context,
        listen: str = typer.Option(":9847", "--listen", metavar="ADDR",
                                   help="Where to serve /metrics, /healthz and /readyz (HOST:PORT or :PORT)."),
        interval: str = typer.Option("60s", "--interval", metavar="DURATION", help="Time between scans (30s, 5m)."),
        max_info_series: MaxInfoSeriesOpt = 500,
        concurrency: ConcurrencyOpt = 16, chunk_size: ChunkSizeOpt = 500,
        kubeconfig: KubeconfigOpt = None, context: ContextOpt = None, namespace: NamespaceOpt = None,
        request_timeout: TimeoutOpt = None):
    """Scan periodically (read-only) and serve the result to Prometheus.

    Uses the in-cluster service account when run in a Pod, else the kubeconfig. Scans the whole cluster
    unless -n is given. The last good result is served while a scan fails (see kfin_result_age_seconds).

    Example: kfin serve --listen :9847 --interval 60s
    """
    from kfin.commands.serve import serve

    options = merged(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace,
                     request_timeout=request_timeout)
    raise typer.Exit(int(serve(options, listen=listen, interval=interval, max_info_series=max_info_series,
                               concurrency=concurrency, chunk_size=chunk_size)))


@app.command("audit")
def audit_command(
        ctx: typer.Context,
        audit_log: Optional[str] = typer.Option(None, "--audit-log", metavar="PATH", help="Audit log file to read."),
        output: OutputOpt = None):
    """List the finalizer removals kfin applied, from its audit log.

    Example: kfin audit -o json
    """
    from kfin.commands.remove import show_audit

    raise typer.Exit(int(show_audit(merged(ctx, output=output), audit_log)))


@app.command("snapshot")
def snapshot_command(
        ctx: typer.Context,
        file: str = typer.Option(..., "--file", "-f", metavar="FILE", help="Where to write the snapshot (- for stdout)."),
        refresh: bool = typer.Option(False, "--refresh", help="Rediscover the API instead of using the cache."),
        concurrency: ConcurrencyOpt = 16, chunk_size: ChunkSizeOpt = 500,
        kubeconfig: KubeconfigOpt = None, context: ContextOpt = None, namespace: NamespaceOpt = None,
        all_namespaces: AllNamespacesOpt = None, request_timeout: TimeoutOpt = None):
    """Save what kfin's commands need into one JSON file, to read later with --from-snapshot.

    Metadata of every object; for the few kinds explanations need (namespaces, volumes, pods, RBAC,
    APIServices, CRDs) only the fields they use. Never Secret data.

    Example: kfin snapshot -A -f cluster.json
    """
    from kfin.commands.stuck import snapshot

    options = merged(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace,
                     all_namespaces=all_namespaces, request_timeout=request_timeout)
    raise typer.Exit(int(snapshot(options, file=file, refresh=refresh, concurrency=concurrency,
                                  chunk_size=chunk_size)))


def _prog_name() -> str:
    return "kubectl kfin" if os.path.basename(sys.argv[0]).startswith("kubectl-kfin") else "kfin"


def main(argv: list[str] | None = None) -> None:
    """Run kfin; every failure becomes one line on stderr and a documented exit code (README.md)."""
    from kfin.util.gcpause import paused_gc
    from kfin.util.text import QuietPipe, one_line

    stdout = sys.stdout
    sys.stdout = QuietPipe(stdout)  # a reader that goes away (| head) must not cost the warnings
    try:
        with paused_gc(freeze_after=False):  # a command is one short batch of work: see kfin/gcpause.py
            code = app(args=argv, prog_name=_prog_name(), standalone_mode=False)
        if code == ExitCode.INTERRUPTED:  # Typer turns Ctrl-C into Exit(130)
            raise KeyboardInterrupt
    except KfinError as error:
        _fail(one_line(error.message), error.exit_code)
    except click_exceptions().NoArgsIsHelpError as error:
        print(error.ctx.get_help())
        code = ExitCode.USAGE
    except click_exceptions().UsageError as error:  # Click's own: unknown flag, bad value, missing argument
        hint = f" (see {error.ctx.command_path} --help)" if error.ctx else ""
        _fail(one_line(error.format_message()) + hint, ExitCode.USAGE)
    except (KeyboardInterrupt, typer.Abort):  # Typer's Abort: Ctrl-C or end of input at a prompt
        _fail("interrupted", ExitCode.INTERRUPTED)
    except Exception as error:  # a bug: say so in one line, with the way to see more
        if os.environ.get("KFIN_DEBUG"):
            raise
        _fail(f"internal error in kfin: {one_line(repr(error))} (run with KFIN_DEBUG=1 for the traceback, "
              "and please report it)", ExitCode.INTERNAL)
    finally:
        sys.stdout = stdout
    sys.exit(int(code or 0))


def click_exceptions():
    """Click's exception classes: Typer 0.29 and newer carry their own copy of Click."""
    try:
        from click import exceptions
    except ImportError:
        from typer._click import exceptions
    return exceptions


def _fail(message: str, code: int) -> None:
    """One line on stderr, then exit. Threads still waiting on the network (a scan interrupted by
    Ctrl-C) are not waited for."""
    import threading

    print(f"error: {message}", file=sys.stderr)
    if code == ExitCode.INTERRUPTED and threading.active_count() > 1:
        sys.stderr.flush()
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        os._exit(int(code))
    sys.exit(int(code))
