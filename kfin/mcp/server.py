"""`kfin mcp`: kfin's answers as the tools, prompts and resource of a Model Context Protocol server over stdio.

Each read-only tool runs kfin's own command in this process with -o json, so that its answer is the document
`kfin ... -o json` prints, its warnings those the command prints, and its failure the command's one `error:` line:
nothing is answered twice. Removal goes only by proof (kfin.mcp.removal). The SDK (`pip install 'kfin[mcp]'`) is
imported by serve() alone, so that `kfin --help` and the documentation never need it.
"""

# No `from __future__ import annotations` here: the SDK reads each tool's parameters from its annotations when the
# tool is registered, and those of the tools made in serve() name types imported there.

import atexit
import contextlib
import io
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, NoReturn

from msgspec import Struct
from msgspec.structs import replace

from kfin import __version__
from kfin.core.explain.roots import root_causes
from kfin.core.explain.stuck import find_all
from kfin.core.read.scope import Scope
from kfin.errors import ConfigError, ExitCode, KfinError, UsageError
from kfin.mcp import removal
from kfin.model import JSON
from kfin.names import check_kind, check_name, check_namespace
from kfin.util.text import one_line, printable

# An answer longer than this is cut (a list keeps its first items and says how many it left out) or refused with
# how to narrow it: an assistant's context is small, and a cluster's stuck list is not.
RESULT_CHARS = 200_000
WAIT_SECONDS = 300  # the longest a wait call holds the conversation
# kfin's commands run one at a time (they share the process's stdout and stderr). A call waits this long for the
# one before it, then answers that it is still running: well under the 60 s a typical MCP client waits for an
# answer (the TypeScript SDK's default request timeout), so the assistant reads why instead of a timeout.
LOCK_SECONDS = 30
# A call that has not answered after this long answers an error; its command, which a thread cannot be made to
# stop, goes on holding kfin's commands until it ends. The longest call kfin mcp offers (wait, 300 s) and a
# minute for its reads.
CALL_SECONDS = WAIT_SECONDS + 60
ANSWERED = (ExitCode.OK, ExitCode.FOUND, ExitCode.PARTIAL)  # a document was printed: PARTIAL says it is incomplete
ROOT_CAUSES_URI = "kfin://stuck/root-causes"
NARROW = "narrow it: namespace, kinds, verdicts or label_selector"


class ServerSettings(Struct, frozen=True):
    """How kfin mcp was started: the flags every command it runs gets, and what it may write."""

    scope: Scope  # for the removal tools and the root-cause resource
    before: tuple[str, ...]  # kfin's flags before the command: --kubeconfig, --context, -n, --catalog...
    writes: removal.Writes
    result_chars: int = RESULT_CHARS
    listen: tuple[str, int] | None = None  # streamable HTTP at this address instead of stdio (read-only)


class CommandRun(Struct):
    code: int
    stdout: str
    stderr: str


class ToolResult(Struct):
    """A tool's answer: the document (JSON text), kfin's warnings, or its one-line error."""

    text: str
    document: Any = None
    notes: str = ""
    code: int = ExitCode.OK
    error: bool = False


class BusyError(KfinError):
    """Another call still holds kfin's commands after LOCK_SECONDS."""

    exit_code = ExitCode.UNREACHABLE  # kfin's timeout code: no answer in time, nothing done, the call may be made again


