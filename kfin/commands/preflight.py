"""`kfin preflight KIND NAME`: what deleting it would leave stuck, and the order of deletions that avoids it.
`kfin preflight -f FILE|DIR|-` and `kfin preflight helm RELEASE`: the same for a teardown of many objects, in the
order kubectl or Helm deletes them."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand

from kfin.commands.flags import (
    ContextOpt,
    KubeconfigOpt,
    NameArg,
    NamespaceOpt,
    NoDryRunOpt,
    OptionalKindArg,
    OutputOpt,
    RefreshOpt,
    TimeoutOpt,
    check_output,
    merged,
    snapshot_flag,
    subject,
)
from kfin.commands.outputs import OUTPUTS
from kfin.core.predict import helm, manifests
from kfin.core.predict.preflight import target_of
from kfin.core.predict.teardown import Teardown, from_release, kubectl_delete, preflight_of
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.core.read.subject import facts_on_demand
from kfin.errors import ExitCode, NotFoundError, UsageError
from kfin.render import data
from kfin.render import graph as drawn
from kfin.render.preflight import preflight_report
from kfin.render.teardown import teardown_dot, teardown_report
from kfin.render.terminal import Console

# Without a version (`--helm` alone, or `kfin preflight helm RELEASE`), the Helm that uninstalls is taken to be the
# current major version, 4 (4.0.0, November 2025: what a new install of the helm CLI is), said on stderr with what
# Helm 3's order would change; `--helm 3` for a Helm 3 CLI.
ASSUMED_HELM = 4
TEARDOWN_PNG = "kfin preflight -f ... -o png > teardown.png"


class PreflightCommand(TyperCommand):
    """`--helm` may go without its value: Typer's parser wants one, so a `--helm` not followed by 3 or 4 reaches it
    as `--helm=` (the version unsaid)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        out = list(args)
        for at, word in enumerate(out):
            if word == "--":
                break
            if word == "--helm" and (at + 1 == len(out) or out[at + 1] not in ("3", "4")):
                out[at] = "--helm="
        parsed: list[str] = super().parse_args(ctx, out)
        return parsed


COMMAND_CLASS = PreflightCommand  # kfin.commands.app builds the command of this class


