"""kfin mcp when a tool call does not end (a hostile input, a cluster that never answers): later calls answer that
it still runs instead of waiting behind it, the slow call itself answers past kfin mcp's deadline, and the process
ends when its client closes stdin, the call still running. The slow call is a kfin command made to block for good,
in the kfin mcp process itself (LAUNCH); its bounds are made short there so that the tests wait seconds, not
minutes (the values kfin mcp uses are docs/commands/mcp.md's)."""

import json
import os
import re
import subprocess
import sys

import anyio
import pytest

pytest.importorskip("mcp", reason="kfin mcp's extra (pip install -e '.[test]' installs it)")

from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.mcp_client import CLIENT, ROOT, document, error_line, with_kfin_mcp

SNAPSHOT = ROOT / "examples" / "stuck-cluster.json"
LOCK_SECONDS = 1  # how long a call waits for the one before it, in the launched kfin mcp
CALL_SECONDS = 3  # how long a call may take to answer, in the launched kfin mcp
BOUND = 120  # how long the tests wait for what they expect: a bound on a hang, never a timing

# `python -c LAUNCH STARTED mcp ...`: kfin mcp whose commands block for good when their arguments hold the name
# "hang", once they have created the file STARTED (then a call holds kfin's commands).
LAUNCH = f"""
import sys, threading
from pathlib import Path
from kfin.commands.app import main
from kfin.mcp import server

started, sys.argv = Path(sys.argv[1]), ["kfin", *sys.argv[2:]]
server.LOCK_SECONDS, server.CALL_SECONDS = {LOCK_SECONDS}, {CALL_SECONDS}
never = threading.Event()
run_command = server.Commands._main

def blocking(commands, argv):
    if "hang" in argv:
        started.touch()
        never.wait()
    return run_command(commands, argv)

server.Commands._main = blocking
main()
"""


def launched(started):
    return [sys.executable, "-c", LAUNCH, str(started), "mcp", "--from-snapshot", str(SNAPSHOT)]


async def until_exists(path):
    with anyio.fail_after(BOUND):
        while not path.exists():
            await anyio.sleep(0.05)


def test_a_call_that_never_ends_holds_no_other_call_and_answers_at_the_deadline(tmp_path):
    started = tmp_path / "started"

    async def run():
        command, *args = launched(started)
        server = StdioServerParameters(command=command, args=args, cwd=ROOT)
        async with stdio_client(server) as (read, write), ClientSession(read, write, client_info=CLIENT) as session:
            await session.initialize()
            answers = {}
            with anyio.fail_after(BOUND):
                async with anyio.create_task_group() as group:

                    async def hanging():
                        answers["hanging"] = await session.call_tool("explain", {"kind": "ns", "name": "hang"})

                    group.start_soon(hanging)
                    await until_exists(started)  # the hanging call holds kfin's commands
                    answers["queued"] = await session.call_tool("stuck", {"all_namespaces": True})
                    answers["catalog"] = await session.call_tool("catalog_lookup", {"finalizer": "kubernetes"})
            return answers

    answers = anyio.run(run)
    assert re.fullmatch(
        r"error: another call is still running \(kfin explain, for \d+ s\) and kfin mcp runs one command at a "
        f"time: waited {LOCK_SECONDS} s; call again once it has answered",
        error_line(answers["queued"]),
    )
    assert answers["queued"].meta == {"exitCode": 4}
    assert error_line(answers["hanging"]) == (
        f"error: kfin mcp's explain did not answer within {CALL_SECONDS} s; its command goes on running, and holds "
        "kfin mcp's commands until it ends (restart kfin mcp to stop it)"
    )
    assert document(answers["catalog"])["finalizer"] == "kubernetes"  # what needs no command still answers


def message(body):
    return (json.dumps(body) + "\n").encode()


def test_kfin_mcp_ends_when_its_client_closes_stdin_with_a_call_still_running(tmp_path):
    started = tmp_path / "started"
    process = subprocess.Popen(
        launched(started), cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "kfin-tests", "version": "1"},
        }
        process.stdin.write(message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        process.stdin.write(message({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        call = {"name": "explain", "arguments": {"kind": "ns", "name": "hang"}}
        process.stdin.write(message({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}))
        process.stdin.flush()
        anyio.run(until_exists, started)  # the call is running
        process.stdin.close()  # the client went away
        assert process.wait(timeout=BOUND) == 0, process.stderr.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_preflight_reads_manifests_only_from_regular_files_and_directories(tmp_path):
    """A FIFO would block the command for good (nothing writes to it), a device might never end: refused before
    kfin's command runs, so no call is left holding the others."""
    fifo = tmp_path / "manifests.yaml"
    os.mkfifo(fifo)

    async def body(session):
        return [
            await session.call_tool("preflight", {"filenames": [str(fifo)]}),
            await session.call_tool("preflight", {"filenames": ["/dev/zero"]}),
            await session.call_tool("stuck", {"all_namespaces": True}),  # and the next call answers
        ]

    fifo_answer, device_answer, after = with_kfin_mcp(["--from-snapshot", SNAPSHOT], body)
    refusal = "is not a regular file or a directory: kfin mcp reads manifests only from those"
    assert error_line(fifo_answer) == f"error: {fifo} {refusal} (a FIFO or a device could block it for good)"
    assert error_line(device_answer) == f"error: /dev/zero {refusal} (a FIFO or a device could block it for good)"
    assert fifo_answer.meta == {"exitCode": 2}
    assert document(after)["kind"]
