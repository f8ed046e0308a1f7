"""`kfin help [COMMAND]`: the help of kfin, or of one of its commands (as `kfin COMMAND --help`)."""

from __future__ import annotations

import typer

from kfin.commands.flags import merged
from kfin.errors import UsageError


def help(ctx: typer.Context, command: str | None = typer.Argument(None, help="The command to explain.")) -> None:
    """Show the help of kfin, or of one command.

    Example: kfin help stuck
    """
    console = merged(ctx).console
    root = ctx.find_root()
    group = root.command
    if command is None:
        console.write(root.get_help() + "\n")
        return
    found = group.get_command(root, command)  # type: ignore[attr-defined]
    if found is None:
        raise UsageError(f'unknown command "{command}" (kfin help lists them)')
    with found.make_context(command, [], parent=root, resilient_parsing=True) as sub:
        console.write(found.get_help(sub) + "\n")
