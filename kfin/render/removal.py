"""kfin remove's screen: the plan for one object (what is removed, kept or refused, and why), --all-stuck's table
of plans, and a record the audit log could not take."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kfin.core.audit import AuditError
from kfin.core.removal import FORCE_DELETION, Plan, requests_preview
from kfin.render.tables import plain_table
from kfin.render.terminal import say
from kfin.util.text import one_line

if TYPE_CHECKING:
    from rich.console import Console


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


def removal_table(plans: Iterable[Plan], out: Console | None = None, show_namespace: bool = True) -> None:
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
    plain_table([*headers, "KIND", "NAME", "FINALIZER", "VERDICT", "ACTION"], rows, out)
