"""The kfin command line: the Typer app, its commands registered from one module each, and the entry points
(`kfin`, `kubectl-kfin`, `kubectl_complete-kfin`) that turn every failure into one line and an exit code.

Commands are registered by name (COMMANDS) and their module is imported when the command runs: a command
reaches the whole core, and `kfin --help`, `--version` and every Tab must not pay for all of them."""

from __future__ import annotations

import atexit
import contextlib
import difflib
import functools
import importlib
import io
import os
import re
import shlex
import sys
import threading
from typing import Any, NoReturn

import typer
from msgspec import Struct
from typer.core import TyperGroup

try:  # Typer 0.29 and newer carry their own copy of Click (a private module: the suite fails loudly if it moves)
    from typer._click import exceptions as click_exceptions
    from typer._click import utils as click_utils
except ImportError:  # older Typer releases use Click itself
    from click import exceptions as click_exceptions  # type: ignore[import-not-found,no-redef,unused-ignore]
    from click import utils as click_utils  # type: ignore[import-not-found,no-redef,unused-ignore]

from kfin.commands.about import print_version
from kfin.commands.flags import (
    AllNamespacesOpt,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    Options,
    OutputOpt,
    TimeoutOpt,
    request_timeout_seconds,
)
from kfin.commands.outputs import OUTPUTS
from kfin.core.read.catalog import Catalog
from kfin.errors import ExitCode, KfinError, UsageError
from kfin.render.terminal import Console, QuietPipe
from kfin.util.gcpause import paused_gc
from kfin.util.gilturns import short_gil_turns
from kfin.util.text import one_line

COMPLETE_VAR = "_KFIN_COMPLETE"


class Command(Struct, frozen=True):
    """A command of the registry: its module (one function named like the command) and the first line of
    its help, which `kfin --help` lists without importing the module (a test holds the two equal)."""

    module: str
    summary: str


# The commands, in the order `kfin --help` lists them: the order an operator needs them, from what is stuck to
# the removal, then before a deletion, pictures and files, what runs in a cluster, and the rest. Each summary fits
# `kfin --help` at 80 columns whole (Click cuts a longer one with '...').
COMMANDS = {
    "stuck": Command("kfin.commands.stuck", "What is stuck in Terminating, grouped by root cause."),
    "explain": Command("kfin.commands.explain", "Why one object is stuck, down to its root cause, and the plan."),
    "delete": Command("kfin.commands.delete", "Delete, then show live what holds the object until it goes."),
    "remove": Command("kfin.commands.remove", "Remove finalizers: a dry run first; guarded, recorded."),
    "wait": Command("kfin.commands.wait", "Follow a deletion until the object is gone."),
    "preflight": Command("kfin.commands.preflight", "What a deletion would leave stuck, and the safe order."),
    "graph": Command("kfin.commands.graph", "Owners, dependents and what blocks what, as a tree or picture."),
    "report": Command("kfin.commands.report", "One HTML page of what is stuck and why, for a ticket."),
    "snapshot": Command("kfin.commands.snapshot", "Save the cluster in one file, to read with --from-snapshot."),
    "serve": Command("kfin.commands.serve", "Prometheus metrics of what is stuck, kept by watch; read-only."),
    "guard": Command("kfin.commands.guard", "An admission webhook that warns what a DELETE leaves stuck."),
    "mcp": Command("kfin.commands.mcp", "kfin for assistants and agents (MCP); removal only by proof."),
    "catalog": Command("kfin.commands.catalog", "What operators' finalizers mean; check a catalog of your own."),
    "audit": Command("kfin.commands.audit", "The finalizer removals kfin applied, from its audit log."),
    "version": Command("kfin.commands.version", "Show kfin's version and the API server's."),
    "help": Command("kfin.commands.help", "Show the help of kfin, or of one command."),
}


def load_command(name: str) -> Any:
    """The Click command of one registry entry, built by Typer from its module's function (or its Typer app,
    for a command with subcommands), of the module's COMMAND_CLASS when it has one."""
    module = importlib.import_module(COMMANDS[name].module)
    found = getattr(module, name)
    if isinstance(found, typer.Typer):
        command = typer.main.get_command(found)
        command.name = name
        _own_formats(command, name)
        return command
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    single.command(name, cls=getattr(module, "COMMAND_CLASS", None))(found)
    command = typer.main.get_command(single)
    command.name = name
    _own_formats(command, name)
    return command


def _own_formats(command: Any, name: str) -> None:
    """-o's help lists the formats this command takes (OUTPUTS), not every command's."""
    formats = OUTPUTS.get(name)
    for param in getattr(command, "params", []) if formats else []:
        if param.name == "output":
            shown = [f"{f}..." if f.endswith("=") else f for f in formats or ()]
            param.help = f"Output format: {', '.join(shown)}."