def preflight(
    ctx: typer.Context,
    kind: OptionalKindArg = None,
    name: NameArg = None,
    filename: list[str] | None = typer.Option(
        None,
        "-f",
        "--filename",
        metavar="FILE|DIR|-",
        help="The manifests a `kubectl delete -f` would delete (repeatable; - for stdin): predict that teardown.",
    ),
    recursive: bool = typer.Option(False, "-R", "--recursive", help="With -f DIR: its subdirectories too."),
    helm_version: str | None = typer.Option(
        None,
        "--helm",
        metavar="[3|4]",
        help="With -f: Helm's uninstall order instead of kubectl's file order; with `kfin preflight helm`, the Helm "
        "that uninstalls it. Helm 4 deletes webhook configurations first. Alone, or not given with `helm`: Helm 4 "
        "is assumed (said on stderr, with what Helm 3's order would change).",
    ),
    cascade: str = typer.Option(
        "background",
        "--cascade",
        metavar="background|foreground|orphan",
        help="The propagation policy of the DELETE (with -f or helm: of the teardown's DELETEs), as kubectl's and "
        "Helm's --cascade (orphan: what an object owns stays, a Deployment's Pods keep running, once the garbage "
        "collector has released it).",
    ),
    exit_code: bool = typer.Option(False, "--exit-code", help="Exit 1 when something would be left stuck."),
    refresh: RefreshOpt = False,
    no_dry_run: NoDryRunOpt = False,
    from_snapshot: str | None = snapshot_flag("Predict from a kfin snapshot instead of a live cluster."),
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    output: OutputOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """What a deletion would leave stuck, and the safe order.

    For a namespace, a CRD, a node or any object with dependents: every object the deletion would delete, each
    finalizer's controller and whether it survives the deletion (it lives in the namespace being deleted, it is
    not running, none is found), the gates that would stop it (unavailable APIServices, conversion webhooks,
    admission webhooks and policies failing closed, a drain a PodDisruptionBudget stops), then the safe order.

    A teardown: with -f, the objects a `kubectl delete -f` of the manifests deletes, in kubectl's order (files
    in order, a directory's files in lexical order, documents and List items in order), matched against the
    cluster; with `helm RELEASE`, the release's manifest (one named GET of its latest record
    sh.helm.release.v1.RELEASE.vN, Secret or ConfigMap) in Helm's uninstall order, without the objects
    Helm keeps (helm.sh/resource-policy: keep), its delete hooks named. Each step says what it deletes with
    it and what it leaves stuck, given the steps before (an operator deleted before the custom resources only
    it finalizes; a webhook's Service deleted before its configuration); then the safe order. kustomize:
    `kubectl kustomize DIR | kfin preflight -f -`. -o dot, svg or png (Graphviz's dot draws svg and png) draw
    a teardown: each step's object, what it leaves stuck in the verdict's colour, an edge from the step whose
    deletion strands or rejects an object to it with the reason, and the safe order; only with -f or helm.

    Examples:

      kfin preflight namespace team-a

      kfin preflight -f deploy/ -R --exit-code

      kfin preflight helm my-operator -n operators

      kfin preflight -f deploy/ -R -o svg > teardown.svg

      helm get manifest my-operator -n operators | kfin preflight -f - -n operators --helm

      kfin preflight crd databases.acme.io -o json

      kfin preflight node ip-10-0-1-7 --exit-code
    """
    options = merged(
        ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output, request_timeout=request_timeout
    )
    console = options.console
    fmt = check_output(options, OUTPUTS["preflight"])
    if fmt in drawn.PICTURES:
        drawn.check_picture(fmt, TEARDOWN_PNG, console.stdout_isatty)
    scope = options.scope(from_snapshot=from_snapshot, refresh=refresh, dry_run=not no_dry_run)
    if helm_version not in (None, "", "3", "4"):
        raise UsageError("--helm takes 3 or 4, or nothing (Helm 4)")
    helm_major = None if helm_version is None else int(helm_version or 0)
    if cascade not in ("background", "foreground", "orphan"):
        raise UsageError("--cascade takes background, foreground or orphan")
    if filename or kind == "helm":
        teardown, facts = _teardown(console, scope, kind, name, filename or [], recursive, helm_major, cascade)
        console.warn_failures(facts.inventory.failures, listed=options.trace > 0)
        if fmt == "table":
            teardown_report(console, teardown)
        elif fmt in drawn.PICTURES + ("dot",):
            info = facts.inventory
            text = teardown_dot(
                teardown, drawn.heading(f"teardown: {teardown.command}", info.context, info.observed_at)
            )
            if fmt == "dot":
                console.write(text)
            else:
                drawn.write_picture(console, text, fmt, TEARDOWN_PNG)
        else:
            data.dump(teardown.to_dict(), fmt, console.stdout)
        if exit_code and not teardown.clean:
            raise typer.Exit(ExitCode.FOUND)
        if facts.inventory.failures:
            raise typer.Exit(ExitCode.PARTIAL)
        return
    if helm_version is not None or recursive:
        raise UsageError("--helm and -R go with -f (or helm RELEASE)")
    if fmt in drawn.PICTURES + ("dot",):
        raise UsageError(f"-o {fmt} draws a teardown: it goes with -f or helm RELEASE (kfin graph draws one object)")
    kind, name = subject(kind, name, "preflight")
    target, facts = target_of(scope, kind, name)
    result = preflight_of(facts, target, cascade)  # kfin guard's answer too: its warnings point here
    console.warn_failures(
        facts.inventory.failures, listed=options.trace > 0
    )  # a deletion reaches every type: each failure bears on it
    if fmt == "table":
        preflight_report(console, result)
    else:
        data.dump(result.to_dict(), fmt, console.stdout)
    if exit_code and not result.clean:
        raise typer.Exit(ExitCode.FOUND)
    if facts.inventory.failures:
        raise typer.Exit(ExitCode.PARTIAL)


def _teardown(
    console: Console,
    scope: Scope,
    kind: str | None,
    name: str | None,
    files: list[str],
    recursive: bool,
    major: int | None,
    cascade: str,
) -> tuple[Teardown, Facts]:
    if kind == "helm" and (files or not name):
        raise UsageError("kfin preflight helm needs RELEASE, and no -f")
    if kind not in (None, "helm"):
        raise UsageError("-f takes no KIND NAME")
    if kind == "helm" and name:
        helm.check_release_name(name)
    objects = manifests.read(files, recursive) if files else []  # bad input is said before anything is read
    if files and not objects:
        raise UsageError("no objects in the manifests")
    facts = facts_on_demand(scope)
    namespace = scope.namespace or facts.inventory.namespace or "default"
    policy = "" if cascade == "background" else f" --cascade={cascade}"
    if kind == "helm" and name:
        found = helm.latest_record(facts, name, namespace)
        if found is None:
            raise NotFoundError(
                f'Helm release "{name}" not found in namespace "{namespace}" (no sh.helm.release.v1.{name}.vN)'
            )
        rtype, record = found
        console.say(f"kfin reads the release record: GET {rtype.kind} {namespace}/{record}", err=True)
        release = helm.read_release(facts, rtype, namespace, record)
        command = f"helm uninstall {release.name} -n {release.namespace}{policy}"
        return _uninstall(console, facts, release, major, command, cascade), facts
    where = f" -n {scope.namespace}" if scope.namespace else ""
    if major is not None:
        release = helm.Release(name or "", namespace, 0, "", objects)
        return _uninstall(console, facts, release, major, f"helm uninstall RELEASE{where}{policy}", cascade), facts
    return kubectl_delete(facts, objects, files, recursive, scope.namespace, cascade), facts


def _uninstall(
    console: Console, facts: Facts, release: helm.Release, major: int | None, command: str, cascade: str
) -> Teardown:
    """Helm's uninstall of `release` by Helm `major`; 0 or None: unsaid, ASSUMED_HELM, and what Helm 3's order
    would change, said on stderr (the installed Helm is not known here)."""
    if major:
        return from_release(facts, release, major, command, cascade)
    result = from_release(facts, release, ASSUMED_HELM, command, cascade)
    other = from_release(facts, release, 3, command, cascade)

    def count(t: Teardown) -> int:
        return len(t.stuck) + len(t.orphaned) + sum(len(d.rejected) for d in t.steps)

    change = (
        f"; Helm 3's order (webhook configurations last) would leave {count(other)} stuck or rejected, not "
        f"{count(result)}"
        if count(other) != count(result)
        else "; Helm 3's order would leave the same"
    )
    console.say(f"kfin assumes Helm {ASSUMED_HELM}'s uninstall order (--helm 3 for Helm 3's){change}", err=True)
    return result