class Commands:
    """kfin's own commands, run in this process as from the command line, with their output captured. One at a
    time: stdout and stderr are the process's. A call waits at most `lock_seconds` for the one before it."""

    def __init__(self, root: Any, lock_seconds: float | None = None):
        self.root = root  # the Click group of `kfin`
        self.lock = threading.Lock()
        self.lock_seconds = LOCK_SECONDS if lock_seconds is None else lock_seconds
        self.holder = ""  # what holds the lock, and since when (time.monotonic): for the answer of a call refused
        self.since = 0.0

    @contextlib.contextmanager
    def turn(self, what: str) -> Iterator[None]:
        """Hold kfin's commands for `what` (`kfin explain`, `apply_removal`); BusyError when another call holds
        them too long."""
        if not self.lock.acquire(timeout=self.lock_seconds):
            running = time.monotonic() - self.since
            raise BusyError(
                f"another call is still running ({self.holder}, for {running:.0f} s) and kfin mcp runs one "
                f"command at a time: waited {self.lock_seconds:g} s; call again once it has answered"
            )
        self.holder, self.since = what, time.monotonic()
        try:
            yield
        finally:
            self.lock.release()

    def run(self, argv: list[str], stdin: str = "") -> CommandRun:
        """`stdin`: what the command reads for `-` (never the protocol's own input)."""
        out, err = io.StringIO(), io.StringIO()
        command = next((word for word in argv if not word.startswith("-")), "")  # the flags before are --x=y
        # The command's console is made from the process's streams as it starts (kfin.render.terminal.Console
        # .of_process): swapped here for the answer's, as stdout is the protocol's own. The swap also catches
        # what writes below the console: the API's -v trace (stderr) and a manifest read from `-` (stdin).
        with self.turn(f"kfin {command}"), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            given, sys.stdin = sys.stdin, io.StringIO(stdin)
            try:
                code = self._main(argv)
            finally:
                sys.stdin = given
        return CommandRun(code, out.getvalue(), err.getvalue())

    def _main(self, argv: list[str]) -> int:
        """As kfin.commands.app.main: every failure one `error:` line and its exit code."""
        try:
            code = self.root.main(args=argv, prog_name="kfin", standalone_mode=False)
        except KfinError as error:
            return _fail(error.message, error.exit_code)
        except SystemExit as exit_:
            return exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
        except Exception as error:  # Click's usage errors have their message; anything else is a bug
            if hasattr(error, "format_message"):
                return _fail(error.format_message(), ExitCode.USAGE)
            return _fail(f"internal error in kfin: {error!r} (please report it)", ExitCode.INTERNAL)
        return int(code or 0)


def _fail(message: str, code: int) -> int:
    """A command's error line, as kfin's entry point says it after the command's console is gone: on stderr, which
    is the answer's own while a command runs (Commands.run)."""
    print(f"error: {one_line(message)}", file=sys.stderr)
    return int(code)


