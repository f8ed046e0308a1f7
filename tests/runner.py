"""Run the kfin command line in-process, as a user would type it, and capture what it prints."""

import contextlib
import io
from dataclasses import dataclass

from kfin.cli import main


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


def kfin(*args: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    return Result(code, out.getvalue(), err.getvalue())
