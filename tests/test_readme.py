"""README.md tells the truth: its first commands are the install and test commands CI runs, and the
example outputs it shows from the shipped snapshot are what kfin prints."""

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.runner import kfin

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def console_examples():
    """(command, the output shown, the exit code shown) of README's console blocks that read the shipped
    snapshot. `COLUMNS=N kfin ...` is run as on a terminal N columns wide; a following `$ echo $?` shows the
    exit code; warnings (stderr) come first, as on a terminal. `kfin ... | grep ARGS` is kfin's stdout through
    grep (not a terminal), and its exit code is kfin's, `$ echo ${PIPESTATUS[0]}` (bash's `$?` is grep's)."""
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        chunks = [c.partition("\n") for c in re.split(r"^\$ ", block, flags=re.M)[1:]]
        for at, (command, _, output) in enumerate(chunks):
            if "--from-snapshot examples/" in command:
                following = chunks[at + 1] if at + 1 < len(chunks) else None
                status = "echo ${PIPESTATUS[0]}" if " | " in command else "echo $?"
                code = int(following[2].strip()) if following and following[0].strip() == status else None
                yield command, output.rstrip("\n"), code


ANSI = re.compile(r"\x1b\[[0-9;]*m")
PLAN_COMMAND = re.compile(r" +(\d+\. +)?(kubectl|kfin) ")  # a step's command: alone on its line, indented


@pytest.mark.parametrize("command, shown, code", list(console_examples()),
                         ids=lambda v: v[:60] if isinstance(v, str) else v)
def test_readme_example_output_is_real_at_its_stated_width(command, shown, code, monkeypatch):
    """Issue 29: every example byte-checked at the width it states (README examples were 110 columns)."""
    monkeypatch.chdir(ROOT)
    args = shlex.split(command)
    width = None
    if args[0].startswith("COLUMNS="):
        width = args.pop(0).partition("=")[2]
        monkeypatch.setenv("COLUMNS", width)
        monkeypatch.setenv("NO_COLOR", "1")
    bar = "|" in args  # kfin ... | grep ARGS
    args, grep = (args[: args.index("|")], args[args.index("|") + 1:]) if bar else (args, [])
    assert args[0] == "kfin" and (not bar or grep[0] == "grep")
    result = kfin(*args[1:], tty=width is not None and not bar)
    stdout = subprocess.run(grep, input=result.stdout, capture_output=True, text=True).stdout if bar else result.stdout
    printed = ANSI.sub("", (result.stderr if shown.startswith("warning:") else "") + stdout)
    expected = [line.rstrip() for line in shown.splitlines()]
    assert [line.rstrip() for line in printed.rstrip("\n").splitlines()] == expected
    if width and not bar:  # warnings are one line each, for grep: the terminal wraps them
        # and a plan's command is printed whole however long, so that it pastes (issue 41)
        drawn = [line for line in expected if not line.startswith("warning: ") and not PLAN_COMMAND.match(line)]
        assert all(len(line) <= int(width) for line in drawn), "wider than the width it states"
    if code is not None:
        assert result.code == code


def test_every_example_of_the_snapshot_states_its_width_and_exit_code():
    examples = list(console_examples())
    assert examples and all(c.startswith("COLUMNS=80 kfin ") for c, _, _ in examples)
    assert all(code is not None for _, _, code in examples)
