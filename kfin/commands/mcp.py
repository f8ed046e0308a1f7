"""`kfin mcp`: a Model Context Protocol server over stdio, for assistants and agents (kfin.mcp.server)."""

from __future__ import annotations

from pathlib import Path

import typer

from kfin.commands.flags import (
    AuditLogOpt,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    TimeoutOpt,
    merged,
)
from kfin.errors import UsageError
from kfin.mcp import removal, server
from kfin.serve.exporter import parse_listen


def mcp(
    ctx: typer.Context,
    allow_writes: bool = typer.Option(
        False,
        "--allow-writes",
        help="Let apply_removal write: only a plan_removal's digest, for the object still as planned. Default: "
        "read-only.",
    ),
    audit_log: AuditLogOpt = None,
    listen: str | None = typer.Option(
        None,
        "--listen",
        metavar="ADDR",
        help="Serve streamable HTTP at HOST:PORT (or :PORT), path /mcp, instead of stdio: for in-cluster use, "
        "read-only, behind what authenticates its clients.",
    ),
    from_snapshot: str | None = typer.Option(
        None,
        "--from-snapshot",
        metavar="FILE",
        help="Answer from a kfin snapshot instead of a live cluster (a file: standard input carries the protocol).",
    ),
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """kfin for assistants and agents (MCP); removal only by proof.

    Tools: stuck, explain, graph, preflight, catalog_lookup, wait (as the commands' -o json), plan_removal and
    apply_removal (with --allow-writes, only the digest plan_removal gave, for the object still as planned);
    the resource kfin://stuck/root-causes; prompts for "why is namespace X stuck" and "is it safe to delete Y".
    Needs the MCP SDK: pip install 'kfin[mcp]'. An MCP host starts it; it speaks JSON-RPC on stdin and stdout.

    Examples:

      kfin mcp --context prod

      kfin mcp --from-snapshot cluster.json

      kfin mcp --context staging --allow-writes

      kfin mcp --listen :8080     (in a Pod: streamable HTTP at /mcp, read-only)
    """
    if listen is not None and allow_writes:
        raise UsageError(
            "--allow-writes is for stdio only: over HTTP kfin mcp authenticates no client, so it stays read-only"
        )
    address = parse_listen(listen) if listen is not None else None
    options = merged(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, request_timeout=request_timeout)
    before = [f"--kubeconfig={options.kubeconfig}"] if options.kubeconfig else []
    before += [f"--context={options.context}"] if options.context else []
    before += [f"--namespace={options.namespace}"] if options.namespace else []
    before += [f"--request-timeout={options.request_timeout:g}s"] if options.request_timeout else []
    before += [f"--catalog={path}" for path in options.catalog.files]
    before += [f"--v={options.trace}"] if options.trace else []  # its -v: the commands it runs trace too
    settings = server.ServerSettings(
        options.scope(from_snapshot=from_snapshot),
        tuple(before),
        removal.Writes(allow_writes, Path(audit_log) if audit_log else None),
        listen=address,
    )
    server.serve(settings, server.Commands(ctx.find_root().command))
