"""Talking to `kfin mcp` as an MCP host does: the SDK's own client, over stdio, with kfin started as a process."""

import json
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import Implementation

ROOT = Path(__file__).resolve().parents[1]
CLIENT = Implementation(name="kfin-tests", version="1.0")


def with_kfin_mcp(args, body):
    """Start `python -m kfin mcp ARGS`, initialize a session, and run `await body(session)`; its value is returned."""

    async def run():
        server = StdioServerParameters(command=sys.executable, args=["-m", "kfin", "mcp", *map(str, args)], cwd=ROOT)
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write, client_info=CLIENT) as session:
                await session.initialize()
                with anyio.fail_after(120):
                    return await body(session)

    return anyio.run(run)


def text(result) -> str:
    return result.content[0].text


def document(result) -> dict:
    """A tool's answer that is not an error, as JSON (and its structured content, which says the same)."""
    assert not result.is_error, text(result)
    answer = json.loads(text(result))
    assert result.structured_content == answer
    return answer


def error_line(result) -> str:
    """A tool's error: one `error:` line, as kfin prints it."""
    assert result.is_error, text(result)
    line = text(result)
    assert line.startswith("error: ") and "\n" not in line, line
    return line
