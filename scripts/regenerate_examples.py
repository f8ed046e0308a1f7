"""Write again the outputs of the console examples that read the shipped snapshot, in README.md and every page of
the documentation site (docs/), as kfin prints them now (tests/project/test_readme.py checks them byte for byte):
python scripts/regenerate_examples.py."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.runner import kfin  # noqa: E402  (the in-process runner the test uses)

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def pages() -> list[Path]:
    """README.md and every page of docs/: the pages tests/project/test_readme.py checks."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def printed(command: str, shown: str) -> str:
    """What the command prints as the example shows it: at its stated width, warnings first where it shows them."""
    args = shlex.split(command)
    width = args.pop(0).partition("=")[2] if args[0].startswith("COLUMNS=") else None
    import os

    if width:
        os.environ["COLUMNS"], os.environ["NO_COLOR"] = width, "1"
    else:
        os.environ.pop("COLUMNS", None)
    bar = "|" in args
    args, grep = (args[: args.index("|")], args[args.index("|") + 1 :]) if bar else (args, [])
    result = kfin(*args[1:], tty=width is not None and not bar)
    out = subprocess.run(grep, input=result.stdout, capture_output=True, text=True).stdout if bar else result.stdout
    text = ANSI.sub("", (result.stderr if shown.startswith("warning:") else "") + out)
    return "\n".join(line.rstrip() for line in text.rstrip("\n").splitlines())


def regenerate(text: str) -> str:
    def block(match: re.Match[str]) -> str:
        body = match.group(1)
        parts = re.split(r"^(\$ .*\n)", body, flags=re.M)
        out = [parts[0]]
        for at in range(1, len(parts), 2):
            command, output = parts[at], parts[at + 1]
            if "--from-snapshot examples/" in command:
                output = printed(command[2:].rstrip("\n"), output) + "\n"
            out += [command, output]
        return "```console\n" + "".join(out) + "```"

    return re.sub(r"```console\n(.*?)```", block, text, flags=re.S)


if __name__ == "__main__":
    os_cwd = Path.cwd()
    import os

    os.chdir(ROOT)
    for path in pages():
        text = path.read_text()
        fresh = regenerate(text)
        if fresh != text:
            path.write_text(fresh)
            print(f"wrote {path.relative_to(ROOT)}")
    os.chdir(os_cwd)
