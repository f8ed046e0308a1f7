"""`kfin catalog`: the catalog of ecosystem finalizers kfin knows (shipped, catalog.d, --catalog), `kfin catalog
NAME` for one entry (by its name or a finalizer it covers), and `kfin catalog check FILE` to validate a file of
your own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from kfin.commands.flags import OutputOpt, check_output, merged
from kfin.commands.outputs import OUTPUTS
from kfin.core.explain.causes.registry import CATALOG as BUILT_IN
from kfin.core.explain.causes.registry import family
from kfin.core.read import catalog as finalizer_catalog
from kfin.core.read.catalog import CatalogEntry
from kfin.errors import NotFoundError
from kfin.model import kind_display
from kfin.names import nearest
from kfin.render import data
from kfin.render.tables import catalog_entry_lines, catalog_table
from kfin.util.globs import WILDCARDS

ENTRY = "entry"  # the subcommand a NAME runs: `kfin catalog NAME` is `kfin catalog entry NAME`


class CatalogGroup(TyperGroup):
    """kfin catalog's subcommands, and any other word as an entry's NAME."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            return super().resolve_command(ctx, [ENTRY, *args])
        return super().resolve_command(ctx, args)


catalog = typer.Typer(
    invoke_without_command=True,
    rich_markup_mode=None,
    cls=CatalogGroup,
    subcommand_metavar="[NAME | COMMAND [ARGS]...]",
)


@catalog.callback()
def listing(ctx: typer.Context, output: OutputOpt = None) -> None:
    """What operators' finalizers mean; check a catalog of your own.

    NAME shows one entry: an entry's name, or a finalizer as objects carry it (the entry whose patterns match
    it; a finalizer of Kubernetes' own, as kfin knows it).

    Entries come from kfin's own catalog, then $XDG_CONFIG_HOME/kfin/catalog.d/*.yaml, then --catalog FILE (the
    later win, by name).

    Examples:

      kfin catalog

      kfin catalog -o yaml

      kfin catalog argocd-application     (one entry: by its name, or a finalizer it covers)

      kfin catalog kubernetes.io/pvc-protection -o json

      kfin catalog check my-operators.yaml
    """
    if ctx.invoked_subcommand is not None:
        return
    options = merged(ctx, output=output)
    console = options.console
    fmt = check_output(options, OUTPUTS["catalog"])
    entries = options.catalog.entries()
    if fmt == "table":
        catalog_table(console, entries)
    else:
        data.dump(
            {"apiVersion": "kfin.dev/v1", "kind": "FinalizerCatalog", "entries": [e.to_dict() for e in entries]},
            fmt,
            console.stdout,
        )


@catalog.command("check")
def check(
    ctx: typer.Context, file: str = typer.Argument(..., metavar="FILE", help="A catalog file to validate.")
) -> None:
    """Validate a catalog file against kfin's schema (exit 2 with the file and field when it is not valid).

    Example: kfin catalog check ~/.config/kfin/catalog.d/acme.yaml
    """
    entries = finalizer_catalog.read_file(Path(file))
    merged(ctx).console.say(
        f"{file}: valid, {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} "
        f"({', '.join(e.name for e in entries)})"
    )


@catalog.command(ENTRY, hidden=True)
def entry(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="An entry's name, or a finalizer (as objects carry it)."),
    output: OutputOpt = None,
) -> None:
    """One entry of the catalog, by its name or a finalizer it covers (its patterns match it, as explanations
    match them); a finalizer of Kubernetes' own is shown as kfin knows it.

    Examples:

      kfin catalog argocd-application

      kfin catalog resources-finalizer.argocd.argoproj.io/foreground -o yaml
    """
    given = ctx.parent.params.get("output") if ctx.parent else None  # kfin catalog -o json NAME
    options = merged(ctx, output=output or given)
    console = options.console
    fmt = check_output(options, OUTPUTS["catalog"])
    entries = options.catalog.entries()
    known = next((e for e in entries if e.name == name), None)
    found = family(name, options.catalog) if known is None else None
    if found is not None and found.entry is not None:
        known = found.entry
    if known is not None:
        if fmt == "table":
            catalog_entry_lines(console, _entry_fields(known))
        else:
            data.dump(
                {"apiVersion": "kfin.dev/v1", "kind": "FinalizerCatalog", "entries": [known.to_dict()]},
                fmt,
                console.stdout,
            )
        return
    if found is not None and found.name not in ("custom", "unknown"):  # one of kfin's own causes
        document = {"apiVersion": "kfin.dev/v1", "kind": "BuiltInFinalizer", "finalizer": name, "cause": found.name,
                    "protects": found.protects, "removedBy": found.owner}  # fmt: skip
        if fmt == "table":
            catalog_entry_lines(
                console,
                [
                    ("Finalizer", name),
                    ("Cause", f"{found.name} (built into kfin, not a catalog entry)"),
                    ("Protects", found.protects),
                    ("Removed by", found.owner),
                ],
            )
        else:
            data.dump(document, fmt, console.stdout)
        return
    names = [e.name for e in entries] + [f for e in entries for f in e.finalizers]
    names += [known_entry.pattern for known_entry, _ in BUILT_IN]
    close = nearest(name, [n for n in names if WILDCARDS.isdisjoint(n)])
    raise NotFoundError(
        f'no catalog entry "{name}": neither an entry\'s name nor a finalizer one covers'
        + (f" (did you mean {close}?)" if close else " (kfin catalog lists them)")
    )


def _entry_fields(e: CatalogEntry) -> list[tuple[str, str]]:
    kinds = ", ".join(kind_display(kind, group) for group, kind in e.kinds)
    return [
        ("Name", e.name),
        ("Project", e.project),
        ("Finalizers", ", ".join(e.finalizers)),
        ("Kinds", kinds),
        ("Controller", e.controller.name),
        ("Namespaces", ", ".join(e.controller.namespaces)),
        ("Protects", e.protects),
        ("On deletion", e.on_deletion),
        ("Risk", e.risk),
        ("Fix", e.fix),
        ("Guards outside", e.infrastructure),
        ("Checked against", e.checked_against),
        ("Docs", e.docs),
        ("Source", e.source),
    ]
