"""Discovery of every listable resource type, cached on disk for a short time like kubectl's cache."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from kfin.errors import ForbiddenError, KfinError, UnreachableError
from kfin.model import Failure, ResourceType
from kfin.resources import parse_discovery

CACHE_TTL_SECONDS = 600


def cache_root() -> Path:
    return Path(os.environ.get("KFIN_CACHE_DIR") or Path("~/.kube/cache/kfin").expanduser())


def _cache_file(server: str) -> Path:
    return cache_root() / re.sub(r"[^A-Za-z0-9._-]", "_", server) / "discovery.json"


def failure_of(what: str, target: str, error: KfinError) -> Failure:
    if isinstance(error, ForbiddenError):
        reason = "Forbidden"
    elif isinstance(error, UnreachableError):
        reason = "Timeout" if "in time" in error.message else "Unreachable"
    else:
        reason = getattr(error, "reason", "") or "Error"
    return Failure(what, target, reason, error.message)


def discover(kube, refresh: bool = False) -> tuple[list[ResourceType], list[Failure]]:
    """Resource types of the server behind `kube`; served from the cache when it is fresh and complete."""
    path = _cache_file(kube.server)
    group_versions = kube.group_versions()
    if not refresh:
        try:
            cached = json.loads(path.read_text())
            # Fresh, and no API group or version came or went since (a new CRD group shows at once).
            if time.time() - cached["savedAt"] < CACHE_TTL_SECONDS and cached["groupVersions"] == group_versions:
                return [ResourceType.from_dict(r) for r in cached["resources"]], []
        except (OSError, ValueError, KeyError):
            pass
    core, groups, failed = kube.discovery_documents()
    resources = parse_discovery(core, groups)
    failures = [failure_of("discovery", gv, error) for gv, error in failed]
    if not failures:  # a partial discovery is not cached: the next run must try the failing group again
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"savedAt": time.time(), "server": kube.server, "groupVersions": group_versions,
                                       "resources": [r.to_dict() for r in resources]}))
            tmp.replace(path)
        except OSError:
            pass  # a read-only home is no reason to fail
    return resources, failures
