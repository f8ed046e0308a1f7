"""One command's choices that the connection acts on, as one value: built once by the command
(kfin.commands.flags.Options) and carried with its Target to the connection, never kept in a module's globals. In
one process (kfin serve, kfin guard, kfin mcp, a fleet worker, a test session) one command's -v thus never reaches
the next. The command's catalog reaches core through its Scope alone (kfin.core.read.scope, kfin.core.read.reader)."""

from __future__ import annotations

from msgspec import Struct


class Settings(Struct, frozen=True):
    """What a command chose that the layers under it act on."""

    # kubectl's -v: at 6 a line per request on stderr, at 8 with headers and answers (kfin.api.trace)
    trace: int = 0
