"""The shape of what kfin reads: an answer (or a snapshot item) of the wrong shape is an error that
names what was wrong, never an empty result taken for "nothing stuck" and never a crash.

Only the fields kfin uses are checked, with the types the API server gives them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kfin.errors import APIError
from kfin.model import JSON

# A field's check: true when the value has the shape the API server gives it
Check = Callable[[Any], bool]


class ShapeError(APIError):
    """An answer that is not what the Kubernetes API gives (exit 9, or a failure of that type)."""

    def __init__(self, message: str):
        super().__init__(message, 0, "BadResponse")


def type_name(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


# metadata field -> (check, what it must be)
METADATA_FIELDS: dict[str, tuple[Check, str]] = {
    "name": (lambda v: isinstance(v, str), "a string"),
    "namespace": (lambda v: isinstance(v, str), "a string"),
    "uid": (lambda v: isinstance(v, str), "a string"),
    "resourceVersion": (lambda v: isinstance(v, str), "a string"),
    "deletionTimestamp": (lambda v: v is None or (isinstance(v, str) and is_time(v)), "an RFC 3339 time"),
    "creationTimestamp": (lambda v: v is None or isinstance(v, str), "a string"),
    "deletionGracePeriodSeconds": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), "a number"),
    "finalizers": (lambda v: v is None or _is_str_list(v), "a list of strings"),
    "labels": (lambda v: v is None or isinstance(v, dict), "an object"),
    "annotations": (lambda v: v is None or isinstance(v, dict), "an object"),
    "ownerReferences": (
        lambda v: (
            v is None
            or (
                isinstance(v, list)
                and all(
                    isinstance(r, dict)
                    and all(isinstance(r.get(k, ""), str) for k in ("apiVersion", "kind", "name", "uid"))
                    and all(r.get(k) is None or isinstance(r[k], bool) for k in ("controller", "blockOwnerDeletion"))
                    for r in v
                )
            )
        ),
        "a list of owner references (objects with string apiVersion, kind, name and uid, and boolean controller "
        "and blockOwnerDeletion)",
    ),
}


def metadata_problem(meta: Any, named: bool = True) -> str | None:
    """What is wrong with an object's metadata, or None."""
    if not isinstance(meta, dict):
        return f"metadata is {type_name(meta)}, not an object"
    if named and not (isinstance(meta.get("name"), str) and meta.get("name")):
        return "metadata.name is missing" if "name" not in meta else "metadata.name is not a non-empty string"
    if _well_formed(meta):  # every item of every scan comes here: the common case in straight-line code
        return None
    for field, (ok, wanted) in METADATA_FIELDS.items():
        if field in meta and not ok(meta[field]):
            return f"metadata.{field} is {type_name(meta[field])}, not {wanted}"
    return None


def _well_formed(meta: JSON) -> bool:
    """METADATA_FIELDS' checks, all passed (JSON gives exact types, so `type(v) is` suffices)."""
    get = meta.get
    if not (
        type(get("name", "")) is str
        and type(get("namespace", "")) is str
        and type(get("uid", "")) is str
        and type(get("resourceVersion", "")) is str
    ):
        return False
    for key, kind in (
        ("deletionTimestamp", str),
        ("creationTimestamp", str),
        ("labels", dict),
        ("annotations", dict),
        ("deletionGracePeriodSeconds", int),
    ):
        value = get(key)
        if value is not None and type(value) is not kind:
            return False
    deleting = get("deletionTimestamp")
    if deleting is not None and not is_time(deleting):  # else shown as Terminating for "0s"
        return False
    finalizers = get("finalizers")
    if finalizers is not None and (type(finalizers) is not list or any(type(f) is not str for f in finalizers)):
        return False
    refs = get("ownerReferences")
    if refs is not None:
        if type(refs) is not list:
            return False
        for ref in refs:
            if type(ref) is not dict or not (
                type(ref.get("apiVersion", "")) is str
                and type(ref.get("kind", "")) is str
                and type(ref.get("name", "")) is str
                and type(ref.get("uid", "")) is str
                # booleans, as protobuf types them: "no" would count as true (a blocking owner)
                and type(ref.get("controller", False)) is bool
                and type(ref.get("blockOwnerDeletion", False)) is bool
            ):
                return False
    return True


RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)")


def is_time(value: str) -> bool:
    """An RFC 3339 time as the API server writes it (Time, or MicroTime with fractions), and a real date."""
    if not RFC3339.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dicts_of(**fields: Callable[[Any], bool]) -> Callable[[object], bool]:
    """A list of objects whose named fields, where present, pass their checks."""

    def check(value: object) -> bool:
        return isinstance(value, list) and all(
            isinstance(item, dict) and all(item.get(k) is None or ok(item[k]) for k, ok in fields.items())
            for item in value
        )

    return check


def _selector(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("matchLabels") or {}, dict)
        and isinstance(value.get("matchExpressions") or [], list)
        and all(isinstance(e, dict) for e in value.get("matchExpressions") or [])
    )


_STR = (lambda v: isinstance(v, str), "a string")
_DICT = (lambda v: isinstance(v, dict), "an object")
_INT = (_is_int, "a number")
# The fields of whole objects that kfin's explanations read, with the types the API gives them;
# null counts as absent. Checked on whatever is present, whatever the kind.
FIELD_SHAPES: dict[str, tuple[Check, str]] = {
    "spec": _DICT,
    "status": _DICT,
    "spec.finalizers": (_is_str_list, "a list of strings"),
    "spec.volumeName": _STR,
    "spec.storageClassName": _STR,
    "spec.nodeName": _STR,
    "spec.serviceAccountName": _STR,
    "spec.claimRef": _DICT,
    "spec.claimRef.name": _STR,
    "spec.claimRef.namespace": _STR,
    "spec.claimRef.uid": _STR,
    "spec.persistentVolumeReclaimPolicy": _STR,
    "spec.csi": _DICT,
    "spec.csi.driver": _STR,
    "spec.csi.volumeHandle": _STR,
    "spec.volumes": (
        _dicts_of(
            name=lambda v: isinstance(v, str),
            persistentVolumeClaim=lambda v: isinstance(v, dict) and isinstance(v.get("claimName", ""), str),
            ephemeral=lambda v: isinstance(v, dict),
        ),
        "a list of volumes",
    ),
    "spec.replicas": _INT,
    "spec.template": _DICT,
    "spec.template.spec": _DICT,
    "spec.template.spec.serviceAccountName": _STR,
    "status.readyReplicas": _INT,
    "status.numberReady": _INT,
    "status.phase": _STR,
    "status.containerStatuses": (
        _dicts_of(restartCount=_is_int, state=lambda v: isinstance(v, dict)),
        "a list of container statuses",
    ),
    "status.attached": (lambda v: isinstance(v, bool), "a boolean"),
    "status.conditions": (
        _dicts_of(
            **{k: lambda v: isinstance(v, str) for k in ("type", "status", "reason", "message", "lastTransitionTime")}
        ),
        "a list of conditions",
    ),
    "spec.service": _DICT,
    "spec.service.name": _STR,
    "spec.service.namespace": _STR,
    "spec.group": _STR,
    "spec.version": _STR,
    "spec.names": _DICT,
    "spec.names.kind": _STR,
    "spec.names.plural": _STR,
    "spec.scope": _STR,
    "spec.source": _DICT,
    "spec.source.persistentVolumeName": _STR,
    "spec.attacher": _STR,
    "spec.taints": (
        _dicts_of(key=lambda v: isinstance(v, str), effect=lambda v: isinstance(v, str)),
        "a list of taints",
    ),
    "webhooks": (
        _dicts_of(
            name=lambda v: isinstance(v, str),
            rules=lambda v: (
                isinstance(v, list)
                and all(
                    isinstance(r, dict)
                    and all(
                        _is_str_list(r.get(k) or []) for k in ("operations", "apiGroups", "apiVersions", "resources")
                    )
                    for r in v
                )
            ),
            clientConfig=lambda v: isinstance(v, dict) and isinstance(v.get("service") or {}, dict),
            namespaceSelector=lambda v: _selector(v),
            objectSelector=lambda v: _selector(v),
        ),
        "a list of webhooks",
    ),
    "endpoints": (lambda v: isinstance(v, list) and all(isinstance(e, dict) for e in v), "a list of endpoints"),
    "finalizerManagers": (
        lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        "an object naming a manager per finalizer",
    ),
    "spec.holderIdentity": _STR,
    "spec.renewTime": _STR,
    "spec.leaseDurationSeconds": _INT,
    "rules": (
        _dicts_of(**dict.fromkeys(("apiGroups", "resources", "verbs", "resourceNames"), _is_str_list)),
        "a list of rules",
    ),
    "roleRef": (
        lambda v: isinstance(v, dict) and all(isinstance(v.get(k, ""), str) for k in ("kind", "name")),
        "an object with a string kind and name",
    ),
    "subjects": (
        _dicts_of(**{k: lambda v: isinstance(v, str) for k in ("kind", "name", "namespace")}),
        "a list of subjects",
    ),
}


