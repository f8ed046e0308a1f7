"""README.md and the documentation site (docs/) tell the truth: README's first commands are the install and test
commands CI runs; the example outputs they show from the shipped snapshot are what kfin prints, byte for byte;
every page renders as CommonMark meant (no fence left open, no contents link to a heading that is not there); and
README stays a front page of at most 300 lines, the documentation site holding the rest."""

import re
import shlex
import subprocess
import unicodedata
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT
README = (ROOT / "README.md").read_text()
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FRONT_PAGE_LINES = 300


def console_examples(text: str = README):
    """(command, the output shown, the exit code shown) of a page's console blocks that read the shipped
    snapshot. `COLUMNS=N kfin ...` is run as on a terminal N columns wide; a following `$ echo $?` shows the
    exit code; warnings (stderr) come first, as on a terminal. `kfin ... | grep ARGS` is kfin's stdout through
    grep (not a terminal), and its exit code is kfin's, `$ echo ${PIPESTATUS[0]}` (bash's `$?` is grep's)."""
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        chunks = [c.partition("\n") for c in re.split(r"^\$ ", block, flags=re.M)[1:]]
        for at, (command, _, output) in enumerate(chunks):
            if "--from-snapshot examples/" in command:
                following = chunks[at + 1] if at + 1 < len(chunks) else None
                status = "echo ${PIPESTATUS[0]}" if " | " in command else "echo $?"
                code = int(following[2].strip()) if following and following[0].strip() == status else None
                yield command, output.rstrip("\n"), code


def every_example():
    """Each page's snapshot examples, with the page they are on (README.md and every docs/ page alike)."""
    for page in PAGES:
        for command, shown, code in console_examples(page.read_text()):
            yield str(page.relative_to(ROOT)), command, shown, code


ANSI = re.compile(r"\x1b\[[0-9;]*m")
PLAN_COMMAND = re.compile(r" +(\d+\. +)?(kubectl|kfin) ")  # a step's command: alone on its line, indented


@pytest.mark.parametrize("page, command, shown, code", list(every_example()),
                         ids=lambda v: v[:60] if isinstance(v, str) else v)
def test_example_output_is_real_at_its_stated_width(page, command, shown, code, monkeypatch):
    """Issue 29: every example byte-checked at the width it states (README examples were 110 columns), on
    README and on the documentation site's pages alike."""
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
    assert [line.rstrip() for line in printed.rstrip("\n").splitlines()] == expected, \
        f"{page}: python scripts/regenerate_examples.py"
    if width and not bar:  # warnings are one line each, for grep: the terminal wraps them
        # and a plan's command is printed whole however long, so that it pastes (issue 41)
        drawn = [line for line in expected if not line.startswith("warning: ") and not PLAN_COMMAND.match(line)]
        assert all(len(line) <= int(width) for line in drawn), "wider than the width it states"
    if code is not None:
        assert result.code == code


def test_every_example_of_the_snapshot_states_its_width_and_exit_code():
    examples = list(every_example())
    assert any(page == "README.md" for page, _, _, _ in examples)  # README keeps examples, checked as the rest
    assert all(c.startswith("COLUMNS=80 kfin ") for _, c, _, _ in examples)
    assert all(code is not None for _, _, _, code in examples), [(p, c) for p, c, _, code in examples if code is None]


# The pages as CommonMark renders them (GitHub renders README.md and docs/*.md by CommonMark, GFM's tables aside).

def markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def unclosed_fences(text: str) -> list[int]:
    """The lines (1-based) of the fences their writer left open. Either nothing closes one (CommonMark then runs
    the block to the end of the document), or the writer's next fence, which cannot close it (a closing fence has
    no info string), is taken into it, so that the prose between them (a heading, a contents link's target) is
    shown as code, and the block ends only at the next fence's close."""
    lines = text.splitlines()
    found = []
    for token in markdown().parse(text):
        if token.type != "fence" or token.map is None:
            continue
        start, end = token.map
        fence = re.escape(token.markup[0]) + "{%d,}" % len(token.markup)
        last = lines[end - 1] if end - 1 > start else ""
        closed = re.fullmatch(r" {0,3}%s\s*" % fence, last) is not None
        opens_inside = any(re.match(r" {0,3}%s" % fence, line) for line in lines[start + 1:end - 1])
        if not closed or opens_inside:
            found.append(start + 1)
    return found


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading (github-slugger): lower case, every character that is not a letter,
    a digit, a mark, `_`, `-` or a space dropped, each space made a `-`."""
    kept = "".join(c for c in heading.lower()
                   if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them (a repeated one gets -1, -2...)."""
    tokens = markdown().parse(text)
    seen: dict[str, int] = {}
    out = set()
    for at, token in enumerate(tokens):
        if token.type == "heading_open":
            inline = tokens[at + 1]
            plain = "".join(child.content for child in inline.children or []
                            if child.type in ("text", "code_inline"))
            slug = github_slug(plain)
            out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return out


def links(text: str) -> list[str]:
    """Every link's target, as the renderer sees it (a link inside a code block is no link)."""
    found = []
    for token in markdown().parse(text):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrs.get("href", "")))
    return found


def broken_anchor_links(page: Path) -> list[str]:
    broken = []
    for href in links(page.read_text()):
        if "#" not in href or "://" in href:
            continue
        target, _, anchor = href.partition("#")
        into = (page.parent / target).resolve() if target else page
        if not into.exists() or into.suffix != ".md":
            continue  # a missing page is mkdocs build --strict's to find
        if anchor not in anchors(into.read_text()):
            broken.append(href)
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fence_is_closed(page):
    assert unclosed_fences(page.read_text()) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_to_a_heading_finds_it(page):
    assert broken_anchor_links(page) == []


def test_readme_is_a_front_page():
    """At most 300 lines: the two commands, what kfin is, the live cluster, install, an example per command
    with a link to its page of the documentation site, where everything else is."""
    from kfin.commands.app import COMMANDS

    assert len(README.splitlines()) <= FRONT_PAGE_LINES
    headings = [line for line in README.splitlines() if line.startswith("## ")]
    assert headings.index("## On your cluster") < headings.index("## Install") < headings.index("## Commands")
    # a section per command, in the order `kfin --help` lists them, each linking to its page where it has one
    sections = [line.removeprefix("### kfin ") for line in README.splitlines() if line.startswith("### kfin ")]
    assert [name for name in COMMANDS if name != "help"] == [name for name in sections if name in COMMANDS]
    for name in COMMANDS:
        if (ROOT / "docs" / "commands" / f"{name}.md").exists():
            assert f"(docs/commands/{name}.md)" in README, f"no link to docs/commands/{name}.md"


def test_the_checks_find_what_they_are_for():
    """The checks above fail on the README that had an unclosed fence and a contents link to nothing."""
    broken = "# kfin\n\n- [Commands](#commands)\n\n### Shell completion\n\n```sh\n\n## Commands\n\ntext\n"
    assert unclosed_fences(broken) == [7]
    shifted = broken.replace("text\n", "text\n\n```sh\nkfin stuck -A\n```\n")  # closed by the next one's close
    assert unclosed_fences(shifted) == [7] and "commands" not in anchors(shifted)
    assert "commands" not in anchors(broken)
    fixed = broken.replace("```sh\n", "```sh\nkfin completion\n```\n")
    assert unclosed_fences(fixed) == [] and "commands" in anchors(fixed)
    assert github_slug("Teardowns: `kfin preflight -f` and `kfin preflight helm`") == \
        "teardowns-kfin-preflight--f-and-kfin-preflight-helm"


def exit_codes(text: str) -> list[int]:
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return [int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)]


def test_readme_and_the_documentation_site_name_every_exit_code_kfin_has():
    """README's short table and the documentation site's whole one (which `man kfin` is made from) list the same
    codes, each code kfin can exit with."""
    from kfin.errors import ExitCode

    documented = exit_codes((ROOT / "docs" / "commands" / "index.md").read_text())
    assert exit_codes(README) == documented == sorted(int(code) for code in ExitCode)
