"""The documentation site (mkdocs.yml, docs/): built as .ci/run builds it (--strict), each command's page lists
every option the command takes, generated from kfin itself (scripts/mkdocs_hooks.py), and the runbook page is
deploy/RUNBOOK.md with a section for every alert."""

import html
import importlib.util
import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import typer
import yaml
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files

from bench.tools import installed_command
from kfin.commands.app import COMMANDS, app, load_command
from tests.paths import PROJECT

ROOT = PROJECT
MKDOCS = installed_command("mkdocs")
needs_mkdocs = pytest.mark.skipif(MKDOCS is None, reason="mkdocs not installed (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([MKDOCS, "build", "--strict", "--site-dir", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def text_of(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def options_of(command) -> list[tuple[str, list[str]]]:
    """Every option (its flags) of a Click command and of its subcommands, as `--help` lists them."""
    found = [(command.name, opt.opts + opt.secondary_opts) for opt in command.params
             if opt.param_type_name == "option" and not opt.hidden]
    for sub in getattr(command, "commands", {}).values():
        found += options_of(sub)
    return found


@needs_mkdocs
@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_page_lists_every_option_the_command_takes(site, name):
    page = site / "commands" / name / "index.html"
    assert page.exists(), f"no page for kfin {name}"
    text = text_of(page)
    options = options_of(load_command(name))
    for command, flags in options:
        for flag in flags:
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), f"kfin {name}: {command} {flag}"
    assert f"kfin {name} [OPTIONS]" in text  # the usage line, as --help prints it
    assert "<!-- kfin:options -->" not in page.read_text()


@needs_mkdocs
def test_the_commands_page_lists_the_options_every_command_takes(site):
    text = text_of(site / "commands" / "index.html")
    root = typer.main.get_command(app)
    for option in root.params:
        if option.param_type_name == "option" and not option.hidden:
            for flag in option.opts:
                assert flag in text, flag


@needs_mkdocs
def test_the_runbook_page_is_deploy_runbook_with_a_section_for_every_alert(site):
    page = (site / "runbook" / "index.html").read_text()
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus-rules.yaml").read_text())
    for alert in (r["alert"] for group in rules["groups"] for r in group["rules"]):
        assert f'id="{alert.lower()}"' in page, alert  # the anchor each alert's runbook_url ends with
    first = (ROOT / "deploy" / "RUNBOOK.md").read_text().replace("`", "").split("\n\n")[1].split()[:12]
    assert " ".join(first) in " ".join(text_of(site / "runbook" / "index.html").split())


def test_a_command_without_a_page_fails_the_build():
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py")
    assert spec and spec.loader
    mkdocs_hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mkdocs_hooks)
    with pytest.raises(PluginError, match="no page for the command"):
        mkdocs_hooks.on_files(Files([]), config={})


def test_project_urls_stay_absent_until_kfin_is_published():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "urls" not in project and "urls" not in project.get("dynamic", [])
