"""Each command writes on the one console it is handed (kfin.render.terminal.Console: its streams, whether each is
a terminal, colour, width), never on the process's streams: a console of StringIO streams that says it is a
terminal of a given width gets what a person at such a terminal would see, and NO_COLOR takes the colour away."""

import io
import re

import pytest

from kfin.commands.app import main
from kfin.errors import ExitCode, UsageError
from kfin.render.removal import Mode
from kfin.render.terminal import Console
from tests.fakeapi.rawclient import RawClient
from tests.runner import Terminal, kfin
from tests.paths import PROJECT

ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def stuck_configmap(api, namespace, name, finalizer="example.com/x"):
    api.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    api.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": name, "finalizers": [finalizer]}})
    api.delete(f"/api/v1/namespaces/{namespace}/configmaps/{name}")


def terminal(width, colour=True):
    """A console whose stdout and stderr are terminals `width` columns wide, as a test holds them."""
    return Console(Terminal(), Terminal(), io.StringIO(""), True, True, False, colour=colour, width=width)


def run(console, *args):
    with pytest.raises(SystemExit) as ended:
        main(list(args), console=console)
    return ended.value.code


@pytest.fixture
def cluster(fake, fake_kubeconfig):
    stuck_configmap(RawClient(fake.url, "admin-token"), "shop", "held-by-a-finalizer-with-a-long-name")
    return ("--kubeconfig", str(fake_kubeconfig), "-n", "shop")


def widest(text):
    """The widest line but a command's, which stays whole on its line to paste."""
    lines = ESCAPE.sub("", text).splitlines()
    return max(len(line) for line in lines if not re.match(r"\s*(\d+\. )?kfin ", line))


def aged(text):
    """The screen, its object's age left out (seconds pass between two runs)."""
    return re.sub(r"Terminating for\s+\d+s", "Terminating for AGE", ESCAPE.sub("", text))


def test_stuck_draws_on_the_terminal_it_is_handed_at_its_width_in_colour(cluster, capsys):
    narrow, wide = terminal(60), terminal(200)
    assert run(narrow, "stuck", *cluster) == ExitCode.OK
    assert run(wide, "stuck", *cluster) == ExitCode.OK
    assert capsys.readouterr() == ("", "")  # nothing on the process's own streams
    shown = narrow.stdout.getvalue()
    assert "held-by-a-finalizer-with-a-long-name" in ESCAPE.sub("", shown) and ESCAPE.search(shown), shown
    assert widest(shown) <= 60 < widest(wide.stdout.getvalue()), (shown, wide.stdout.getvalue())
    # at 60 columns a block per object; at 200 the table kfin stuck prints on a wide terminal
    assert "\nKIND: ConfigMap\n" in ESCAPE.sub("", shown), shown
    assert ESCAPE.sub("", wide.stdout.getvalue()).splitlines()[-2].startswith("KIND "), wide.stdout.getvalue()


def test_explain_lays_its_panels_out_for_the_consoles_width_and_no_color_takes_the_colour_away(cluster, capsys):
    coloured = terminal(70)
    assert run(coloured, "explain", "cm", "held-by-a-finalizer-with-a-long-name", *cluster) == ExitCode.OK
    shown = coloured.stdout.getvalue()
    borders = [line for line in ESCAPE.sub("", shown).splitlines() if line.startswith(("╭", "╰"))]
    assert ESCAPE.search(shown) and borders and {len(line) for line in borders} == {70}, shown  # the width, spanned
    plain = Console.of(Terminal(), Terminal(), io.StringIO(""), {"NO_COLOR": "1", "COLUMNS": "70"})
    assert (plain.stdout_isatty, plain.colour, plain.width) == (True, False, 70)
    assert run(plain, "explain", "cm", "held-by-a-finalizer-with-a-long-name", *cluster) == ExitCode.OK
    assert not ESCAPE.search(plain.stdout.getvalue())
    assert aged(plain.stdout.getvalue()) == aged(shown)  # the same screen, without a single escape
    assert capsys.readouterr() == ("", "")


