"""`kfin delete KIND NAME`: the prediction, a confirmation, the DELETE, then what holds the object, live, until it
is gone. kfin sends the DELETE and nothing else: a finalizer's removal is a `kfin remove` step for the user."""

from __future__ import annotations

from datetime import UTC, datetime

import typer

from kfin.api.connection import Kube
from kfin.commands.flags import (
    ContextOpt,
    KubeconfigOpt,
    NameArg,
    NamespaceOpt,
    OptionalKindArg,
    OutputOpt,
    TimeoutFlag,
    TimeoutOpt,
    check_output,
    duration_seconds,
    merged,
    subject,
    wait_seconds,
)
from kfin.commands.outputs import OUTPUTS
from kfin.core.predict import manifests
from kfin.core.predict.preflight import target_of
from kfin.core.predict.teardown import kubectl_delete, preflight_of
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.core.read.subject import MissingObjectError, facts_on_demand, live_target
from kfin.core.remove.deleting import CASCADES, Holder, follow_deletion, holder, named, send_delete, targets_of
from kfin.errors import ExitCode, InterruptedByUserError, NotFoundError, UsageError
from kfin.model import KubeObject, format_time
from kfin.names import check_kind
from kfin.render import data, explanation
from kfin.render.preflight import preflight_report
from kfin.render.teardown import teardown_report
from kfin.render.terminal import Console
from kfin.util.durations import format_age


