"""Where a command points: the kubectl-style connection flags (kept apart from the connection, which
`kfin --help` need not import)."""

from __future__ import annotations

from msgspec import Struct, field

from kfin.settings import Settings


class Target(Struct, frozen=True):
    """The kubeconfig, its context and the request deadline a connection is made from, and the settings of the
    command that makes it (its -v)."""

    kubeconfig: str | None = None
    context: str | None = None
    request_timeout: float | None = None
    settings: Settings = field(default_factory=Settings)
