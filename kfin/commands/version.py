"""`kfin version` and `kfin --version`: kfin's version, the Kubernetes client's, and the API server's."""

from __future__ import annotations

import typer

from kfin import __version__
from kfin.api.connection import Kube
from kfin.commands.about import client_version
from kfin.commands.flags import ContextOpt, KubeconfigOpt, OutputOpt, TimeoutOpt, check_output, merged
from kfin.commands.outputs import OUTPUTS
from kfin.errors import KfinError
from kfin.render import data
from kfin.util.text import printable


def version(
    ctx: typer.Context,
    client: bool = typer.Option(False, "--client", help="Only kfin's own version: no kubeconfig, no server."),
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    output: OutputOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """Show kfin's version and the API server's.

    As kubectl's: kfin's own version first, so that it shows even when the server cannot be reached.

    Example: kfin version --context prod -o json
    """
    options = merged(ctx, kubeconfig=kubeconfig, context=context, output=output, request_timeout=request_timeout)
    console = options.console
    fmt = check_output(options, OUTPUTS["version"])
    facts: dict[str, str] = {"kfinVersion": __version__, "clientVersion": client_version()}
    if fmt == "table":
        console.write(f"kfin: {__version__} (kubernetes client {facts['clientVersion']})\n")
    if client:
        if fmt != "table":
            data.dump(facts, fmt, console.stdout)
        return
    try:
        kube = Kube.connect(options.target())
        server = kube.server_version()
    except KfinError:
        if fmt != "table":  # what is known, then the error and its exit code
            data.dump(facts, fmt, console.stdout)
        raise
    facts.update(
        context=kube.context,
        server=kube.shown,
        serverVersion=git_version if isinstance(git_version := server.get("gitVersion"), str) else "",
    )
    if fmt == "table":  # the server's words, and the kubeconfig's: never raw control characters on a terminal
        console.write(
            printable(f"Server: {facts['serverVersion']} at {kube.shown} (context {kube.context})", one_line=True)
            + "\n"
        )
    else:
        data.dump(facts, fmt, console.stdout)
