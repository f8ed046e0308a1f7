"""kfin remove's screen: the plan for one object (what is removed, kept or refused, and why), --all-stuck's table
of plans, and a record the audit log could not take."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kfin.core.remove.apply import Applied
from kfin.core.remove.audit import AuditError
from kfin.core.remove.plan import FORCE_DELETION, Plan, requests_preview
from kfin.errors import ExitCode, UsageError
from kfin.render.tables import plain_table
from kfin.render.terminal import Console
from kfin.util.text import counted, one_line

if TYPE_CHECKING:
    from rich.console import Console as RichConsole


class Mode(enum.Enum):
    """What kfin remove does with its plan: one of three, never two at once."""

    PLAN = "plan"  # shown only: nothing is sent (the default)
    SERVER_DRY_RUN = "--server-dry-run"  # sent with dryRun=All: validated by the API server, never persisted
    CONFIRM = "--confirm"  # applied and recorded

    @classmethod
    def of(cls, confirm: bool, server_dry_run: bool) -> Mode:
        """The mode the flags ask for; both at once is a usage error (which run was meant is not for kfin to
        guess: a dry run taken for the change, or the change taken for a dry run)."""
        if confirm and server_dry_run:
            raise UsageError(
                "--confirm and --server-dry-run ask for two different runs: --server-dry-run has the API server "
                "validate the change (nothing is changed), --confirm applies it; give one"
            )
        return cls.CONFIRM if confirm else cls.SERVER_DRY_RUN if server_dry_run else cls.PLAN

    @property
    def sends(self) -> bool:
        """Whether a write goes to the API server (a dry run is one too)."""
        return self is not Mode.PLAN


def asked_to_change(console: Console, question: str) -> bool:
    """Whether the user answers yes to `question` (on stdout, as input() asks), whatever stdin is: a pipe or a
    script that says nothing (or no) changes nothing."""
    console.stdout.write(question)
    console.stdout.flush()
    try:
        answer = console.stdin.readline()
    except OSError:  # none to read
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def change_question(runnable: list[Plan], looked_in: str, context: str) -> str:
    """--all-stuck's one question before it changes anything: how many objects, the Pods force-deleted, where."""
    forced = sum(any(f.family == FORCE_DELETION for f in p.selected) for p in runnable)
    return (
        f"Change {counted(len(runnable), 'object')}"
        + (f" (force-deleting {counted(forced, 'Pod')})" if forced else "")
        + f" in {looked_in} of context {context}? [y/N] "
    )


@dataclass
class Tally:
    """--all-stuck's removals as they end, each said on stderr, and the exit code they add up to: 9 when any
    failed or was not recorded, else 10 when any plan was refused, else 0."""

    console: Console
    runnable: int  # plans that are sent
    refused: int  # plans refused before anything was sent
    done: int = 0
    failed: int = 0
    unrecorded: int = 0
    started: int = 0  # the number of the last one started

    def count(self, applied: Applied) -> None:
        """One removal's end, said with its number."""
        self.started += 1
        if applied.record is not None and not said_unrecorded(self.console, applied):
            self.unrecorded += 1
        if applied.outcome.result == "interrupted":
            return  # said by the caller as the interruption's one error line
        self.done, self.failed = self.done + applied.ok, self.failed + (not applied.ok)
        p, outcome = applied.plan, applied.outcome
        self.console.say(f"[{self.started}/{self.runnable}] {outcome.result}: {p.obj.ref}: {outcome.message}", err=True)

    def so_far(self) -> str:
        """What an interruption leaves: done, failed, and not started."""
        return f"done {self.done}, failed {self.failed}, not started {self.runnable - self.started}"

    def end(self) -> int:
        """The summary line (an `error:` one when anything failed, as a single removal's failure ends) and the
        exit code."""
        summary = f"done {self.done}, refused {self.refused}, failed {self.failed}" + (
            f", {self.unrecorded} not recorded in the audit log (their records are above)" if self.unrecorded else ""
        )
        if self.failed or self.unrecorded:
            self.console.error(summary + (" (each failure is named above)" if self.failed else ""))
            return ExitCode.API
        self.console.note(summary)
        return ExitCode.REFUSED if self.refused else ExitCode.OK


