"""kfin remove's screen: the plan for one object (what is removed, kept or refused, and why), and a record
the audit log could not take."""

from __future__ import annotations

import json
import sys
from typing import Any

from kfin.core.audit import AuditError
from kfin.core.removal import FORCE_DELETION, Plan, requests_preview
from kfin.render.terminal import say
from kfin.util.text import one_line


def print_plan(plan_: Plan) -> None:
    """Each finalizer's fate with its verdict, the risk of what is removed, and the requests to be sent."""
    o = plan_.obj
    say(
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
        say(f"  {action:8} {f.finalizer or '(' + f.family + ')'}  [{f.verdict.value}] {f.condition}", hanging=11)
        if c.selected and not c.refused:
            say(f"           risk: {f.risk}", hanging=11)
        if c.refused:
            say(f"           refused: {c.refused}", hanging=11)
        if c.warning:
            say(f"           warning: {c.warning}", hanging=11)
    if plan_.selected and not plan_.refused and not plan_.blocked:
        for line in requests_preview(plan_):
            say(f"  {line}", hanging=4)


def unrecorded(entry: dict[str, Any], error: AuditError) -> None:
    """The audit log could not take a record after a write: the record goes to stderr instead of being lost."""
    say(f"error: {one_line(error.message)}; the record of what was applied follows:", err=True)
    print(json.dumps(entry, separators=(",", ":")), file=sys.stderr)