def test_removes_plan_wraps_at_the_consoles_width_and_its_dry_run_line_goes_to_the_consoles_stderr(cluster, capsys):
    console = terminal(40)
    assert run(console, "remove", "cm", "held-by-a-finalizer-with-a-long-name", *cluster) == ExitCode.OK
    plan = console.stdout.getvalue()
    # wrapped between words at 40 columns, continued two in
    assert plan.startswith("ConfigMap/shop/\n  held-by-a-finalizer-with-a-long-name\n") and widest(plan) <= 40, plan
    assert "example.com/x" in plan
    assert console.stderr.getvalue().replace("\n", " ").startswith("Dry run: nothing was changed."), console.stderr
    assert capsys.readouterr() == ("", "")
    piped = Console(io.StringIO(), io.StringIO(), io.StringIO(""))  # a pipe: kfin's words on one line each
    assert run(piped, "remove", "cm", "held-by-a-finalizer-with-a-long-name", *cluster) == ExitCode.OK
    assert widest(piped.stdout.getvalue()) > 40 and not ESCAPE.search(piped.stdout.getvalue())


@pytest.mark.parametrize("order", [["--confirm", "--server-dry-run"], ["--server-dry-run", "--confirm"]])
def test_remove_with_confirm_and_server_dry_run_is_a_usage_error_in_one_line(cluster, order):
    result = kfin("remove", "cm", "held-by-a-finalizer-with-a-long-name", *cluster, *order)
    assert result.code == ExitCode.USAGE and result.stdout == "", result
    assert result.stderr.startswith("error: --confirm and --server-dry-run ask for two different runs")
    assert len(result.stderr.splitlines()) == 1, result
    both = kfin("remove", "-n", "shop", "--all-stuck", "--kubeconfig", cluster[1], *order)
    assert both.code == ExitCode.USAGE and both.stderr == result.stderr, both


def test_a_removal_is_one_of_three_runs():
    assert Mode.of(False, False) is Mode.PLAN and not Mode.PLAN.sends
    assert Mode.of(False, True) is Mode.SERVER_DRY_RUN and Mode.SERVER_DRY_RUN.sends
    assert Mode.of(True, False) is Mode.CONFIRM and Mode.CONFIRM.sends
    with pytest.raises(UsageError):
        Mode.of(True, True)


def test_the_consoles_width_is_columns_bounded_and_a_pipe_is_no_terminal():
    assert Console.of(io.StringIO(), io.StringIO(), io.StringIO(), {"COLUMNS": "99999999"}).width == 1000
    assert Console.of(io.StringIO(), io.StringIO(), io.StringIO(), {"COLUMNS": "5"}).width == 30
    piped = Console.of(io.StringIO(), io.StringIO(), io.StringIO(), {})
    assert (piped.stdout_isatty, piped.stderr_isatty, piped.colour, piped.columns) == (False, False, True, None)


# Where the process's own streams may still be touched, and why: the entry point (errors before a command's
# console exists or after it ended; kubectl's completion protocol), --version (an eager flag, run before the root
# callback makes the console), the console's own making, and kfin mcp (the protocol owns the real stdout; it swaps
# the streams a command's console is made from for its answer's).
OWN_STREAMS = {"kfin/commands/app.py", "kfin/commands/about.py", "kfin/render/terminal.py", "kfin/mcp/server.py"}


def test_commands_and_what_they_draw_never_touch_the_process_streams():
    import ast
    from pathlib import Path

    root = PROJECT
    touched = []
    for folder in ("commands", "render", "serve", "mcp"):
        for path in sorted((root / "kfin" / folder).glob("*.py")):
            name = str(path.relative_to(root))
            if name in OWN_STREAMS:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                stream = (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                          and node.value.id == "sys" and node.attr in ("stdout", "stderr", "stdin"))
                called = isinstance(node, ast.Call) and (
                    (isinstance(node.func, ast.Name) and node.func.id in ("print", "input"))
                    or (isinstance(node.func, ast.Attribute) and node.func.attr == "echo"))
                if stream or called:
                    touched.append(f"{name}:{node.lineno}")
    assert touched == []
