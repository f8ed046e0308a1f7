"""Run the kfin command line in-process, as a user would type it, and capture what it prints."""

import contextlib
import io
from dataclasses import dataclass

from kfin.commands.app import main
from tests import properties


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


class Terminal(io.StringIO):
    """Captured output that says it is a terminal, so that kfin renders as it would for a person."""

    def isatty(self):
        return True


def kfin(*args: str, tty: bool = False, stderr: io.StringIO | None = None) -> Result:
    """`tty`: stdout is a terminal (with the width of $COLUMNS). `stderr`: where it writes its stderr as it runs
    (for a test that acts once kfin has said something). The first reading command of a scenario against its
    cluster checks the properties every scenario keeps first (tests/properties.py)."""
    scenario = properties.scenario_of(args)
    if scenario is not None:
        properties.check(scenario, kfin)
    out, err = (Terminal() if tty else io.StringIO()), (io.StringIO() if stderr is None else stderr)
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    return Result(code, out.getvalue(), err.getvalue())
