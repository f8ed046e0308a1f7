"""`kfin snapshot`: save what kfin's commands need into one JSON file, for --from-snapshot."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from kfin.api import inventory
from kfin.commands.flags import (
    AllNamespacesOpt,
    ChunkSizeOpt,
    ConcurrencyOpt,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    RefreshOpt,
    TimeoutOpt,
    merged,
)
from kfin.core.read.contexts import gather
from kfin.errors import ExitCode, UsageError
from kfin.util.text import counted


def snapshot(
    ctx: typer.Context,
    file: str = typer.Option(..., "--file", "-f", metavar="FILE", help="Where to write the snapshot (- for stdout)."),
    refresh: RefreshOpt = False,
    concurrency: ConcurrencyOpt = 16,
    chunk_size: ChunkSizeOpt = 500,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    all_namespaces: AllNamespacesOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """Save the cluster in one file, to read with --from-snapshot.

    Metadata of every object; for the few kinds explanations need (namespaces, volumes, pods, RBAC,
    APIServices, CRDs) only the fields they use. Never Secret data.

    Example: kfin snapshot -A -f cluster.json
    """
    options = merged(
        ctx,
        kubeconfig=kubeconfig,
        context=context,
        namespace=namespace,
        all_namespaces=all_namespaces,
        request_timeout=request_timeout,
    )
    console = options.console
    check_writable(file)
    scope = options.scope(refresh=refresh, concurrency=concurrency, chunk_size=chunk_size)
    [facts] = gather(scope, full=inventory.SNAPSHOT_FULL, progress=console.progress_bar)
    inv = facts.inventory
    inventory.save_snapshot(inv, file)
    console.warn_failures(inv.failures, listed=options.trace > 0)
    kinds = len({o.type for o in inv.objects})
    where = "the whole cluster" if inv.namespace is None else f"namespace {inv.namespace}"
    console.say(
        f"saved {counted(len(inv.objects), 'object')} of {counted(kinds, 'resource type')} in {where} to {file}"
        + ("" if inv.complete else f" ({len(inv.failures)} could not be read)"),
        err=True,
    )
    if not inv.complete:
        raise typer.Exit(ExitCode.PARTIAL)


def check_writable(file: str) -> None:
    """A snapshot's file can be written where it is named: asked before the scan, which on a large cluster takes
    minutes, rather than after it."""
    if file == "-":
        return
    path = Path(file)
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"cannot write the snapshot to {file}: it is a directory")
    if not folder.is_dir():
        raise UsageError(f"cannot write the snapshot to {file}: directory {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"cannot write the snapshot to {file}: permission denied")
