"""Discovery of every listable resource type, revalidated on every scan.

kfin asks /api and /apis for aggregated discovery (one document each, every group, version and kind)
with the ETags it saw last: the server answers 304 while nothing changed, and the new document as soon
as anything did, a new kind joining a known group version included. So a scan always covers every type
the server serves, at the cost of two small requests. Group versions that aggregated discovery leaves
out or marks stale (an APIService without backend) and servers without aggregated discovery are read
the legacy way, one /apis/GROUP/VERSION each, and their failures are reported. The cache on disk also
serves shell completion.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kfin.api.connection import Kube
from kfin.api.resources import aggregated_versions, parse_aggregated, parse_resource_list
from kfin.api.shapes import ShapeError, resource_problem
from kfin.errors import ForbiddenError, KfinError, NotFoundError, UnreachableError
from kfin.model import JSON, STORAGE_READ_ERROR, Failure, ResourceType
from kfin.util.parallel import ordered

# "group/version", or "v1" for the core group: what a cached discovery failure names
DISCOVERY_TARGET = re.compile(r"(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?[a-z0-9]{1,63}")


def cache_root() -> Path:
    return Path(os.environ.get("KFIN_CACHE_DIR") or Path("~/.kube/cache/kfin").expanduser())


def cache_file(server: str) -> Path:
    return cache_root() / re.sub(r"[^A-Za-z0-9._-]", "_", server) / "discovery.json"


def failure_of(what: str, target: str, error: KfinError) -> Failure:
    if isinstance(error, ForbiddenError):
        reason = "Forbidden"
    elif isinstance(error, UnreachableError):
        reason = "Timeout" if "in time" in error.message else "Unreachable"
    else:
        reason = getattr(error, "reason", "") or "Error"
    keys: tuple[str, ...] = ()
    if reason == STORAGE_READ_ERROR:  # details.causes[].field: each key that could not be read (KEP-3926)
        keys = tuple(c["field"] for c in getattr(error, "causes", ()) if c.get("field"))
    return Failure(what, target, reason, error.message, keys)


def no_longer_served(kube: Kube, rtype: ResourceType) -> bool:
    """Whether a type discovery listed is gone since (its list answered 404): a CRD deleted while kfin scanned.
    Its group version no longer exists, or no longer lists it; anything else (a 404 from an aggregated API's
    backend, a failed discovery) is not taken for it."""
    try:
        served = parse_resource_list(rtype.group, rtype.version, kube.resource_list(rtype.group, rtype.version))
    except NotFoundError:
        return True
    except KfinError:
        return False
    return not any(r.resource == rtype.resource for r in served)


def read_cache(path: Path) -> JSON | None:
    """The cached discovery, or None when missing, unreadable or of the wrong shape (it is rebuilt)."""
    try:
        cached = json.loads(path.read_text())
        if (
            not isinstance(cached, dict)
            or not isinstance(cached.get("groupVersions"), list)
            or not isinstance(cached.get("etags"), dict)
            or not isinstance(cached.get("resources"), list)
            or any(resource_problem(r) for r in cached["resources"])
            or not isinstance(cached.setdefault("failed", []), list)
            or any(not isinstance(t, str) or DISCOVERY_TARGET.fullmatch(t) is None for t in cached["failed"])
        ):
            return None
        cached["types"] = [ResourceType.from_dict(r) for r in cached["resources"]]
        return cached
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def cached_resources(server: str) -> list[ResourceType] | None:
    """What the cache knows of a server, however old (for shell completion, which must not wait)."""
    cached = read_cache(cache_file(server))
    return cached["types"] if cached else None


def discover(kube: Kube, refresh: bool = False) -> tuple[list[ResourceType], list[Failure]]:
    """Resource types of the server behind `kube`, current as of now; `refresh` ignores the cache."""
    path = cache_file(kube.server)
    cached = None if refresh else read_cache(path)
    etags = cached["etags"] if cached else {}
    # the three at once (one round trip, not three); the ETags count only if the groups are still the same
    answers = ordered(
        _attempt,
        [
            kube.api_groups,
            lambda: kube.aggregated_discovery("/api", etags.get("/api")),
            lambda: kube.aggregated_discovery("/apis", etags.get("/apis")),
        ],
        3,
    )
    for answer in answers:
        if isinstance(answer, KfinError):
            raise answer
    groups, (core_doc, core_etag), (apis_doc, apis_etag) = answers
    group_versions = sorted(f"{g}/{v}" for g, versions, _ in groups for v in versions)
    if cached is not None and cached["groupVersions"] != group_versions:
        cached = None  # a 304 below is then asked again, without its ETag
    if core_doc is None and apis_doc is None and cached is not None:  # both unchanged since it was written
        if not cached["failed"]:
            return cached["types"], []
        return _retry_failed(kube, path, cached)
    if core_doc is None:  # only one of them changed: the other's document is needed too
        core_doc, core_etag = kube.aggregated_discovery("/api", None)
    if apis_doc is None:
        apis_doc, apis_etag = kube.aggregated_discovery("/apis", None)
    assert core_doc is not None and apis_doc is not None  # asked again without an ETag: never 304
    resources, failures = _resources(kube, groups, core_doc, apis_doc)
    if core_etag and apis_etag:  # a partial one too, with what failed: only that is asked again next time
        _save(
            path,
            {
                "savedAt": time.time(),
                "server": kube.server,
                "groupVersions": group_versions,
                "etags": {"/api": core_etag, "/apis": apis_etag},
                "resources": [r.to_dict() for r in resources],
                "failed": [f.target for f in failures],
            },
        )
    return resources, failures


def _attempt(call: Callable[[], Any]) -> Any:
    """The answer of one of several requests made at once, or its error (KfinError), for the caller to
    raise or report in the requests' order."""
    try:
        return call()
    except KfinError as error:
        return error


