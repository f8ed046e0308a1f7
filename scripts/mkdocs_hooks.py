"""MkDocs hooks (mkdocs.yml: hooks): the parts of the documentation site that are generated at build time,
so that nothing generated is committed and nothing can drift.

- Each command page (docs/commands/NAME.md) holds the marker <!-- kfin:options -->, replaced by the command's
  usage, arguments and options as the app defines them (kfin.commands.app: the Click command `--help` prints);
  docs/commands/index.md holds <!-- kfin:global-options --> for the options before the command. A command
  without a page, or a page without its marker, fails the build.
- The runbook page is deploy/RUNBOOK.md itself (the alerts' runbook_url points at its sections), added to the
  site as runbook.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from kfin.commands.app import COMMANDS, app, load_command

ROOT = Path(__file__).resolve().parent.parent
RUNBOOK = ROOT / "deploy" / "RUNBOOK.md"
OPTIONS_MARKER = "<!-- kfin:options -->"
GLOBAL_MARKER = "<!-- kfin:global-options -->"


def _cell(text: str) -> str:
    """Text fit for a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _context(command: Any, name: str, parent: Any = None) -> Any:
    """A Click context of the command (Typer brings a Click of its own: its classes, not click's)."""
    return command.context_class(command, info_name=name, parent=parent)


def _params_table(command: Any, ctx: Any) -> list[str]:
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    options = [p for p in command.params if p.param_type_name == "option" and not p.hidden]
    lines: list[str] = []
    if arguments:
        lines += ["| argument | meaning |", "| --- | --- |"]
        for argument in arguments:
            shown = (argument.metavar or argument.name or "").upper()
            if not argument.required:
                shown = f"[{shown}]"
            lines.append(f"| `{shown}` | {_cell(getattr(argument, 'help', None) or '')} |")
        lines.append("")
    if options:
        lines += ["| option | meaning |", "| --- | --- |"]
        for option in options:
            record = option.get_help_record(ctx)
            if record is None:
                continue
            names, help_text = record
            lines.append(f"| `{_cell(names)}` | {_cell(help_text)} |")
        lines.append("")
    return lines


def command_reference(name: str) -> str:
    """The usage, arguments and options of `kfin NAME` (and of its subcommands), as Markdown."""
    root = typer.main.get_command(app)
    command = load_command(name)
    parent = _context(root, "kfin")
    lines: list[str] = []

    def describe(cmd: Any, ctx: Any, level: str) -> None:
        lines.extend(["```text", f"{ctx.command_path} {' '.join(cmd.collect_usage_pieces(ctx))}".rstrip(), "```", ""])
        lines.extend(_params_table(cmd, ctx))
        if hasattr(cmd, "list_commands"):
            for sub_name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, sub_name)
                if sub is None or sub.hidden:
                    continue
                lines.extend([f"{level} kfin {name} {sub_name}", ""])
                if sub.help:
                    lines.extend([" ".join(sub.help.split()), ""])
                describe(sub, _context(sub, sub_name, ctx), level + "#")

    lines.extend(["## Options", "", "Generated from kfin itself, as `kfin " + name + " --help` shows them.", ""])
    describe(command, _context(command, name, parent), "###")
    return "\n".join(lines)


def global_reference() -> str:
    """The options kfin takes before (or after) any command."""
    root = typer.main.get_command(app)
    ctx = _context(root, "kfin")
    return "\n".join(_params_table(root, ctx))


def on_files(files: Files, config: Any) -> Files:
    missing = [name for name in COMMANDS if files.get_file_from_path(f"commands/{name}.md") is None]
    if missing:
        raise PluginError(f"no page for the command(s) {', '.join(missing)}: add docs/commands/NAME.md")
    files.append(File.generated(config, "runbook.md", content=RUNBOOK.read_text()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    path = page.file.src_uri
    if path == "commands/index.md":
        if GLOBAL_MARKER not in markdown:
            raise PluginError(f"docs/{path} lacks {GLOBAL_MARKER}")
        return markdown.replace(GLOBAL_MARKER, global_reference())
    name = path.removeprefix("commands/").removesuffix(".md")
    if path.startswith("commands/") and name in COMMANDS:
        if OPTIONS_MARKER not in markdown:
            raise PluginError(f"docs/{path} lacks {OPTIONS_MARKER}, where kfin {name}'s options go")
        return markdown.replace(OPTIONS_MARKER, command_reference(name))
    return markdown
