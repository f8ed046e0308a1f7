"""`kfin catalog`: the catalog of ecosystem finalizers kfin knows (shipped, catalog.d, --catalog), and
`kfin catalog check FILE` to validate a file of your own."""

from __future__ import annotations

from pathlib import Path

import typer

from kfin.commands.flags import OutputOpt, check_output, merged
from kfin.commands.outputs import OUTPUTS
from kfin.core import catalog as finalizer_catalog
from kfin.render import data
from kfin.render.tables import catalog_table
from kfin.render.terminal import say

catalog = typer.Typer(invoke_without_command=True, rich_markup_mode=None)


@catalog.callback()
def listing(ctx: typer.Context, output: OutputOpt = None) -> None:
    """What operators' finalizers mean; check a catalog of your own.

    Entries come from kfin's own catalog, then $XDG_CONFIG_HOME/kfin/catalog.d/*.yaml, then --catalog FILE (the
    later win, by name).

    Examples:

      kfin catalog

      kfin catalog -o yaml

      kfin catalog check my-operators.yaml
    """
    if ctx.invoked_subcommand is not None:
        return
    options = merged(ctx, output=output)
    fmt = check_output(options, OUTPUTS["catalog"])
    entries = options.catalog.entries()
    if fmt == "table":
        catalog_table(entries)
    else:
        data.dump(
            {"apiVersion": "kfin.dev/v1", "kind": "FinalizerCatalog", "entries": [e.to_dict() for e in entries]}, fmt
        )


@catalog.command("check")
def check(file: str = typer.Argument(..., metavar="FILE", help="A catalog file to validate.")) -> None:
    """Validate a catalog file against kfin's schema (exit 2 with the file and field when it is not valid).

    Example: kfin catalog check ~/.config/kfin/catalog.d/acme.yaml
    """
    entries = finalizer_catalog.read_file(Path(file))
    say(
        f"{file}: valid, {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} "
        f"({', '.join(e.name for e in entries)})"
    )
