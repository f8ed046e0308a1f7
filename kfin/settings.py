"""One command's choices, as one value: built once by the command (kfin.commands.flags.Options) and carried with
its Target to the connection, scans and facts, never kept in a module's globals. In one process (kfin serve, kfin
guard, kfin mcp, a fleet worker, a test session) one command's -v or --catalog thus never reaches the next.

It sits in the shared base because api/ and core/ both read it; the catalog itself (kfin.core.catalog.Catalog) is
a core value, seen here only as what api/ asks of it: which fields to keep of an object read whole."""

from __future__ import annotations

from typing import Protocol

from msgspec import Struct, field


class KeptFields(Protocol):
    """The fields to keep too when objects of a type are read whole, beyond kfin.api.scan.REDUCED_FIELDS."""

    def kept_fields(self, group: str, resource: str) -> tuple[str, ...]: ...


class NoKeptFields(Struct, frozen=True):
    """Settings' kept fields when a command keeps none beyond kfin's own."""

    def kept_fields(self, group: str, resource: str) -> tuple[str, ...]:
        return ()


class Settings(Struct, frozen=True):
    """What a command chose that the layers under it act on."""

    # kubectl's -v: at 6 a line per request on stderr, at 8 with headers and answers (kfin.api.trace)
    trace: int = 0
    # the catalog of ecosystem finalizers the command reads (kfin.core.catalog.Catalog): the fields its related
    # holders match and describe are kept of the objects read whole
    catalog: KeptFields = field(default_factory=NoKeptFields)
