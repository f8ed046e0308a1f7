"""What kfin is: its version and the Kubernetes client's (`kfin --version`, kept light for start-up)."""

from __future__ import annotations

import sys

import typer

from kfin import __version__


def client_version() -> str:
    """The installed kubernetes package's version."""
    import importlib.metadata  # 20 ms: only for --version and `kfin version`

    try:
        return importlib.metadata.version("kubernetes")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def print_version(value: bool) -> None:
    """--version: print and exit."""
    if value:  # an eager flag: Click calls it before the root callback makes the command's console
        typer.echo(f"kfin {__version__} (kubernetes client {client_version()}, Python {sys.version.split()[0]})")
        raise typer.Exit()
