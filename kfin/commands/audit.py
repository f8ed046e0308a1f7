"""`kfin audit`: the finalizer removals kfin applied, from its audit log."""

from __future__ import annotations

from pathlib import Path

import typer

from kfin.commands.flags import OutputOpt, check_output, merged
from kfin.commands.outputs import OUTPUTS
from kfin.core.remove import audit as audit_log_file
from kfin.errors import ExitCode
from kfin.render import data
from kfin.render.tables import audit_table


def audit(
    ctx: typer.Context,
    audit_log: str | None = typer.Option(None, "--audit-log", metavar="PATH", help="Audit log file to read."),
    output: OutputOpt = None,
) -> None:
    """The finalizer removals kfin applied, from its audit log.

    Example: kfin audit -o json
    """
    options = merged(ctx, output=output)
    console = options.console
    fmt = check_output(options, OUTPUTS["audit"])
    path = Path(audit_log) if audit_log else audit_log_file.default_path()
    log = audit_log_file.read(path, named=bool(audit_log))
    for number, why in log.bad_lines:
        console.warn(f"{path} line {number} is not an audit record ({why}): skipped")
    if fmt != "table":
        data.dump(log.records, fmt, console.stdout)
    elif log.records:
        audit_table(console, log.records)
    else:
        console.note(f"No removals recorded in {path}.")
    if log.bad_lines:
        raise typer.Exit(ExitCode.PARTIAL)
