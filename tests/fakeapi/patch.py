"""JSON Patch (RFC 6902) and JSON Merge Patch (RFC 7386), as the API server applies them."""

import copy


class PatchError(Exception):
    pass


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _walk(doc, path: str):
    """Return (container, last token) for a JSON Pointer."""
    if not path.startswith("/"):
        raise PatchError(f"invalid pointer {path!r}")
    tokens = [_unescape(t) for t in path[1:].split("/")]
    node = doc
    for token in tokens[:-1]:
        node = _child(node, token)
    return node, tokens[-1]


def _child(node, token):
    try:
        if isinstance(node, list):
            return node[int(token)]
        return node[token]
    except (KeyError, IndexError, ValueError, TypeError):
        raise PatchError(f"path element {token!r} not found") from None


def _get(doc, path):
    if path == "":
        return doc
    container, token = _walk(doc, path)
    return _child(container, token)


def _add(doc, path, value):
    container, token = _walk(doc, path)
    if isinstance(container, list):
        index = len(container) if token == "-" else int(token)
        if not 0 <= index <= len(container):
            raise PatchError("index out of range")
        container.insert(index, value)
    elif isinstance(container, dict):
        container[token] = value
    else:
        raise PatchError("cannot add to a scalar")


def _remove(doc, path):
    container, token = _walk(doc, path)
    try:
        if isinstance(container, list):
            return container.pop(int(token))
        return container.pop(token)
    except (KeyError, IndexError, ValueError):
        raise PatchError(f"cannot remove {path!r}: not found") from None


def apply_json_patch(doc: dict, operations: list) -> dict:
    if not isinstance(operations, list):
        raise PatchError("a JSON Patch is a list of operations")
    doc = copy.deepcopy(doc)
    for op in operations:
        kind, path = op.get("op"), op.get("path", "")
        if kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"test failed at {path}")
        elif kind == "add":
            _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)  # replace needs an existing target
            _remove(doc, path)
            _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "move":
            _add(doc, path, _remove(doc, op["from"]))
        elif kind == "copy":
            _add(doc, path, copy.deepcopy(_get(doc, op["from"])))
        else:
            raise PatchError(f"unknown op {kind!r}")
    return doc


def apply_merge_patch(doc, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result
