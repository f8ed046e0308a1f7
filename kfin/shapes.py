"""The shape of what kfin reads: an answer (or a snapshot item) of the wrong shape is an error that
names what was wrong, never an empty result taken for "nothing stuck" and never a crash.

Only the fields kfin uses are checked, with the types the API server gives them.
"""

from __future__ import annotations

from typing import Any

from kfin.errors import APIError


class ShapeError(APIError):
    """An answer that is not what the Kubernetes API gives (exit 9, or a failure of that type)."""

    def __init__(self, message: str):
        super().__init__(message, 0, "BadResponse")


def type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _is_str_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


# metadata field -> (check, what it must be)
METADATA_FIELDS = {
    "name": (lambda v: isinstance(v, str), "a string"),
    "namespace": (lambda v: isinstance(v, str), "a string"),
    "uid": (lambda v: isinstance(v, str), "a string"),
    "resourceVersion": (lambda v: isinstance(v, str), "a string"),
    "deletionTimestamp": (lambda v: v is None or isinstance(v, str), "a string"),
    "creationTimestamp": (lambda v: v is None or isinstance(v, str), "a string"),
    "deletionGracePeriodSeconds": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
                                   "a number"),
    "finalizers": (lambda v: v is None or _is_str_list(v), "a list of strings"),
    "labels": (lambda v: v is None or isinstance(v, dict), "an object"),
    "annotations": (lambda v: v is None or isinstance(v, dict), "an object"),
    "ownerReferences": (lambda v: v is None or (isinstance(v, list) and all(
        isinstance(r, dict) and all(isinstance(r.get(k, ""), str) for k in ("apiVersion", "kind", "name", "uid"))
        for r in v)), "a list of owner references (objects with string apiVersion, kind, name and uid)"),
}


def metadata_problem(meta: Any, named: bool = True) -> str | None:
    """What is wrong with an object's metadata, or None."""
    if not isinstance(meta, dict):
        return f"metadata is {type_name(meta)}, not an object"
    if named and not (isinstance(meta.get("name"), str) and meta.get("name")):
        return "metadata.name is missing" if "name" not in meta else "metadata.name is not a non-empty string"
    for field, (ok, wanted) in METADATA_FIELDS.items():
        if field in meta and not ok(meta[field]):
            return f"metadata.{field} is {type_name(meta[field])}, not {wanted}"
    return None


def object_problem(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return f"it is {type_name(obj)}, not an object"
    for field in ("apiVersion", "kind"):
        if field in obj and not isinstance(obj[field], str):
            return f"{field} is {type_name(obj[field])}, not a string"
    for field in ("spec", "status"):
        if obj.get(field) is not None and not isinstance(obj[field], dict):
            return f"{field} is {type_name(obj[field])}, not an object"
    return metadata_problem(obj.get("metadata"))


def check_object(answer: Any, where: str) -> dict:
    problem = object_problem(answer)
    if problem:
        raise ShapeError(f"{where} answered an object of the wrong shape: {problem}")
    return answer


def check_page(page: Any, where: str) -> dict:
    """One page of a list: an object with `items` (a list, or null when empty) of well-formed objects."""
    if not isinstance(page, dict):
        raise ShapeError(f"{where} answered {type_name(page)} where a list was expected")
    items = page.get("items")
    if items is not None and not isinstance(items, list):
        raise ShapeError(f"{where} answered a list whose items are {type_name(items)}")
    if "items" not in page and page.get("kind") != "Status":
        raise ShapeError(f"{where} answered an object without items where a list was expected")
    list_meta = page.get("metadata")
    if list_meta is not None and (not isinstance(list_meta, dict) or not isinstance(list_meta.get("continue", ""), str)):
        raise ShapeError(f"{where} answered a list with malformed metadata")
    for number, item in enumerate(items or [], 1):
        problem = object_problem(item)
        if problem:
            raise ShapeError(f"{where} answered a list whose item {number} is malformed: {problem}")
    return page


def check_dict(answer: Any, where: str, what: str = "an object") -> dict:
    if not isinstance(answer, dict):
        raise ShapeError(f"{where} answered {type_name(answer)} where {what} was expected")
    return answer