def _retry_failed(kube: Kube, path: Path, cached: JSON) -> tuple[list[ResourceType], list[Failure]]:
    """The cached types, and the group versions that failed last time asked again (one request each): those
    that answer now join the cache; the others are reported again, and completion still has every other kind."""

    def fetch(target: str) -> list[ResourceType]:
        group, _, version = target.rpartition("/")
        return parse_resource_list(group, version, kube.resource_list(group, version))

    types, failures, still = list(cached["types"]), [], []
    answers = ordered(lambda target: _attempt(lambda: fetch(target)), cached["failed"], 8)
    for target, result in zip(cached["failed"], answers, strict=True):
        if isinstance(result, KfinError):
            failures.append(failure_of("discovery", target, result))
            still.append(target)
        else:
            types += result
    if still != cached["failed"]:
        kept = {k: cached.get(k) for k in ("savedAt", "server", "groupVersions", "etags")}
        _save(path, dict(kept, resources=[r.to_dict() for r in types], failed=still))
    return types, failures


def _resources(
    kube: Kube, groups: list[tuple[str, list[str], str]], core_doc: JSON, apis_doc: JSON
) -> tuple[list[ResourceType], list[Failure]]:
    """Core first, then groups in the server's priority order (earlier types win a tie, as in kubectl)."""
    core = aggregated_versions(core_doc, f"GET /api of {kube.shown}", core=True)
    aggregated = aggregated_versions(apis_doc, f"GET /apis of {kube.shown}")
    wanted = [("", "v1")] + [(group, preferred) for group, _, preferred in groups]
    found: dict[tuple[str, str], list[ResourceType] | KfinError] = {}
    legacy: list[tuple[str, str]] = []
    for group, version in wanted:
        entry = (core if not group else aggregated).get((group, version))
        if entry is None or entry.get("freshness", "Current") != "Current":
            legacy.append((group, version))
            continue
        try:
            found[(group, version)] = parse_aggregated(group, version, entry)
        except ShapeError as error:
            found[(group, version)] = error

    def fetch(gv: tuple[str, str]) -> tuple[tuple[str, str], list[ResourceType] | KfinError]:
        group, version = gv
        try:
            return gv, parse_resource_list(group, version, kube.resource_list(group, version))
        except KfinError as error:
            return gv, error

    found.update(ordered(fetch, legacy, 8))
    core_types = found[("", "v1")]
    if isinstance(core_types, KfinError):
        raise core_types  # without the core group there is no scan to speak of
    if not any(r.resource == "namespaces" for r in core_types):
        raise ShapeError(
            f"discovery of {kube.shown} lists no namespaces: it does not answer as a Kubernetes API server"
        )
    resources, failures = [], []
    for group, version in wanted:
        result = found[(group, version)]
        if isinstance(result, KfinError):
            failures.append(failure_of("discovery", f"{group}/{version}" if group else version, result))
        else:
            resources += result
    # A resource its group serves only in another version than the preferred one (an alpha API beside a stable
    # one: scheduling.k8s.io/v1alpha2's PodGroups while v1 is preferred) is found as kubectl finds it, in the
    # first version that serves it; from the aggregated document, which holds every version: no request more.
    served = {(r.group, r.resource) for r in resources}
    for group, versions, preferred in groups:
        for version in versions:
            entry = aggregated.get((group, version))
            if version == preferred or entry is None or entry.get("freshness", "Current") != "Current":
                continue
            try:
                more = [r for r in parse_aggregated(group, version, entry) if (r.group, r.resource) not in served]
            except ShapeError:
                continue  # the preferred version's types stand; this one adds nothing it cannot read
            resources += more
            served |= {(r.group, r.resource) for r in more}
    return resources, failures


def _save(path: Path, document: JSON) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(document))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home is no reason to fail
