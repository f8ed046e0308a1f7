"""What a command reads: the connection flags, which contexts (or a file), and how."""

from __future__ import annotations

from msgspec import Struct, field

from kfin.api.target import Target
from kfin.core.read.catalog import Catalog


class Scope(Struct, frozen=True):
    """What a command reads: the connection flags, which contexts (or a file), and how. Its target carries the
    command's settings (kfin.settings: -v) to every connection made for it; its catalog reaches the reads through
    the reader made of it (kfin.core.read.reader.reader_for)."""

    target: Target = field(default_factory=Target)
    namespace: str | None = None  # -n; None: the context's
    all_namespaces: bool = False
    contexts: tuple[str, ...] = ()  # several contexts: each scanned; none: the target's
    from_snapshot: str | None = None
    refresh: bool = False  # rediscover the API instead of using the cache
    concurrency: int = 16
    chunk_size: int = 500
    # the command's catalog (--catalog FILE, read after the shipped catalog and the user's catalog.d)
    catalog: Catalog = field(default_factory=Catalog)
    # send the writes a deletion still needs as dry runs (dryRun=All): explain, stuck, preflight and graph, unless
    # --no-dry-run
    dry_run: bool = False

    def namespace_of(self, context_namespace: str) -> str | None:
        """The namespace a scan covers: None for all of them, else -n or the context's."""
        if self.all_namespaces:
            return None
        return self.namespace or context_namespace
