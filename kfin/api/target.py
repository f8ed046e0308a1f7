"""Where a command points: the kubectl-style connection flags (kept apart from the connection, which
`kfin --help` need not import)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """The kubeconfig, its context and the request deadline a connection is made from."""

    kubeconfig: str | None = None
    context: str | None = None
    request_timeout: float | None = None
