"""Objects whose stored bytes kube-apiserver cannot decode (a lost encryption key, a bad write): what reads of their
type answer, as the real tier answered them (kube-apiserver v1.36.2, bytes that are no protobuf written under
/registry/configmaps/NS/NAME in its etcd: tests/control_plane.py's etcd_put):

- the AllowUnsafeMalformedObjectDeletion feature gate off (alpha, off by default in v1.36): a GET of the object, a
  paginated list (`limit`) where it lies and the namespace controller's deletecollection: 500, the decoder's
  error as the message and no reason ("proto: wrong wireType = 7 for field TypeMeta");
- the gate on (seen with a second kube-apiserver started with --feature-gates=AllowUnsafeMalformedObjectDeletion=
  true on the same etcd): a paginated list and the deletecollection, 500 reason StorageReadError "failed to read one
  or more configmaps from the storage", details {name: list, kind: configmaps, causes: [{reason:
  UnexpectedServerResponse, message: "StorageError: corrupt object, Code: 7, Key: /registry/configmaps/NS/NAME,
  ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=N: proto: ...", field:
  "/registry/configmaps/NS/NAME"}]}; a GET, 500 InternalError "Internal error occurred: StorageError: corrupt
  object, Code: 7, Key: /configmaps/NS/NAME, ..." (that key without /registry);
- an unpaginated list anywhere (served by the watch cache, which cannot (re)initialize while the key is there):
  429 TooManyRequests "storage is (re)initializing: failed to list *core.ConfigMap: <the list's error>" with
  retryAfterSeconds;
- a paginated list of another namespace: 200.

Simplified: the watch cache fails from the moment the key is written (the real one within a second), and the
revision in the messages is the fake's resourceVersion at the write. Built-in types only (the internal type's name,
*core.ConfigMap, is the group's first label)."""

from . import status as st
from .cluster import ResourceType

GATE = "AllowUnsafeMalformedObjectDeletion"
PROTO_ERROR = "proto: wrong wireType = 7 for field TypeMeta"  # what the real tier's bytes decode to


def _stored(cluster) -> dict:
    """(group, resource, namespace, name) -> (the decoder's error, the revision written)."""
    if not hasattr(cluster, "undecodable"):
        cluster.undecodable = {}
    return cluster.undecodable


def write(cluster, rt: ResourceType, namespace: str, name: str, error: str = PROTO_ERROR) -> str:
    """The fake's equivalent of writing undecodable bytes under the object's key in etcd; returns the key."""
    with cluster.lock:
        _stored(cluster)[(rt.group, rt.name, namespace, name)] = (error, cluster.current_rv)
        cluster.changed.notify_all()
    return key(rt, namespace, name)


def remove(cluster, rt: ResourceType, namespace: str, name: str) -> None:
    with cluster.lock:
        _stored(cluster).pop((rt.group, rt.name, namespace, name), None)


def key(rt: ResourceType, namespace: str, name: str) -> str:
    return f"/registry/{rt.name}/{namespace}/{name}"


def _gate_on(cluster) -> bool:
    return GATE in (getattr(cluster, "feature_gates", None) or ())


def _corrupt(rt: ResourceType, namespace: str, name: str, error: str, revision, prefix: str = "/registry") -> str:
    return (f"StorageError: corrupt object, Code: 7, Key: {prefix}/{rt.name}/{namespace}/{name}, ResourceVersion: 0, "
            f"AdditionalErrorMsg: object not decodable revision={revision}: {error}")


def _bare(message: str) -> st.APIError:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "code": 500}
    return st.APIError(500, body)


def _list_error(cluster, rt: ResourceType, found: list) -> st.APIError:
    if not _gate_on(cluster):
        return _bare(found[0][1][0])
    causes = [{"reason": "UnexpectedServerResponse", "message": _corrupt(rt, ns, name, error, revision),
               "field": f"/registry/{rt.name}/{ns}/{name}"} for (_, _, ns, name), (error, revision) in found]
    return st.failure(500, "StorageReadError", f"failed to read one or more {rt.name} from the storage",
                      {"name": "list", "kind": rt.name, "causes": causes})


def check(cluster, verb: str, rt: ResourceType, namespace: str | None, name: str | None, paginated: bool) -> None:
    """Raise what kube-apiserver answers a request for `rt` while objects of it cannot be decoded (see the module's
    docstring)."""
    if verb in ("create", "watch"):
        return
    stored = _stored(cluster)
    of_type = [(k, v) for k, v in sorted(stored.items()) if k[:2] == (rt.group, rt.name)]
    if not of_type:
        return
    if verb in ("list", "deletecollection"):
        here = [(k, v) for k, v in of_type if namespace is None or k[2] == namespace]
        if here and (paginated or verb == "deletecollection"):
            raise _list_error(cluster, rt, here)
        if paginated or verb == "deletecollection":
            return
        error = _list_error(cluster, rt, of_type).body["message"]
        internal = f"*{rt.group.split('.')[0] or 'core'}.{rt.kind}"
        raise st.failure(429, "TooManyRequests", f"storage is (re)initializing: failed to list {internal}: {error}",
                         {"retryAfterSeconds": 1})
    found = stored.get((rt.group, rt.name, namespace or "", name or ""))
    if found is None:
        return
    if not _gate_on(cluster):
        raise _bare(found[0])
    corrupt = _corrupt(rt, namespace or "", name or "", found[0], found[1], prefix="")
    raise st.failure(500, "InternalError", f"Internal error occurred: {corrupt}", {"causes": [{"message": corrupt}]})


def namespace_deletion_error(cluster, rt: ResourceType, namespace: str) -> str | None:
    """What the namespace controller's deletecollection of `rt` in `namespace` fails with, as the message of its
    condition NamespaceDeletionContentFailure shows it; None when it succeeds."""
    try:
        check(cluster, "deletecollection", rt, namespace, None, paginated=False)
    except st.APIError as error:
        return error.body["message"]
    return None