def split_stderr(stderr: str) -> tuple[list[str], list[str]]:
    """(the error lines, the rest: warnings and notes)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    return [line for line in lines if line.startswith("error: ")], [
        line for line in lines if not line.startswith("error: ")
    ]


def failed(message: str, code: int = ExitCode.USAGE) -> ToolResult:
    return ToolResult(f"error: {one_line(message)}", code=code, error=True)


def document_result(answer: CommandRun, limit: int) -> ToolResult:
    """A command's -o json answer, bounded, with its warnings (the lines it printed on stderr) in its `warnings`;
    or its error line."""
    errors, notes = split_stderr(answer.stderr)
    if answer.code not in ANSWERED or not answer.stdout.strip():
        return ToolResult("\n".join(errors) or f"error: kfin exited {answer.code}", code=answer.code, error=True)
    text = answer.stdout
    document = json.loads(text)
    if notes and isinstance(document, dict):  # one JSON document per answer: a client may join the content's text
        document = dict(document, warnings=notes)
        text = json.dumps(document, indent=2)
    if len(text) > limit:
        cut = bounded(document, limit)
        if cut is None:
            return failed(f"the answer is {len(text)} characters, over kfin mcp's limit of {limit}: {NARROW}")
        document, text = cut, json.dumps(cut, indent=2)
    return ToolResult(text, document, "\n".join(notes), answer.code)


def bounded(document: Any, limit: int) -> Any:
    """A list document cut to its first items that fit, saying how many it left out; None when none is a list."""
    items = document.get("items") if isinstance(document, dict) else None
    if not isinstance(items, list):
        return None
    low, high = 0, len(items)
    while low < high:  # the most items that fit
        middle = (low + high + 1) // 2
        if len(json.dumps(_cut(document, items, middle), indent=2)) <= limit:
            low = middle
        else:
            high = middle - 1
    return _cut(document, items, low)


def _cut(document: JSON, items: list[Any], keep: int) -> JSON:
    return dict(
        document,
        items=items[:keep],
        truncated={"shown": keep, "total": len(items), "why": f"over kfin mcp's limit: {NARROW}"},
    )


def option(flag: str, value: str | None) -> list[str]:
    """`--flag=value`: a value that starts with a dash stays a value."""
    return [] if value is None else [f"{flag}={value}"]


def subject(kind: str, name: str, namespace: str | None) -> tuple[list[str], list[str]]:
    """(options, positional arguments) for KIND NAME, checked as the command line checks them."""
    check_kind(kind)
    check_name(name)
    if namespace is not None:
        check_namespace(namespace)
    return option("--namespace", namespace), ["--", kind, name]


class TeardownArguments(Struct, frozen=True):
    """kfin preflight -f, -R, --helm and helm RELEASE, as the preflight tool takes them."""

    manifests: str | None = None  # YAML or JSON text, as `kubectl delete -f -` reads it
    filenames: tuple[str, ...] = ()  # files or directories where kfin mcp runs
    recursive: bool = False
    helm_release: str | None = None
    helm_major: int | None = None

    @property
    def given(self) -> bool:
        return bool(self.manifests is not None or self.filenames or self.helm_release is not None)


class Tools:
    """What each tool does, without the SDK: kfin's commands, its catalog, and removal by proof."""

    def __init__(self, settings: ServerSettings, commands: Commands):
        self.settings = settings
        self.commands = commands
        self.ledger = removal.Ledger()

    def _snapshot(self) -> list[str]:
        return option("--from-snapshot", self.settings.scope.from_snapshot)

    def _run(self, argv: list[str], stdin: str = "") -> ToolResult:
        return document_result(self.commands.run([*self.settings.before, *argv], stdin), self.settings.result_chars)

    def _checked(self, make: Any) -> ToolResult:
        try:
            result: ToolResult = make()
            return result
        except KfinError as error:
            return failed(error.message, error.exit_code)

    def stuck(
        self,
        namespace: str | None,
        all_namespaces: bool,
        kinds: list[str],
        verdicts: list[str],
        label_selector: str | None,
        finalizer: str | None,
        older_than: str | None,
    ) -> ToolResult:
        def run() -> ToolResult:
            if namespace is not None:
                check_namespace(namespace)
            argv = ["stuck", "--output=json", *self._snapshot(), *option("--namespace", namespace)]
            argv += ["--all-namespaces"] if all_namespaces else []
            argv += [f"--kind={kind}" for kind in kinds] + [f"--verdict={verdict}" for verdict in verdicts]
            argv += option("--selector", label_selector) + option("--finalizer", finalizer)
            return self._run(argv + option("--older-than", older_than))

        return self._checked(run)

    def explain(self, kind: str, name: str, namespace: str | None) -> ToolResult:
        def run() -> ToolResult:
            options, words = subject(kind, name, namespace)
            return self._run(["explain", "--output=json", *self._snapshot(), *options, *words])

        return self._checked(run)

    def graph(self, kind: str, name: str, namespace: str | None, only_stuck: bool, owners_only: bool) -> ToolResult:
        def run() -> ToolResult:
            options, words = subject(kind, name, namespace)
            flags = ["--only-stuck"] * only_stuck + ["--owners-only"] * owners_only
            return self._run(["graph", "--output=json", *self._snapshot(), *flags, *options, *words])

        return self._checked(run)

    def preflight(
        self, kind: str | None, name: str | None, namespace: str | None, teardown: TeardownArguments
    ) -> ToolResult:
        """One object's deletion; or a teardown: manifests (text, or files), or a Helm release."""

        def run() -> ToolResult:
            argv = ["preflight", "--output=json", *self._snapshot()]
            if not teardown.given:
                if kind is None or name is None:
                    raise UsageError("preflight needs kind and name, or manifests, filenames or helm_release")
                options, words = subject(kind, name, namespace)
                return self._run([*argv, *options, *words])
            if kind is not None or name is not None:
                raise UsageError("preflight takes kind and name, or a teardown (manifests, filenames, helm_release)")
            if namespace is not None:
                check_namespace(namespace)
            argv += option("--namespace", namespace) + ["--recursive"] * teardown.recursive
            argv += option("--helm", str(teardown.helm_major) if teardown.helm_major else None)
            for path in teardown.filenames:
                check_readable(path)
            argv += [f"--filename={path}" for path in teardown.filenames]
            if teardown.helm_release is not None:
                check_name(teardown.helm_release, "release")
                return self._run([*argv, "--", "helm", teardown.helm_release])
            if teardown.manifests is None:
                return self._run(argv)
            return self._run([*argv, "--filename=-"], teardown.manifests)  # as `kubectl delete -f -` reads them

        return self._checked(run)

    def catalog_lookup(self, finalizer: str) -> ToolResult:
        def run() -> ToolResult:
            entry = self.settings.scope.catalog.match(finalizer)
            document = {"finalizer": finalizer, "entry": entry.to_dict() if entry is not None else None}
            return ToolResult(json.dumps(document, indent=2), document)

        return self._checked(run)

    def wait(self, kind: str, name: str, namespace: str | None, timeout_seconds: float, uid: str | None) -> ToolResult:
        """kfin wait, bounded: its lines, and whether the object went."""

        def run() -> ToolResult:
            if not 0 < timeout_seconds <= WAIT_SECONDS:
                raise UsageError(f"timeout_seconds must be more than 0 and at most {WAIT_SECONDS}")
            options, words = subject(kind, name, namespace)
            argv = ["wait", f"--timeout={timeout_seconds:g}s", *self._snapshot(), *option("--uid", uid), *options]
            answer = self.commands.run([*self.settings.before, *argv, *words])
            errors, notes = split_stderr(answer.stderr)
            if answer.code not in (ExitCode.OK, ExitCode.FOUND):
                return ToolResult(
                    "\n".join(errors) or f"error: kfin exited {answer.code}", code=answer.code, error=True
                )
            document = {
                "gone": answer.code == ExitCode.OK,
                "exitCode": answer.code,
                "lines": answer.stdout.splitlines() + notes,
            }
            return ToolResult(json.dumps(document, indent=2), document, code=answer.code)

        return self._checked(run)

    def root_causes(self) -> str:
        """The root causes of what is stuck (kfin stuck's lead), in -n or every namespace."""
        scope = self.settings.scope
        if scope.namespace is None:
            scope = replace(scope, all_namespaces=True)
        rows, sources = find_all(scope)
        document = {
            "rootCauses": [cause.to_dict() for cause in root_causes(rows)],
            "stuck": len(rows),
            "complete": all(f.inventory.complete for f in sources),
        }
        return json.dumps(document, indent=2)

    def plan_removal(self, kind: str, name: str, namespace: str | None, finalizers: list[str]) -> ToolResult:
        def run() -> ToolResult:
            subject(kind, name, namespace)
            scope = self.settings.scope
            if namespace is not None:
                scope = replace(scope, namespace=namespace)
            request = removal.RemovalRequest(kind, name, scope.namespace, tuple(finalizers))
            planned = removal.plan_removal(scope, request, self.ledger)
            document = removal.plan_document(planned, self.settings.writes.allowed)
            return ToolResult(json.dumps(document, indent=2), document, code=ExitCode.REFUSED * (not planned.digest))

        return self._checked(run)

    def apply_removal(self, digest: str, client: str) -> ToolResult:
        def run() -> ToolResult:
            scope = self.settings.scope
            with self.commands.turn("apply_removal"):  # its messages must not land in a command's captured output
                done = removal.apply_removal(
                    scope, digest, ledger=self.ledger, writes=self.settings.writes, client=client
                )
            text = json.dumps(done, indent=2)
            if not done["ok"]:
                return ToolResult(text, done, code=ExitCode.API, error=True)
            return ToolResult(text, done)

        return self._checked(run)