def delete(
    ctx: typer.Context,
    kind: OptionalKindArg = None,
    name: NameArg = None,
    filename: list[str] | None = typer.Option(
        None,
        "-f",
        "--filename",
        metavar="FILE|DIR|-",
        help="Instead of KIND NAME: the objects of these manifests, as `kubectl delete -f` deletes them (repeatable; - "
        "for stdin, with --yes), predicted as kfin preflight -f does.",
    ),
    recursive: bool = typer.Option(False, "-R", "--recursive", help="With -f DIR: its subdirectories too."),
    selector: str | None = typer.Option(
        None,
        "--selector",
        "-l",
        metavar="SELECTOR",
        help="Instead of NAME: every object of KIND whose labels match (kubectl's -l), each predicted and followed.",
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", "--confirm", help="Delete without asking (needed when stdin is no terminal)."
    ),
    dry_run: str = typer.Option(
        "none",
        "--dry-run",
        metavar="none|server",
        help="server: send the DELETE with dryRun=All (the API server validates it, admission included; nothing "
        "is deleted) and say what it answered.",
    ),
    cascade: str = typer.Option(
        "background",
        "--cascade",
        metavar="background|foreground|orphan",
        help="The propagation policy of the DELETE, as kubectl's --cascade (predicted with it too).",
    ),
    timeout: TimeoutFlag = "5m",
    interval: str = typer.Option(
        "10s",
        "--interval",
        metavar="DURATION",
        help="How often an answer that read what is not watched (Pods' nodes, Events) is worked out again.",
    ),
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    output: OutputOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """Delete, then show live what holds the object until it goes.

    First kfin's prediction (what kfin preflight says of this deletion), then a question (on a terminal; --yes
    skips it, and without a terminal it is needed), then the DELETE. Then, on each change the watches see, what
    holds the object now: its verdict and blocker, the root cause and the next step of kfin explain's plan.
    Exit 0 once it is gone; exit 1 after --timeout, with kfin explain's answer. Ctrl-C stops the watching and
    leaves the deletion in place (exit 130). kfin never removes a finalizer here: a `kfin remove` step of the
    plan is yours to run. -o json: one JSON line per answer, and a last one.

    Examples:

      kfin delete ns team-a

      kfin delete databases.acme.io orders -n team-a --yes --timeout 2m

      kfin delete pvc data-postgres-0 -n shop --dry-run=server

      kfin delete pods -l app=ledger -n billing --yes

      kfin delete -f deploy/ -R --yes
    """
    if filename:
        if kind is not None or selector is not None:
            raise UsageError("kfin delete takes KIND NAME, KIND -l SELECTOR or -f FILE: only one of them")
        if "-" in filename and not yes:
            raise UsageError("-f - reads the manifests from stdin, where kfin delete would ask: pass --yes")
    elif recursive:
        raise UsageError("-R goes with -f DIR")
    elif kind is None:
        raise UsageError("kfin delete needs KIND NAME, KIND -l SELECTOR or -f FILE")
    elif selector is not None:
        if name is not None or "/" in kind:
            raise UsageError("kfin delete takes KIND NAME, or KIND -l SELECTOR: not both")
        kind = check_kind(kind)
    else:
        kind, name = subject(kind, name, "delete")
    options = merged(
        ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output, request_timeout=request_timeout
    )
    console = options.console
    fmt = check_output(options, OUTPUTS["delete"])
    if dry_run not in ("none", "server"):
        raise UsageError(
            f"--dry-run takes server or none, not {dry_run} (kfin's prediction, printed first, is the client's answer)"
        )
    if cascade not in CASCADES:
        raise UsageError("--cascade takes background, foreground or orphan")
    seconds = wait_seconds(timeout)
    every = duration_seconds(interval, "--interval")
    if every < 0.2:
        raise UsageError("--interval must be at least 0.2s")
    server_dry_run = dry_run == "server"
    if not (yes or server_dry_run or console.stdin_isatty):  # before anything is read: a script learns it at once
        raise UsageError(
            "kfin delete asks before it deletes, and stdin is no terminal: pass --yes to delete without asking "
            "(or --dry-run=server to see the API server's answer)"
        )
    scope = options.scope(dry_run=True)
    if filename:
        objects, facts = _from_manifests(console, scope, filename, recursive, cascade, fmt)
    else:
        assert kind is not None  # checked above
        if selector is not None:
            objects, facts = targets_of(scope, kind, selector)
            if not objects:
                console.say(f"No {kind} matches -l {selector}: nothing was deleted.", err=True)
                return
        else:
            assert name is not None  # subject() gave it
            obj, facts = target_of(scope, kind, name)
            objects = [obj]
        console.warn_failures(facts.inventory.failures)
        for obj in objects:
            prediction = preflight_of(facts, obj, cascade)
            if fmt == "json":
                data.json_line({"event": "prediction", "prediction": prediction.to_dict()}, console.stdout)
            else:
                preflight_report(
                    console, prediction, "the steps are yours; kfin delete sends only the DELETE of this object"
                )
    kube = facts.kube
    assert kube is not None  # the facts of a live cluster
    policy = "" if cascade == "background" else f" --cascade={cascade}"
    if server_dry_run:
        for obj in objects:
            _server_dry_run(console, kube, obj, cascade, policy, fmt)
        return
    asked = objects[0].ref if len(objects) == 1 else f"{len(objects)} objects ({', '.join(o.ref for o in objects)})"
    if not yes:
        console.stdout.flush()  # the prediction is read before the question
        console.say(f"Delete {asked}{policy} in context {kube.context}? [y/N] ", err=True)
        console.stderr.flush()
        reply = console.stdin.readline()
        if reply.strip().lower() not in ("y", "yes"):
            console.say("Nothing was deleted.", err=True)
            raise typer.Exit(ExitCode.REFUSED)
    sent: list[KubeObject] = []
    try:
        for obj in objects:
            try:
                send_delete(kube, obj, cascade, dry_run=False)
            except NotFoundError:  # deleted meanwhile (with an object deleted before it): nothing to follow
                console.say(f"{obj.ref} is already gone", err=True)
                continue
            sent.append(obj)
            if fmt == "json":
                data.json_line({"event": "deleted", "object": named(obj)}, console.stdout)
            console.say(f"deleted {obj.ref}{policy}", err=True)
        console.say(
            f"following {'it' if len(sent) == 1 else 'them'} until gone (up to {format_age(seconds)}; Ctrl-C stops "
            "following and leaves the deletion in place)",
            err=True,
        )

        def said(answer: Holder) -> None:
            if fmt == "json":
                data.json_line(
                    {"event": "holding", "at": format_time(datetime.now(UTC)), **answer.to_dict()}, console.stdout
                )
            else:
                _holding(console, answer)

        left = follow_deletion(scope, sent, kube, seconds, every, said)
        raise typer.Exit(_ended(console, scope, sent, left, seconds, fmt))
    except KeyboardInterrupt:
        if not sent:
            raise InterruptedByUserError("interrupted: nothing was deleted") from None
        them = "it" if len(sent) == 1 else "them"
        raise InterruptedByUserError(
            f"interrupted: the deletion of {', '.join(o.ref for o in sent)} stays in place (kfin stopped following "
            f"{them} and removed nothing); follow {them} again with "
            + "; ".join(f"kfin wait {_wait_words(o)}" for o in sent)
        ) from None


def _from_manifests(
    console: Console, scope: Scope, files: list[str], recursive: bool, cascade: str, fmt: str
) -> tuple[list[KubeObject], Facts]:
    """The objects of the manifests found in the cluster, in `kubectl delete -f`'s order, once kfin preflight -f's
    prediction of that teardown is printed; those not found are said (kubectl would say NotFound)."""
    found = manifests.read(files, recursive)  # bad input is said before anything is read
    if not found:
        raise UsageError("no objects in the manifests")
    facts = facts_on_demand(scope)
    teardown = kubectl_delete(facts, found, files, recursive, scope.namespace, cascade)
    console.warn_failures(facts.inventory.failures)
    if fmt == "json":
        data.json_line({"event": "prediction", "teardown": teardown.to_dict()}, console.stdout)
    else:
        teardown_report(console, teardown)
    objects: dict[str, KubeObject] = {}
    for step in teardown.steps:
        if step.obj is None:
            console.say(f"{step.ref} not found: nothing to delete", err=True)
        else:
            objects.setdefault(step.obj.uid, step.obj)
    if not objects:
        raise NotFoundError("none of the manifests' objects is in the cluster: nothing to delete")
    return list(objects.values()), facts


def _server_dry_run(console: Console, kube: Kube, obj: KubeObject, cascade: str, policy: str, fmt: str) -> None:
    """The DELETE sent with dryRun=All only, and what the API server answered: the finalizers it would wait for."""
    answer = send_delete(kube, obj, cascade, dry_run=True)
    meta = (answer.get("metadata") or {}) if isinstance(answer, dict) else {}
    left = meta.get("finalizers") or []
    after = f"; it would stay Terminating until these finalizers go: {', '.join(left)}" if left else ""
    if fmt == "json":
        data.json_line({"event": "dry-run", "object": named(obj), "finalizers": left}, console.stdout)
    console.say(
        f"server dry run: the API server accepts the DELETE of {obj.ref}{policy} (dryRun=All): nothing was deleted"
        + after,
        err=True,
    )


def _ended(
    console: Console, scope: Scope, sent: list[KubeObject], left: list[KubeObject], seconds: float, fmt: str
) -> int:
    """0 once every one is gone; else 1, with kfin explain's answer for each one still there, read again."""
    held = 0
    for obj in sent:
        now, facts = None, None
        if obj in left:
            try:
                now, facts = live_target(scope, obj.type.qualified, obj.name)
            except MissingObjectError:  # it went at the last moment
                pass
        if now is None or facts is None or now.uid != obj.uid:
            if fmt == "json":
                data.json_line({"event": "gone", "object": named(obj)}, console.stdout)
            console.say(f"{obj.ref} is gone", err=fmt == "json")
            continue
        held += 1
        answer = holder(now, facts)
        found, chain, events = answer.explanation, answer.chain, facts.warnings_about(now)
        console.say(
            f"{obj.ref} is still there after {format_age(seconds)}; what holds it, as kfin explain says:", err=True
        )
        if fmt == "json":
            document = explanation.document(found, facts, events, chain, complete=not facts.inventory.failures)
            data.json_line({"event": "timeout", "explanation": document}, console.stdout)
        else:
            explanation.explained(console, found, events, chain, facts.inventory.observed_at)
    return ExitCode.FOUND if held else ExitCode.OK


def _holding(console: Console, answer: Holder) -> None:
    """One answer, in a few lines: when, what holds it (verdict and blocker), its root cause, the next step."""
    stamp = datetime.now().strftime("%H:%M:%S")
    verdict = f"{answer.verdict}: " if answer.verdict else ""
    console.say(f"{stamp}  {answer.obj.ref}: {verdict}{answer.blocker}", hanging=10)
    if answer.root_cause:
        console.say(f"          root cause: {answer.root_cause}", hanging=10)
    step = answer.next_step
    if step:
        shown = step.get("command") or step.get("note") or ""
        console.say(f"          next: {shown}", hanging=10)
    console.stdout.flush()


def _wait_words(obj: KubeObject) -> str:
    where = f" -n {obj.namespace}" if obj.namespace else ""
    return f"{obj.type.qualified} {obj.name}{where} --uid {obj.uid}"