START_HERE = "Start here: kfin stuck -A, then kfin explain KIND NAME (-n NS)."


class KfinGroup(TyperGroup):
    """The registry's commands, each loaded when first asked for; unknown ones get the nearest valid one
    (`did you mean stuck?`)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load_command(cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """As Click lists commands, from the registry's summaries (no command module is imported), after the
        line that says where to start."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        formatter.write_paragraph()
        formatter.write_text(START_HERE)
        with formatter.section("Commands"):
            formatter.write_dl(
                [
                    (name, click_utils.make_default_short_help(command.summary, limit))
                    for name, command in COMMANDS.items()
                ]
            )

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and not args[0].startswith("-") and args[0] not in COMMANDS:
            close = difflib.get_close_matches(args[0], list(COMMANDS), n=1, cutoff=0.6)
            if close:
                raise UsageError(f'unknown command "{args[0]}" (did you mean {close[0]}?)')
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="kfin",
    cls=KfinGroup,
    help="Find out why Kubernetes objects are stuck in Terminating, and unstick them safely.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@functools.cache
def root_command() -> Any:
    """kfin's Click group, built by Typer once per process (and each command as it is first run): Typer builds
    options from a function's signature, about 4 ms of a core that a process running kfin many times (the tests run
    it in-process) would otherwise pay at every run."""
    return typer.main.get_command(app)


@app.callback()
def root(
    ctx: typer.Context,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    all_namespaces: AllNamespacesOpt = None,
    output: OutputOpt = None,
    request_timeout: TimeoutOpt = None,
    show_version: bool | None = typer.Option(
        None,
        "--version",
        callback=print_version,
        is_eager=True,
        help="Show kfin's version and the Kubernetes client's, and exit.",
    ),
    verbose: str | None = typer.Option(  # taken out of the line before Click parses it (verbosity): shown here
        None,
        "-v",
        "--v",
        metavar="LEVEL",
        help="Say more on stderr, anywhere on the line: -v lists each resource type that could not be read, -v=6 "
        "traces a line per request, -v=8 with headers (credentials masked) and answers.",
    ),
    catalog: list[str] | None = typer.Option(
        None,
        "--catalog",
        metavar="FILE",
        help="A catalog of ecosystem finalizers of your own (repeatable), read after the shipped one and "
        "$XDG_CONFIG_HOME/kfin/catalog.d; its entries win.",
    ),
) -> None:
    """Find out why Kubernetes objects are stuck in Terminating, and unstick them safely.

    Connection flags (--kubeconfig, --context, -n, -A, -o, --request-timeout) work before or after the command,
    and so does -v=6 (a line per request on stderr) or -v=8 (with headers, credentials masked, and answers).
    """
    # -v: main took it out of the line already (verbosity) and handed its level in; typer's CliRunner, calling
    # the app itself, leaves it to Click
    given = ctx.obj if isinstance(ctx.obj, Launch) else Launch()
    level = given.trace
    if verbose is not None:
        level = verbosity(["-v", verbose])[1]
    ctx.obj = Options(
        kubeconfig,
        context,
        namespace,
        bool(all_namespaces),
        output,
        request_timeout_seconds(request_timeout),
        Catalog(tuple(catalog or ())),
        level,
        given.console or Console.of_process(),  # the one console of the command, made as it starts
    )


class Launch(Struct, frozen=True):
    """What main hands the root callback: -v's level (taken out of the line before Click parses it) and the
    console the command writes on (a test's), or None for the process's streams."""

    trace: int = 0
    console: Console | None = None


def verbosity(argv: list[str]) -> tuple[list[str], int]:
    """kubectl's -v=N (also -vN, -v N, --v=N, --v N), anywhere before `--`: taken out, its level returned. A -v
    without a level is level 1: what could not be read, each listed (kfin.render.terminal.warn_failures)."""
    out: list[str] = []
    level, at = 0, 0
    while at < len(argv):
        word = argv[at]
        if word == "--":
            out += argv[at:]
            break
        value = None
        if word in ("-v", "--v"):
            following = argv[at + 1] if at + 1 < len(argv) else ""
            value, at = (following, at + 1) if following.isdigit() else ("1", at)
        elif word.startswith(("-v=", "--v=")):
            value = word.partition("=")[2]
        elif re.fullmatch(r"-v\d+", word):
            value = word[2:]
        if value is None:
            out.append(word)
        elif value.isdigit() and int(value) <= 10:
            level = int(value)
        else:
            raise UsageError(f'-v: "{value}" is not a level from 0 to 10 (kubectl\'s -v=6 shows each request)')
        at += 1
    return out, level


