"""The path of one object as `kubectl ... --raw PATH` takes it, in a step kfin suggests: made by kfin.api.paths (the
one place paths are built, percent-encoded), so that the causes, which never reach the API, can name it."""

from __future__ import annotations

from kfin.api.paths import resource_path
from kfin.model import ResourceType


def raw_path(rtype: ResourceType, namespace: str | None, name: str | None) -> str:
    """The object's path under the server's root, each segment percent-encoded."""
    return resource_path(rtype, namespace, name)