def check_readable(path: str) -> None:
    """A file or directory of manifests, as kfin mcp takes them: a FIFO or a device named here would hold kfin's
    commands until it ends, which may be never (kfin preflight -f reads what it is given: `<(helm template ...)`
    has a use on the command line, none through an assistant). One that does not exist is the command's to say."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise UsageError(
            f"{printable(path, one_line=True)} is not a regular file or a directory: kfin mcp reads manifests "
            "only from those (a FIFO or a device could block it for good)"
        )


def check_snapshot(path: str | None) -> None:
    if path == "-":
        raise UsageError("kfin mcp --from-snapshot: standard input carries the protocol; give a file")


WHY_STUCK = """Why is namespace {namespace} stuck in Terminating? Use kfin's tools, in this order:
1. explain with kind "namespace" and name "{namespace}": its verdicts, the evidence, and the chain of what holds it.
2. stuck with namespace "{namespace}": every object in it that is stuck, each with its verdict and blocker.
3. For the object the chain ends at, explain it (and graph it if the chain is long).
Answer with the root cause first, the evidence kfin gives for it, and its safe fix (a grant, a controller to start, a
node to mark out of service...). Never suggest removing finalizers by hand (kubectl patch, kubectl edit, or the
/finalize subresource): that leaves what the finalizer guards behind. If kfin says a removal is the right step,
call plan_removal and show the user its plan and risks; apply_removal only with the digest it gave, once the user
has approved it."""

SAFE_TO_DELETE = """Is it safe to delete {kind} {name}{where}? Use kfin's tools, in this order:
1. preflight with kind "{kind}" and name "{name}"{namespace_argument}: what the deletion would leave stuck, and the
   order of deletions that avoids it.
