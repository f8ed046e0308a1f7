"""Running one command as a child process: wall time, peak RSS and CPU time (of it and everything it started)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = Path(__file__).resolve().parent / "rusage_child.py"


@dataclass
class ProcessRun:
    wall: float  # seconds, measured by the launcher around the command alone
    peak_rss_mb: float  # the largest resident set of the command or of any process it waited for
    exit_code: int
    cpu: float = 0.0  # user and system seconds, of it and of the processes it waited for


def run(command: list[str] | str, env: dict, stdout: Path | None = None, stderr: Path | None = None) -> ProcessRun:
    """`command` as a list runs directly; as a string, through sh (the kubectl recipe is a pipeline)."""
    argv = ["--shell", command] if isinstance(command, str) else list(command)
    if not isinstance(command, str) and not os.path.isabs(argv[0]):
        raise ValueError(f"give {argv[0]} as an absolute path")
    read_end, write_end = os.pipe()
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL
    err = open(stderr, "wb") if stderr else subprocess.DEVNULL
    try:
        # The launcher reports through the pipe; stdin closed, as for a command in a script.
        child = subprocess.Popen([sys.executable, "-S", str(LAUNCHER), str(write_end), *argv], env=env,
                                 stdout=out, stderr=err, stdin=subprocess.DEVNULL, pass_fds=(write_end,))
        os.close(write_end)
        with os.fdopen(read_end) as report:
            text = report.read()
        child.wait()
    finally:
        for handle in (out, err):
            if handle is not subprocess.DEVNULL:
                handle.close()
    if child.returncode != 0 or not text:
        raise RuntimeError(f"the measuring launcher failed (exit {child.returncode}) for {command!r}")
    figures = json.loads(text)
    return ProcessRun(figures["wall"], figures["peak_rss_kb"] / 1024, figures["exit_code"], figures["cpu"])


def repeated(command: list[str], env: dict, times: int) -> list[float]:
    """Wall times of `times` fresh starts (after one untimed start that warms the OS file cache)."""
    run(command, env)
    return [run(command, env).wall for _ in range(times)]