# By top-level key: a metadata-only item (most of a scan) has none of them and is checked in a few lookups.
_SHAPES_BY_TOP: dict[str, list[tuple[str, list[str], Check, str]]] = {}
for _path, (_ok, _wanted) in FIELD_SHAPES.items():
    _SHAPES_BY_TOP.setdefault(_path.split(".")[0], []).append((_path, _path.split(".")[1:], _ok, _wanted))


def _field(node: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def object_problem(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return f"it is {type_name(obj)}, not an object"
    for field in ("apiVersion", "kind"):
        if field in obj and not isinstance(obj[field], str):
            return f"{field} is {type_name(obj[field])}, not a string"
    problem = metadata_problem(obj.get("metadata"))
    if problem:
        return problem
    for top, shapes in _SHAPES_BY_TOP.items():
        if obj.get(top) is None:
            continue
        for path, rest, ok, wanted in shapes:
            value = _field(obj[top], rest)
            if value is not None and not ok(value):
                return f"{path} is {type_name(value)}, not {wanted}"
    return None


def check_object(answer: Any, where: str) -> JSON:
    problem = object_problem(answer)
    if problem:
        raise ShapeError(f"{where} answered an object of the wrong shape: {problem}")
    checked: JSON = answer  # object_problem found it an object
    return checked


def check_page(page: Any, where: str) -> JSON:
    """One page of a list: an object with `items` (a list, or null when empty) of well-formed objects."""
    if not isinstance(page, dict):
        raise ShapeError(f"{where} answered {type_name(page)} where a list was expected")
    if page.get("kind") == "Status":  # an error whatever the HTTP code: never an empty list
        reason, message = page.get("reason"), page.get("message")
        said = ": ".join(str(v)[:200] for v in (reason, message) if isinstance(v, str) and v) or "no reason given"
        raise ShapeError(f"{where} answered a Status ({said}) where a list was expected")
    items = page.get("items")
    if items is not None and not isinstance(items, list):
        raise ShapeError(f"{where} answered a list whose items are {type_name(items)}")
    if "items" not in page:
        raise ShapeError(f"{where} answered an object without items where a list was expected")
    list_meta = page.get("metadata")
    if list_meta is not None and (
        not isinstance(list_meta, dict) or not isinstance(list_meta.get("continue", ""), str)
    ):
        raise ShapeError(f"{where} answered a list with malformed metadata")
    for number, item in enumerate(items or [], 1):
        problem = object_problem(item)
        if problem:
            raise ShapeError(f"{where} answered a list whose item {number} is malformed: {problem}")
    return page


def check_dict(answer: Any, where: str, what: str = "an object") -> JSON:
    if not isinstance(answer, dict):
        raise ShapeError(f"{where} answered {type_name(answer)} where {what} was expected")
    return answer


def resource_problem(entry: Any) -> str | None:
    """What is wrong with a saved resource type (ResourceType.to_dict), or None."""
    if not isinstance(entry, dict):
        return f"it is {type_name(entry)}, not an object"
    for key in ("group", "version", "resource", "kind"):
        if not isinstance(entry.get(key), str) or (key != "group" and not entry[key]):
            return f"{key} is not a non-empty string"
    if not isinstance(entry.get("namespaced"), bool):
        return "namespaced is not a boolean"
    for key in ("verbs", "short_names", "categories"):
        if entry.get(key) is not None and not _is_str_list(entry[key]):
            return f"{key} is not a list of strings"
    if entry.get("singular") is not None and not isinstance(entry["singular"], str):
        return "singular is not a string"
    return None