2. graph of the same object: what owns it and what it owns, which goes with it.
3. explain any object preflight says would be left stuck.
Answer yes only if preflight finds nothing left stuck; otherwise say what would be left, why (kfin's evidence), and
the order to delete in. Nothing is deleted by these tools: the user deletes it."""


def serve(settings: ServerSettings, commands: Commands) -> None:
    """Serve the tools over stdio until the client goes (or over streamable HTTP until stopped)."""
    try:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.types import CallToolResult, TextContent, ToolAnnotations
        from pydantic import Field
    except ImportError:
        raise ConfigError(
            "kfin mcp needs the Model Context Protocol SDK, an extra of kfin: pip install 'kfin[mcp]'"
        ) from None

    check_snapshot(settings.scope.from_snapshot)
    tools = Tools(settings, commands)
    server = MCPServer(
        "kfin",
        version=__version__,
        instructions="kfin explains why Kubernetes objects are stuck in Terminating, with evidence and the safe "
        "fix, and removes finalizers only by proof: plan_removal, then apply_removal with its digest.",
        log_level="WARNING",
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def converted(result: ToolResult) -> CallToolResult:
        content: list[Any] = [TextContent(type="text", text=result.text)]
        if result.notes and not isinstance(result.document, dict):  # a document holds its warnings itself
            content.append(TextContent(type="text", text=result.notes))
        structured = result.document if isinstance(result.document, dict) and not result.error else None
        return CallToolResult(
            content=content, structured_content=structured, is_error=result.error, _meta={"exitCode": int(result.code)}
        )

    kind_type = Annotated[
        str,
        Field(
            description="A kind, plural or short name, optionally with its group: pvc, ns, "
            "deploy.apps, widgets.example.com."
        ),
    ]
    name_type = Annotated[str, Field(description="The object's name.")]
    namespace_type = Annotated[
        str | None, Field(description="Its namespace (default: kfin mcp's -n, else the context's).")
    ]

    @server.tool(annotations=read_only)
    async def stuck(
        namespace: Annotated[str | None, Field(description="Only this namespace (default: kfin mcp's -n).")] = None,
        all_namespaces: Annotated[bool, Field(description="Every namespace, and cluster-scoped objects.")] = False,
        kinds: Annotated[list[str], Field(description="Only these types: pvc, deploy.apps...")] = [],  # noqa: B006
        verdicts: Annotated[
            list[str], Field(description="Only these verdicts: HOLDING, WAITING, STALLED, ORPHANED, UNKNOWN, BLOCKED.")
        ] = [],  # noqa: B006
        label_selector: Annotated[str | None, Field(description="kubectl's -l: app=db,tier!=web.")] = None,
        finalizer: Annotated[str | None, Field(description="Only objects with a matching finalizer (glob).")] = None,
        older_than: Annotated[str | None, Field(description="Only those terminating at least this long: 10m.")] = None,
    ) -> CallToolResult:
        """Every object stuck in Terminating, with its finalizers, verdict and blocker: kfin stuck -o json."""
        return converted(
            await _answer(
                "stuck", tools.stuck, namespace, all_namespaces, kinds, verdicts, label_selector, finalizer, older_than
            )
        )

    @server.tool(annotations=read_only)
    async def explain(kind: kind_type, name: name_type, namespace: namespace_type = None) -> CallToolResult:
        """Why each finalizer of an object is still there (verdict, evidence), and the safe fix: kfin explain."""
        return converted(await _answer("explain", tools.explain, kind, name, namespace))

    @server.tool(annotations=read_only)
    async def graph(
        kind: Annotated[str, Field(description="A kind as for explain, or namespace (its whole content).")],
        name: name_type,
        namespace: namespace_type = None,
        only_stuck: Annotated[bool, Field(description="Only stuck objects and their blocking chains.")] = False,
        owners_only: Annotated[bool, Field(description="Only ownerReferences, no blocking links.")] = False,
    ) -> CallToolResult:
        """The owner/dependent graph and what blocks what, as JSON: kfin graph -o json."""
        return converted(await _answer("graph", tools.graph, kind, name, namespace, only_stuck, owners_only))

    @server.tool(annotations=read_only)
    async def preflight(
        kind: Annotated[str | None, Field(description="The object to delete: its kind, as for explain.")] = None,
        name: Annotated[str | None, Field(description="The object's name.")] = None,
        namespace: namespace_type = None,
        manifests: Annotated[
            str | None, Field(description="Or a teardown: the YAML or JSON a `kubectl delete -f -` would read.")
        ] = None,
        filenames: Annotated[
            list[str], Field(description="Or the files or directories a `kubectl delete -f` would delete.")
        ] = [],  # noqa: B006
        recursive: Annotated[bool, Field(description="With a directory: its subdirectories too.")] = False,
        helm_release: Annotated[
            str | None, Field(description="Or a Helm release: its latest manifest, in Helm's uninstall order.")
        ] = None,
        helm_major: Annotated[
            int | None, Field(description="Helm's uninstall order of this major version: 3 or 4.", ge=3, le=4)
        ] = None,
    ) -> CallToolResult:
        """What a deletion would leave stuck, and the order that avoids it: of one object, or a teardown of
        manifests or a Helm release (kfin preflight -f, kfin preflight helm). Nothing is deleted."""
        teardown = TeardownArguments(manifests, tuple(filenames), recursive, helm_release, helm_major)
        return converted(await _answer("preflight", tools.preflight, kind, name, namespace, teardown))

    @server.tool(annotations=read_only)
    async def catalog_lookup(
        finalizer: Annotated[str, Field(description="A finalizer name: kubernetes.io/pvc-protection...")],
    ) -> CallToolResult:
        """The catalog entry kfin has for a finalizer: what it protects, its controller, the safe fix and risk."""
        return converted(await _answer("catalog_lookup", tools.catalog_lookup, finalizer))

    @server.tool(annotations=read_only)
    async def wait(
        kind: kind_type,
        name: name_type,
        namespace: namespace_type = None,
        timeout_seconds: Annotated[
            float, Field(description=f"How long to wait, at most {WAIT_SECONDS} seconds.", gt=0, le=WAIT_SECONDS)
        ] = 30,
        uid: Annotated[str | None, Field(description="The object's uid: one already gone counts as gone.")] = None,
    ) -> CallToolResult:
        """Follow a deletion until the object is gone or the timeout: whether it went, and what still holds it."""
        return converted(await _answer("wait", tools.wait, kind, name, namespace, timeout_seconds, uid))

    @server.tool(annotations=read_only)
    async def plan_removal(
        kind: kind_type,
        name: name_type,
        namespace: namespace_type = None,
        finalizers: Annotated[
            list[str], Field(description="Finalizers to remove (default: those kfin proved nothing else removes).")
        ] = [],  # noqa: B006
    ) -> CallToolResult:
        """Plan a finalizer removal as kfin remove's dry run: the exact patch, the risks, and a digest bound to the
        object's uid, resourceVersion and the finalizers; or why it is refused. Nothing is written."""
        return converted(await _answer("plan_removal", tools.plan_removal, kind, name, namespace, finalizers))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False))
    async def apply_removal(
        digest: Annotated[str, Field(description="The digest plan_removal gave, for the plan the user approved.")],
        ctx: Context,
    ) -> CallToolResult:
        """Apply a planned removal: only when kfin mcp runs with --allow-writes, the object is still as planned and
        the verdicts still allow it; guarded by a test of the uid and finalizers, recorded in the audit log."""
        params = ctx.session.client_params
        info = params.client_info if params else None
        client = f"{info.name} {info.version}".strip() if info else "an unnamed MCP client"
        return converted(await _answer("apply_removal", tools.apply_removal, digest, client))

    @server.resource(ROOT_CAUSES_URI, name="root-causes", mime_type="application/json")
    async def root_cause_summary() -> str:
        """The root causes of what is stuck: the few things the stuck objects wait on, each with the step that frees
        them (kfin stuck's lead)."""
        try:
            summary: str = await _in_thread(tools.root_causes)
            return summary
        except KfinError as error:
            return json.dumps({"error": one_line(error.message)})
        except TimeoutError:
            return json.dumps({"error": unanswered("the root causes")})

    @server.prompt()
    def why_is_namespace_stuck(namespace: str) -> str:
        """Why is namespace X stuck in Terminating: the tools to call, in order."""
        return WHY_STUCK.format(namespace=namespace)

    @server.prompt()
    def is_it_safe_to_delete(kind: str, name: str, namespace: str | None = None) -> str:
        """Is it safe to delete an object: the tools to call, in order."""
        return SAFE_TO_DELETE.format(
            kind=kind,
            name=name,
            where=f" in namespace {namespace}" if namespace else "",
            namespace_argument=f' and namespace "{namespace}"' if namespace else "",
        )

    if settings.listen is None:
        server.run()
        _end_process()  # the client went away
    else:
        host, port = settings.listen
        server.run("streamable-http", host=host, port=port)


