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


# The lists a strategic merge patch merges by a key rather than replaces (the patchMergeKey of ObjectMeta's fields in
# k8s.io/apimachinery's types.go): the one the garbage collector patches
MERGE_KEYS = {("metadata", "ownerReferences"): "uid"}


def apply_strategic_merge_patch(doc, patch, path=()):
    """A strategic merge patch of a built-in object, as far as the fake needs one: a merge patch whose lists named in
    MERGE_KEYS merge item by item on their key, an item {"$patch": "delete", KEY: value} deleting the one with that
    key (k8s.io/apimachinery's strategicpatch mergeSlice), a list left empty dropped (omitempty); other lists are
    replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        here = (*path, key)
        if value is None:
            result.pop(key, None)
        elif here in MERGE_KEYS and isinstance(value, list):
            merged = _merge_by_key(result.get(key) or [], value, MERGE_KEYS[here])
            if merged:
                result[key] = merged
            else:
                result.pop(key, None)
        else:
            result[key] = apply_strategic_merge_patch(result.get(key), value, here)
    return result


def _merge_by_key(items: list, patch: list, key: str) -> list:
    merged = copy.deepcopy(items)
    for change in patch:
        if not isinstance(change, dict) or key not in change:
            raise PatchError(f"an item of a list merged by {key} has no {key}")
        at = next((i for i, item in enumerate(merged) if isinstance(item, dict) and item.get(key) == change[key]), None)
        if change.get("$patch") == "delete":
            if at is not None:
                merged.pop(at)
        elif at is None:
            merged.append(copy.deepcopy(change))
        else:
            merged[at] = apply_merge_patch(merged[at], change)
    return merged
