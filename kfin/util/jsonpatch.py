"""JSON Patch (RFC 6902) applied to a copy of a document: what a MutatingAdmissionPolicy's JSONPatch mutation
does to the object kube-apiserver admits, for kfin to tell whether it puts a finalizer back."""

from __future__ import annotations

import copy
from typing import Any


class PatchError(ValueError):
    """The patch does not apply (a path that is not there, a failed test, an unknown op)."""


def apply(document: Any, operations: list[Any]) -> Any:
    """The document after the operations, in order (the original is left as it was)."""
    doc = copy.deepcopy(document)
    for op in operations:
        if not isinstance(op, dict):
            raise PatchError("an operation is not an object")
        kind, path = op.get("op"), str(op.get("path", ""))
        if kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"test failed at {path}")
        elif kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "move":
            doc, value = _remove(doc, str(op.get("from", "")))
            doc = _add(doc, path, value)
        elif kind == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, str(op.get("from", "")))))
        else:
            raise PatchError(f"unknown op {kind!r}")
    return doc


def _tokens(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid pointer {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _child(node: Any, token: str) -> Any:
    try:
        return node[int(token)] if isinstance(node, list) else node[token]
    except (KeyError, IndexError, ValueError, TypeError):
        raise PatchError(f"path element {token!r} not found") from None


def _get(doc: Any, path: str) -> Any:
    for token in _tokens(path):
        doc = _child(doc, token)
    return doc


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    tokens = _tokens(path)
    if not tokens:
        raise PatchError("the whole document cannot be a target here")
    node = doc
    for token in tokens[:-1]:
        node = _child(node, token)
    return node, tokens[-1]


def _add(doc: Any, path: str, value: Any) -> Any:
    if path == "":
        return value
    container, token = _parent(doc, path)
    if isinstance(container, list):
        index = len(container) if token == "-" else _index(token)
        if not 0 <= index <= len(container):
            raise PatchError("index out of range")
        container.insert(index, value)
    elif isinstance(container, dict):
        container[token] = value
    else:
        raise PatchError("cannot add to a scalar")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    container, token = _parent(doc, path)
    try:
        removed = container.pop(_index(token) if isinstance(container, list) else token)
    except (KeyError, IndexError, AttributeError):
        raise PatchError(f"cannot remove {path!r}: not found") from None
    return doc, removed


def _index(token: str) -> int:
    if not token.isdigit():
        raise PatchError(f"{token!r} is not an index")
    return int(token)
