"""Write man/kfin.1 (`man kfin`) from the app itself: each command's help and options, and the exit codes of
the documentation site's table (docs/commands/index.md), so that the page cannot drift from kfin.

    python scripts/generate_man.py [OUTPUT_FILE]

tests/commands/test_man.py regenerates it and fails when the committed page is out of date. The wheel installs it as
share/man/man1/kfin.1 (pyproject.toml, tool.setuptools.data-files).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kfin.commands.app import COMMANDS, app, load_command  # noqa: E402  (the checkout's kfin, not another one)


def _roff(text: str) -> str:
    """Plain text as roff: backslashes and leading dots or quotes escaped, `code` spans in bold."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = re.sub(r"`([^`]+)`", r"\\fB\1\\fR", text)
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.splitlines())


def _options(command: Any) -> list[str]:
    out = []
    for param in command.params:
        if getattr(param, "hidden", False) or param.param_type_name != "option":
            continue
        names = ", ".join(param.opts + param.secondary_opts)
        metavar = "" if param.is_flag else f" {param.metavar or param.name.upper()}"
        out += [".TP", f"\\fB{_roff(names)}\\fR{_roff(metavar)}", _roff(param.help or "")]
    return out


def _command(name: str, command: Any) -> list[str]:
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    usage = " ".join(
        (p.metavar or p.name.upper()) if p.required else f"[{p.metavar or p.name.upper()}]" for p in arguments
    )
    lines = [".SS", f"kfin {name} {_roff(usage)}".rstrip(), _roff((command.help or "").strip()), ".PP"]
    lines += _options(command)
    for sub_name, sub in sorted(getattr(command, "commands", {}).items()):
        lines += _command(f"{name} {sub_name}", sub)
    return lines


def _exit_codes() -> list[str]:
    """The table of exit codes, in the documentation site's page of the commands."""
    page = (ROOT / "docs" / "commands" / "index.md").read_text()
    section = page.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    out = []
    for code, meaning in re.findall(r"^\| (\d+) \| (.+) \|$", section, re.M):
        out += [".TP", f"\\fB{code}\\fR", _roff(meaning)]
    return out


def page() -> str:
    import typer

    root = typer.main.get_command(app)
    lines = [
        '.TH KFIN 1 "" "kfin" "User Commands"',
        ".SH NAME",
        "kfin \\- " + _roff((root.help or "").strip().rstrip(".")),
        ".SH SYNOPSIS",
        "\\fBkfin\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        _roff((root.help or "").strip()),
        ".SH OPTIONS",
        *_options(root),
        ".SH COMMANDS",
    ]
    for name in COMMANDS:
        lines += _command(name, load_command(name))
    lines += [".SH EXIT STATUS", *_exit_codes()]
    lines += [
        ".SH ENVIRONMENT",
        ".TP",
        "\\fBKUBECONFIG\\fR",
        "The kubeconfig files, as kubectl reads them (else ~/.kube/config).",
        ".TP",
        "\\fBNO_COLOR\\fR",
        "Set: no colour and no emphasis, not even on a terminal.",
        ".SH SEE ALSO",
        "\\fBkubectl\\fR(1); the documentation site (docs/, mkdocs build): docs/commands/index.md for the exit codes.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "man" / "kfin.1"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page())
    print(f"wrote {target}")