def _prog_name() -> str:
    return "kubectl kfin" if os.path.basename(sys.argv[0]).startswith("kubectl-kfin") else "kfin"


def main(argv: list[str] | None = None, console: Console | None = None) -> None:
    """Run kfin; every failure becomes one line on stderr and a documented exit code (docs/commands/index.md).

    The entry point owns the process's streams: a command's Console is made from them as it starts (root), and
    the errors said here come before a console exists or after its command has ended."""
    entry = argv is None  # the process's own command line, not a test's
    stdout = sys.stdout
    sys.stdout = QuietPipe(stdout)  # a reader that goes away (| head) must not cost the warnings
    code: Any = ExitCode.OK
    try:
        argv, level = verbosity(list(sys.argv[1:] if argv is None else argv))
        # A command is one short batch of work (kfin/util/gcpause.py). What it leaves is frozen: the collections
        # of the interpreter's exit would walk all of it, about 50 ms of a small scan, to free what the OS takes
        # back anyway. Its threads wait on the network: each takes its turn at the GIL sooner (kfin/util/gilturns.py).
        with paused_gc(), short_gil_turns():
            code = root_command()(args=argv, prog_name=_prog_name(), standalone_mode=False, obj=Launch(level, console))
        if code == ExitCode.INTERRUPTED:  # Typer turns Ctrl-C into Exit(130)
            raise KeyboardInterrupt
    except KfinError as error:
        _fail(one_line(error.message), error.exit_code)
    except click_exceptions.NoArgsIsHelpError as error:
        print(error.ctx.get_help())
        code = ExitCode.USAGE
    except click_exceptions.UsageError as error:  # Click's own: unknown flag, bad value, missing argument
        hint = f" (see {error.ctx.command_path} --help)" if error.ctx else ""
        _fail(one_line(error.format_message()) + hint, ExitCode.USAGE)
    except (KeyboardInterrupt, typer.Abort):  # Typer's Abort: Ctrl-C or end of input at a prompt
        _fail("interrupted", ExitCode.INTERRUPTED)
    except Exception as error:  # a bug: say so in one line, with the way to see more
        if os.environ.get("KFIN_DEBUG"):
            raise
        _fail(
            f"internal error in kfin: {one_line(repr(error))} (run with KFIN_DEBUG=1 for the traceback, "
            "and please report it)",
            ExitCode.INTERNAL,
        )
    finally:
        sys.stdout = stdout
    if entry and "multiprocessing" not in sys.modules:  # worker processes are ended by the interpreter's exit
        _end_process(int(code or 0))
    sys.exit(int(code or 0))


def _end_process(code: int) -> NoReturn:
    """End the process with the command's exit code once its output is written, without the interpreter's
    teardown: that frees, one by one, every object the command kept (about 40 ms after a scan of 50,000 objects),
    memory the OS takes back at once, and waits for threads whose answers nobody will read. The exit
    handlers still run first (the files a kubeconfig's certificate data was written to are removed). Not for a
    command that started processes (kfin stuck --all-contexts): the interpreter's exit tells them to end first."""
    atexit._run_exitfuncs()  # the handlers Python itself would run at its exit, in its order
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away: nothing is left to say to it
            pass
    os._exit(code)


def _fail(message: str, code: int) -> None:
    """One line on stderr, then exit. Threads still waiting on the network (a scan interrupted by
    Ctrl-C) are not waited for."""
    print(f"error: {message}", file=sys.stderr)
    if code == ExitCode.INTERRUPTED and threading.active_count() > 1:
        sys.stderr.flush()
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        os._exit(int(code))
    sys.exit(int(code))


def kubectl_complete() -> None:
    """`kubectl_complete-kfin`: kubectl's plugin completion (cobra's __complete protocol).

    kubectl runs `kubectl_complete-kfin __complete ARGS... INCOMPLETE` and reads one candidate per line,
    then `:4` (no file completion).
    """
    args = sys.argv[1:]
    if args and args[0] in ("__complete", "__completeNoDesc"):
        args = args[1:]
    words = ["kfin", *args] if args else ["kfin", ""]
    env = {
        COMPLETE_VAR: "complete_bash",
        "COMP_WORDS": " ".join(_quote(w) for w in words),
        "COMP_CWORD": str(len(words) - 1),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            try:
                root_command()(args=[], prog_name="kfin")
            except SystemExit:
                pass
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    for line in out.getvalue().splitlines():
        if line.strip():
            print(line)
    print(":4")


def _quote(word: str) -> str:
    return shlex.quote(word) if word else "''"
