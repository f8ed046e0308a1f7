"""kfin preflight's screen: what the deletion would leave stuck, then the order that avoids it."""

from __future__ import annotations

from datetime import UTC, datetime

from kfin.core.explain.survival import Stuck
from kfin.core.predict.preflight import Preflight
from kfin.render.steps import print_plan
from kfin.render.tables import plain_table
from kfin.render.terminal import Console
from kfin.util.durations import format_age
from kfin.util.text import counted


def preflight_report(
    console: Console, result: Preflight, doer: str = "kfin preflight deletes nothing; the steps are yours"
) -> None:
    """`doer`: who takes the plan's steps (kfin delete sends its last one, the DELETE, itself)."""
    t = result.target
    count = counted(len(result.deleted), "object")
    since = t.deletion_requested_at
    if since is not None:  # said first: the plan follows this deletion, it does not ask for another
        read_at = result.observed_at or datetime.now(UTC)  # a snapshot's answer is as old as the snapshot
        when = f"{since:%Y-%m-%dT%H:%M:%SZ}, {format_age((read_at - since).total_seconds())} ago"
        console.say(
            f"{t.ref} is already being deleted (since {when}): kfin preflight predicts what its deletion leaves."
        )
        console.say(f"Its deletion deletes {count}.")
    else:
        console.say(f"Deleting {t.ref} would delete {count}.")
    if result.unknown:
        console.say(f"kfin could not read {', '.join(result.unknown)}: what is there is not predicted.", err=True)
    if result.clean:
        console.say(
            "Nothing would be left stuck, but deleting it now is not safe:"
            if result.warnings
            else "Nothing would be left stuck: the deletion should complete by itself."
        )
    for warning in result.warnings:  # part of the prediction: the plan below avoids it
        console.say(f"  warning: {warning}")
    if result.stuck:
        objects = len({(s.obj.type.group, s.obj.type.resource, s.obj.namespace, s.obj.name) for s in result.stuck})
        console.say(f"{counted(objects, 'object')} would be left Terminating:")
        _table(console, result.stuck)
    if result.orphaned:
        objects = len({(s.obj.type.group, s.obj.type.resource, s.obj.namespace, s.obj.name) for s in result.orphaned})
        console.say(f"{counted(objects, 'object')} would be left without the controller that removes its finalizer:")
        _table(console, result.orphaned)
    console.say("")
    console.say(f"Plan, in order ({doer}):")
    print_plan(console, result.plan)  # each command alone on its line, never wrapped, so that it pastes whole


def _table(console: Console, rows: list[Stuck]) -> None:
    plain_table(
        console,
        ["NAMESPACE", "KIND", "NAME", "FINALIZER", "VERDICT", "WHY"],
        [
            [
                s.obj.namespace or "-",
                s.obj.type.kind_display,
                s.obj.name,
                s.finalizer or "-",
                s.verdict + doubt(s),
                s.reason,
            ]
            for s in rows
        ],
    )


def doubt(s: Stuck) -> str:
    """How a verdict that is not certain is marked: a race its controller may win, or a rule only the server's
    answer decides (a policy kfin could not evaluate)."""
    return "" if s.certain else " (race)" if s.race else " (may)"