def said_outcome(console: Console, applied: Applied, mode: Mode) -> int:
    """One object's removal (or server dry run) as it ended, and its exit code: 0 when done as asked and, after a
    write, recorded; else 9, with an `error:` line as every error has."""
    outcome, ref = applied.outcome, applied.plan.obj.ref
    if mode is Mode.SERVER_DRY_RUN:
        if applied.ok:
            console.say(f"server dry run: {outcome.message}")
            return ExitCode.OK
        # accepted, but the answer shows the removal would not hold
        console.error(f"server dry run: {outcome.result}: {ref}: {outcome.message}")
        return ExitCode.API
    if applied.ok:
        console.say(f"{outcome.result}: {ref}: {outcome.message}")
    else:  # a removal that did not happen (or may not have) is an error, said as every error is
        console.error(f"{outcome.result}: {ref}: {outcome.message}")
    if applied.recorded:
        console.note(f"recorded in {applied.log}")
    return ExitCode.OK if applied.ok and applied.recorded else ExitCode.API


def said_unrecorded(console: Console, applied: Applied) -> bool:
    """Whether the audit log took the record; if it could not after a write, the record goes to stderr instead
    of being lost."""
    if applied.record is not None and applied.unrecorded is not None:
        unrecorded(console, applied.record, applied.unrecorded)
    return applied.recorded


def print_plan(console: Console, plan_: Plan) -> None:
    """Each finalizer's fate with its verdict, the risk of what is removed, and the requests to be sent."""
    o = plan_.obj
    console.say(
        f"{o.ref} ({'Terminating' if o.terminating else 'not being deleted'}), "
        f"finalizers: {', '.join(o.finalizers + o.spec_finalizers) or 'none'}",
        hanging=2,
    )
    # on a terminal, each line wrapped under its own text, so that the plan reads as a list
    for c in plan_.choices:
        f = c.finding
        action = "refused" if c.selected and c.refused else ("remove" if c.selected else "keep")
        if f.family == FORCE_DELETION and action == "remove":
            action = "force-delete"
        console.say(
            f"  {action:8} {f.finalizer or '(' + f.family + ')'}  [{f.verdict.value}] {f.condition}", hanging=11
        )
        if c.selected and not c.refused:
            console.say(f"           risk: {f.risk}", hanging=11)
        if c.refused:
            console.say(f"           refused: {c.refused}", hanging=11)
        if c.warning:
            console.say(f"           warning: {c.warning}", hanging=11)
    if plan_.selected and not plan_.refused and not plan_.blocked:
        for line in requests_preview(plan_):
            console.say(f"  {line}", hanging=4)


def unrecorded(console: Console, entry: dict[str, Any], error: AuditError) -> None:
    """The audit log could not take a record after a write: the record goes to stderr instead of being lost."""
    console.say(f"error: {one_line(error.message)}; the record of what was applied follows:", err=True)
    console.note(json.dumps(entry, separators=(",", ":")))


def removal_table(
    console: Console, plans: Iterable[Plan], out: RichConsole | None = None, show_namespace: bool = True
) -> None:
    """kfin remove --all-stuck's plan: a line per finalizer, with its verdict and what kfin will do. As kubectl, no
    NAMESPACE column when one namespace was read (`show_namespace` False)."""
    rows = []
    for p in plans:
        o = p.obj
        where = [o.namespace or "-"] if show_namespace else []
        if p.refused:
            rows.append([*where, o.type.kind_display, o.name, "-", "-", f"refused: {p.refused}"])
            continue
        for c in p.choices:
            f = c.finding
            forced = f.family == FORCE_DELETION
            if not c.selected:
                action = "keep"
            elif c.refused:
                action = f"refused: {c.refused}"
            elif forced:  # no finalizer: the Pod goes with a DELETE of grace period 0, whose risk is said
                action = f"force-delete: {c.warning or 'risk: ' + f.risk}"
            elif f.infrastructure and c.warning:  # --force took what guards infrastructure outside the cluster
                action = f"remove: {c.warning}"
            else:
                action = "remove"
            name = f"({f.family})" if forced else f.finalizer
            rows.append([*where, o.type.kind_display, o.name, name, f.verdict.value, action])
    headers = ["NAMESPACE"] if show_namespace else []
    plain_table(console, [*headers, "KIND", "NAME", "FINALIZER", "VERDICT", "ACTION"], rows, out)
