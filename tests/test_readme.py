"""README.md tells the truth: its first commands are the install and test commands CI runs, and the
example outputs it shows from the shipped snapshot are what kfin prints."""

import re
import shlex
from pathlib import Path

import pytest

from tests.runner import kfin

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_starts_with_the_install_and_test_commands_ci_runs():
    first_block = re.search(r"```sh\n(.*?)```", README, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["pip install -e '.[test]'", "pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install --quiet --disable-pip-version-check -e '.[test]'" in ci and ci.rstrip().endswith("pytest")


def console_examples():
    """($ kfin ... --from-snapshot examples/..., the output shown) pairs from README's console blocks."""
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            if "--from-snapshot examples/" in command:
                yield command, output.rstrip("\n")


@pytest.mark.parametrize("command, shown", list(console_examples()), ids=lambda v: v[:60] if isinstance(v, str) else v)
def test_readme_example_output_is_real(command, shown, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "110")
    args = shlex.split(command)
    assert args[0] == "kfin"
    result = kfin(*args[1:])
    printed = (result.stderr if shown.startswith("warning:") else "") + result.stdout
    expected = [line.rstrip() for line in shown.splitlines()]
    assert [line.rstrip() for line in printed.rstrip("\n").splitlines()] == expected
