"""kfin preflight -f / helm on a terminal: the teardown step by step in the tool's order, what each step deletes and
leaves stuck (and why, a race said as such), then the safe order as commands to paste."""

from __future__ import annotations

import sys

from kfin.core.teardown import Deletion, Teardown
from kfin.render.steps import print_lines, step_lines, wrapped
from kfin.render.tables import plain_table
from kfin.render.terminal import columns_setting, console, say


def teardown_report(result: Teardown) -> None:
    missing = sum(d.obj is None for d in result.steps)
    say(f"{result.tool}: {len(result.steps)} DELETE{'s' if len(result.steps) != 1 else ''} in this order")
    if result.tool.startswith("helm"):
        say("(a run of objects of one kind is deleted concurrently: its batch; Helm waits for none to be gone)")
    else:
        say("(one after the other; kubectl waits for them to be gone only after the last)")
    if missing:
        were = "is" if missing == 1 else "are"
        say(f"{missing} of them {were} not in the cluster (not found): nothing to delete there.")
    for hook in result.hooks:
        events = ", ".join(e for e in hook["events"] if e.endswith("-delete"))
        say(
            f"Hook {hook['kind']} {hook['name']} ({events}) runs "
            + ("before the first DELETE" if "pre-delete" in events else "after the last DELETE")
            + ": kfin does not run it; whatever it cleans up is not predicted here."
        )
    for m in result.kept:
        policy = m.annotations.get("helm.sh/resource-policy")
        say(f"Kept (helm.sh/resource-policy: {policy}): {m.kind}/{m.namespace + '/' if m.namespace else ''}{m.name}")
    for crd in result.chart_crds:
        say(f"Never deleted by Helm: the chart's {crd} (its CRDs and their custom resources stay)")
    if result.unknown:
        say(f"kfin could not read {', '.join(result.unknown)}: what is there is not predicted.", err=True)
    plain_table(
        ["STEP", "KIND", "NAMESPACE", "NAME", "DELETES", "LEAVES STUCK"],
        [_row(d, sum(e.batch == d.batch for e in result.steps) > 1) for d in result.steps],
    )
    say("")
    stuck = [(d, s) for d in result.steps for s in d.stuck + d.rejected]
    if stuck:
        say(f"{len(stuck)} would be left Terminating or not deleted:")
        plain_table(
            ["STEP", "NAMESPACE", "KIND", "NAME", "FINALIZER", "VERDICT", "WHY"],
            [
                [
                    str(d.number),
                    s.obj.namespace or "-",
                    s.obj.type.kind_display,
                    s.obj.name,
                    s.finalizer or "-",
                    ("REJECTED" if s in d.rejected else s.verdict) + ("" if s.certain else " (race)"),
                    s.reason,
                ]
                for d, s in stuck
            ],
        )
    if result.orphaned:
        say(f"{len(result.orphaned)} left in place without the controller that removes its finalizer:")
        plain_table(
            ["NAMESPACE", "KIND", "NAME", "FINALIZER", "WHY"],
            [
                [s.obj.namespace or "-", s.obj.type.kind_display, s.obj.name, s.finalizer, s.reason]
                for s in result.orphaned
            ],
        )
    if result.clean:
        say("Nothing would be left stuck: the teardown should complete by itself.")
    say("")
    say("Safe order (kfin preflight deletes nothing; the steps are yours):")
    target = console(piped_width=columns_setting() or 120)
    lines = []
    for number, step in enumerate(result.plan, 1):
        lines += step_lines(number, step.actions, target.width) + wrapped(step.why, "     ", "     ", target.width)
    print_lines(lines, target)
    sys.stdout.flush()


def _row(d: Deletion, shared_batch: bool) -> list[str]:
    m = d.manifest
    step = f"{d.number}" + (f" (batch {d.batch})" if d.batch and shared_batch else "")
    if d.obj is None:
        deletes = "not found"
    elif d.note:
        deletes = d.note.replace("already deleted with ", "already, with ")
    elif d.rejected:
        deletes = "rejected: stays"
    else:
        deletes = "itself" + (f" and {len(d.cascade)} more" if d.cascade else "")
    leaves = ", ".join(dict.fromkeys(s.obj.name for s in d.stuck)) or "-"
    return [step, m.kind, (d.obj.namespace if d.obj else m.namespace) or "-", m.name, deletes, leaves]
