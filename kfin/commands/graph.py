"""`kfin graph namespace NAME` and `kfin graph KIND NAME`: owners and what blocks what, drawn or exported."""

from __future__ import annotations

from typing import Annotated

import typer

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.resources import KindLookup
from kfin.commands.flags import (
    ContextOpt,
    KindsOpt,
    KubeconfigOpt,
    NamespaceOpt,
    NoDryRunOpt,
    OutputOpt,
    RefreshOpt,
    TimeoutOpt,
    check_output,
    completer,
    merged,
    snapshot_flag,
    subject,
)
from kfin.commands.outputs import OUTPUTS
from kfin.core.explain import owners, subject_graph
from kfin.core.read.partial import split
from kfin.errors import ExitCode, UsageError
from kfin.names import check_kind
from kfin.render import graph as drawn

GRAPH_PNG = "kfin graph ... -o png > graph.png"
SubjectArg = Annotated[
    list[str],
    typer.Argument(metavar="KIND NAME | KIND/NAME | namespace NAME", autocompletion=completer("subjects")),
]


def parse_subject(words: list[str]) -> tuple[str, str]:
    """KIND NAME, KIND/NAME or namespace NAME, checked."""
    if not 1 <= len(words) <= 2:
        raise UsageError("kfin graph needs KIND NAME, KIND/NAME or namespace NAME")
    return subject(words[0], words[1] if len(words) == 2 else None, "graph")


def graph(
    ctx: typer.Context,
    target: SubjectArg,
    depth: int | None = typer.Option(None, "--depth", min=1, help="Draw the tree this many levels deep."),
    kind: KindsOpt = None,
    only_stuck: bool = typer.Option(False, "--only-stuck", help="Only stuck objects and their blocking chains."),
    owners_only: bool = typer.Option(
        False, "--owners-only", help="Only ownerReferences: leave out the blocking graph's links and actors."
    ),
    from_snapshot: str | None = snapshot_flag("Draw from a kfin snapshot instead of a live cluster."),
    refresh: RefreshOpt = False,
    no_dry_run: NoDryRunOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    output: OutputOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """Owners, dependents and what blocks what, as a tree or picture.

    `namespace NAME` draws every object of a namespace; `KIND NAME` one object's owners up to the roots
    and dependents down to the leaves. -o tree (default), json, dot, mermaid or graphml.

    Examples:

      kfin graph namespace shop --only-stuck

      kfin graph deploy/web -n shop

      kfin graph namespace shop -o mermaid > shop.mmd
    """
    options = merged(
        ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output, request_timeout=request_timeout
    )
    console = options.console
    fmt = check_output(options, OUTPUTS["graph"])
    if fmt in drawn.PICTURES:
        drawn.check_picture(fmt, GRAPH_PNG, console.stdout_isatty)
    for text in kind or []:
        check_kind(text)
    subject_kind, subject_name = parse_subject(target)
    scope = options.scope(from_snapshot=from_snapshot, refresh=refresh, dry_run=not no_dry_run)
    subject = subject_graph.build(scope, subject_kind, subject_name, owners_only)
    facts = subject.facts
    kinds = None
    if kind:
        lookup = KindLookup(facts.inventory.resources + builtin_resources())
        kinds = {lookup.find(k).kind.lower() for k in kind}
    shown = owners.restrict(subject.graph, kinds, only_stuck)
    shown.graph.update(drawn.heading(subject.title, facts.inventory.context, facts.inventory.observed_at))
    bearing, unrelated = split(facts.inventory.failures, subject.subject)
    console.warn_failures(bearing, unrelated=unrelated, listed=options.trace > 0)
    if fmt == "tree":
        drawn.tree_screen(console, shown, depth, subject.title, subject.focus)
    elif fmt in drawn.PICTURES:
        drawn.write_picture(console, drawn.to_dot(shown), fmt, GRAPH_PNG)
    else:
        exported = drawn.export(shown, fmt)
        too_large = drawn.mermaid_too_large(exported, shown) if fmt == "mermaid" else None
        if too_large:
            console.warn(too_large)
        console.write(exported)
    if bearing:
        raise typer.Exit(ExitCode.PARTIAL)
