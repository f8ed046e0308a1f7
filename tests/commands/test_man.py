"""Issue 41: `man kfin`, generated from the app (scripts/generate_man.py) and shipped in the wheel
(tests/project/test_release.py): the committed page is the one the app gives today, and names every command and option."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kfin.commands.app import COMMANDS, load_command
from tests.paths import PROJECT

ROOT = PROJECT


def test_the_man_page_is_current_and_names_every_command_and_option(tmp_path):
    fresh = tmp_path / "kfin.1"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_man.py"), str(fresh)],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    committed = (ROOT / "man" / "kfin.1").read_text()
    assert committed == fresh.read_text(), "man/kfin.1 is out of date: python scripts/generate_man.py"
    plain = committed.replace("\\-", "-")
    for name in COMMANDS:
        assert f".SS\nkfin {name}" in plain, name
        for param in load_command(name).params:
            if param.param_type_name == "option" and not param.hidden:
                assert param.opts[0] in plain, (name, param.opts[0])
    assert ".SH EXIT STATUS" in plain and "\\fB130\\fR" in plain


def test_man_renders_it_without_complaint():
    if shutil.which("man") is None:
        pytest.skip("no man here: the page itself is checked above")
    shown = subprocess.run(
        ["man", "-l", str(ROOT / "man" / "kfin.1")],
        capture_output=True,
        text=True,
        env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert "kfin stuck" in shown.stdout and "EXIT STATUS" in shown.stdout