def _end_process() -> NoReturn:
    """End kfin mcp once its client has closed stdin, exit code 0, even with a call still running: its thread
    cannot be stopped, and the interpreter's exit would wait for it. The exit handlers run first (the files a
    kubeconfig's certificate data was written to are removed)."""
    atexit._run_exitfuncs()
    for stream in (sys.__stdout__, sys.__stderr__):  # sys.stdout may be a running command's capture
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()  # type: ignore[union-attr]
    os._exit(ExitCode.OK)


async def _answer(tool: str, function: Callable[..., ToolResult], *args: Any) -> ToolResult:
    """A tool's answer, or, after CALL_SECONDS, the error that it has none yet."""
    try:
        result: ToolResult = await _in_thread(function, *args)
        return result
    except TimeoutError:
        return failed(unanswered(f"kfin mcp's {tool}"), ExitCode.UNREACHABLE)


def unanswered(what: str) -> str:
    return (
        f"{what} did not answer within {CALL_SECONDS:g} s; its command goes on running, and holds kfin mcp's "
        "commands until it ends (restart kfin mcp to stop it)"
    )


async def _in_thread(function: Callable[..., Any], *args: Any) -> Any:
    """Off the event loop: kfin's reads block, and the protocol's pings must still be answered. TimeoutError after
    CALL_SECONDS. A thread cannot be stopped: past the deadline, or when the client cancels the call or goes away,
    it is left to end on its own (abandoned), so that the protocol loop never waits for it."""
    import anyio  # the SDK's dependency

    with anyio.fail_after(CALL_SECONDS):
        return await anyio.to_thread.run_sync(lambda: function(*args), abandon_on_cancel=True)
