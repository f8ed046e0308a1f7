"""A CRD's conversion webhook, which the fake can never call (it has no backends): what reads and writes of a
custom resource in another version than its storage version answer, as the real tier answered them
(kube-apiserver v1.36.2, a CRD stored in v1beta1, served first in v1, its webhook's Service missing):

- a read or write of one object, a paginated list (`limit`) and the namespace controller's deletecollection,
  where objects are: 500, the converter's error as the message (no reason);
- an unpaginated list anywhere (served by the watch cache, which cannot (re)initialize while any stored object
  needs the conversion), and the namespace controller's deletecollection of a namespace holding none of them:
  429 TooManyRequests "storage is (re)initializing: failed to list G/V, Kind=K: ..." with retryAfterSeconds;
- a list where no object is, paginated: 200, nothing to convert.

Simplified: every object counts as stored in the current storage version, and the watch cache fails from the
moment such an object exists (the real one fails when it (re)initializes: at the CRD's update that turns the
webhook on, as the scenarios do it)."""

from . import status as st
from .cluster import ResourceType

CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
SERVICES = ("", "services")


def failing_conversion(cluster, rt: ResourceType) -> str | None:
    """The converter's error for a custom resource type whose preferred version is not its storage version,
    behind a conversion webhook (strategy Webhook), when one of its objects is stored; None otherwise."""
    if rt.origin != "crd":
        return None
    crd = cluster.find(cluster.types[CRDS], "", f"{rt.name}.{rt.group}")
    conversion = ((crd or {}).get("spec") or {}).get("conversion") or {}
    versions = cluster.group_versions.get(rt.group) or []
    if conversion.get("strategy") != "Webhook" or not versions or versions[0] == rt.version:
        return None
    if not cluster.list(rt, None):
        return None
    service = ((conversion.get("webhook") or {}).get("clientConfig") or {}).get("service") or {}
    name, namespace = service.get("name", ""), service.get("namespace", "")
    url = f"https://{name}.{namespace}.svc:{service.get('port') or 443}{service.get('path') or '/'}?timeout=30s"
    found = cluster.find(cluster.types[SERVICES], namespace, name) is not None
    reason = f'no endpoints available for service "{name}"' if found else f'service "{name}" not found'
    return f'conversion webhook for {rt.group}/{rt.version}, Kind={rt.kind} failed: Post "{url}": {reason}'


def converter_error(message: str) -> st.APIError:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "code": 500}
    return st.APIError(500, body)


def reinitializing(rt: ResourceType, version: str, message: str) -> st.APIError:
    return st.failure(429, "TooManyRequests",
                      f"storage is (re)initializing: failed to list {rt.group}/{version}, Kind={rt.kind}: {message}",
                      {"retryAfterSeconds": 1})


def check(cluster, verb: str, rt: ResourceType, version: str, namespace: str | None, name: str | None,
          paginated: bool) -> None:
    """Raise what kube-apiserver answers a request for `rt` in `version` (see the module's docstring)."""
    if version == rt.version or verb in ("create", "watch"):
        return
    message = failing_conversion(cluster, rt)
    if message is None:
        return
    if verb in ("list", "deletecollection"):
        here = bool(cluster.list(rt, namespace))
        if here and (paginated or verb == "deletecollection"):
            raise converter_error(message)
        if paginated:
            return
        raise reinitializing(rt, version, message)
    if name is not None and cluster.find(rt, namespace or "", name) is not None:
        raise converter_error(message)


def namespace_deletion_error(cluster, rt: ResourceType, namespace: str) -> str | None:
    """What the namespace controller's deletecollection of `rt` (in its preferred version) in `namespace` fails
    with, as the message of condition NamespaceDeletionContentFailure shows it; None when it succeeds."""
    versions = cluster.group_versions.get(rt.group) or [rt.version]
    try:
        check(cluster, "deletecollection", rt, versions[0], namespace, None, paginated=False)
    except st.APIError as error:
        return error.body["message"]
    return None
