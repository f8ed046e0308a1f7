"""`kfin wait KIND NAME`: follow a deletion until the object is gone (also `kfin remove --wait`)."""

from __future__ import annotations

import typer

from kfin.api.connection import Kube
from kfin.api.watch import wait_gone
from kfin.commands.flags import (
    ContextOpt,
    KindArg,
    KubeconfigOpt,
    NameArg,
    NamespaceOpt,
    TimeoutFlag,
    TimeoutOpt,
    merged,
    snapshot_flag,
    subject,
    wait_seconds,
)
from kfin.core.explain.blocking import follow, root_summary
from kfin.core.explain.causes import blocker_line, explain_cached, main_finding
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.core.read.subject import MissingObjectError, live_target, load_target
from kfin.errors import ExitCode, NotFoundError
from kfin.model import KubeObject, format_time
from kfin.render.steps import print_lines, step_lines
from kfin.render.terminal import Console
from kfin.util.durations import format_age


def follow_to_end(
    console: Console, scope: Scope, kind: str, name: str, obj: KubeObject, kube: Kube, timeout: float
) -> int:
    """0 once the object is gone; 1 after `timeout`, naming what still holds it."""
    console.say(f"waiting for {obj.ref} to go (up to {format_age(timeout)})", err=True)
    gone = wait_gone(
        kube,
        obj.type,
        obj.namespace or None,
        obj.name,
        obj.uid,
        timeout,
        lambda state: console.say(f"  {obj.ref}: {state}", err=True),
    )
    if gone:
        console.say(f"{obj.ref} is gone")
        return ExitCode.OK
    console.say(f"{obj.ref} is still there after {format_age(timeout)}: {holder(scope, kind, name)}", err=True)
    return ExitCode.FOUND


def holder(scope: Scope, kind: str, name: str) -> str:
    """What holds it now, read again: its blocker and root cause."""
    try:
        obj, facts = live_target(scope, kind, name)
    except NotFoundError:
        return "it went away just now"
    line = blocker_line(explain_cached(obj, facts))
    root = root_summary(follow(obj, facts)) if obj.terminating else None
    return f"{line}; {root}" if root else line


def wait(
    ctx: typer.Context,
    kind: KindArg,
    name: NameArg = None,
    timeout: TimeoutFlag = "5m",
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    request_timeout: TimeoutOpt = None,
    uid: str = typer.Option(
        "",
        "--uid",
        metavar="UID",
        help="Wait for the object of this uid: one already gone (or replaced by another of the same name) is "
        "gone, exit 0. Without it, an object kfin cannot find is an error (exit 7), never 'gone'.",
    ),
    from_snapshot: str | None = snapshot_flag(
        "Say what kfin wait would wait for in a kfin snapshot (what holds the object, what must happen for it to "
        "go), without waiting: exit 1, as when it is still there after --timeout."
    ),
) -> None:
    """Follow a deletion until the object is gone.

    Exit 0 once it is gone; exit 1 after --timeout, naming what still holds it; exit 7 when there is no
    such object to wait for (a typo is never 'gone': pass --uid for one that may already be). With
    --from-snapshot it does not wait: it says what it would wait for, and exits 1 (not gone).

    Examples:

      kfin wait ns team-a --timeout 10m

      kfin wait ns team-a --from-snapshot cluster.json
    """
    kind, name = subject(kind, name, "wait")
    options = merged(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, request_timeout=request_timeout)
    console = options.console
    seconds = wait_seconds(timeout)
    scope = options.scope(from_snapshot=from_snapshot)
    if from_snapshot is not None:
        raise typer.Exit(would_wait(console, scope, kind, name, uid, seconds))
    try:
        obj, facts = live_target(scope, kind, name)
    except MissingObjectError as missing:  # an unknown kind is not caught: a typo, exit 7 with did-you-mean
        if uid:  # it existed: the uid says so
            console.say(f"{missing.ref} is gone")
            return
        where = f': namespace "{missing.namespace}" does not exist' if missing.namespace_absent() else ""
        raise NotFoundError(
            f"{missing.message}{where}: nothing to wait for (a typo?). To wait for an object that may already "
            f"be gone, name it by its uid: --uid UID"
        ) from None
    if uid and obj.uid != uid:
        console.say(f"{obj.ref} of uid {uid} is gone (the one there now is another object: uid {obj.uid})")
        return
    if not obj.terminating:
        console.warn(f"{obj.ref} is not being deleted: waiting anyway")
    assert facts.kube is not None  # live_target's facts are live
    raise typer.Exit(follow_to_end(console, scope, kind, name, obj, facts.kube, seconds))


def would_wait(console: Console, scope: Scope, kind: str, name: str, uid: str, timeout: float) -> int:
    """From a snapshot, which cannot change: what kfin wait would wait for, and what must happen for the object
    to go. Exit 1 (not gone, as after --timeout); 0 only when --uid names an object the snapshot shows replaced.
    An object the snapshot does not hold is an error (exit 7): a snapshot cannot tell deleted from never read."""
    obj, facts = load_target(scope, kind, name)
    taken = f"the snapshot {scope.from_snapshot} (taken {format_time(facts.inventory.observed_at)})"
    if uid and obj.uid != uid:
        console.say(f"{obj.ref} of uid {uid} is gone in {taken}: the one there is another object (uid {obj.uid})")
        return ExitCode.OK
    since = obj.deletion_requested_at
    if since is None:
        console.say(
            f"{obj.ref} is not being deleted in {taken}: nothing will make it go until it is deleted.", hanging=2
        )
    else:
        age = format_age(max(0.0, (facts.inventory.observed_at - since).total_seconds()))
        console.say(f"{obj.ref} is not gone: Terminating for {age} in {taken}.", hanging=2)
        _what_holds(console, obj, facts)
    console.say(
        f"kfin wait does not wait on a snapshot: against the cluster it would follow {obj.ref} until it is gone "
        f"(up to {format_age(timeout)}).",
        hanging=2,
    )
    return ExitCode.FOUND


def _what_holds(console: Console, obj: KubeObject, facts: Facts) -> None:
    """Its verdict and blocker, as kfin stuck shows them, then the plan: what must happen for it to go."""
    explanation = explain_cached(obj, facts)
    main = main_finding(explanation)
    chain = follow(obj, facts, ahead=True)
    root = root_summary(chain)
    line = blocker_line(explanation) + (f"; {root}" if root else "")
    console.say(f"  {main.verdict.value + ': ' if main else ''}{line}", hanging=4)
    if not chain.steps and not chain.afterwards:
        return
    console.say("It goes once:")
    target = console.rich()  # each command whole on its line, to paste; kfin's words wrap on a terminal
    print_lines(
        [line for n, step in enumerate(chain.steps, 1) for line in step_lines(n, step.actions, target.width)], target
    )
    for after in chain.afterwards:
        console.say(f"  then {after}", hanging=7)
