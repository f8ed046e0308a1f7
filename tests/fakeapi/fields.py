"""managedFields: which field manager set which field, as kube-apiserver records it for Update operations.

A write by manager M takes M the ownership of every field it added or changed, and takes it from the
other managers; a field that goes away leaves every manager. Finalizers are a set (`v:"NAME"`, so each
finalizer names the manager that added it: captures 05-08 of causes), owner references a map keyed by
uid (`k:{"uid":"..."}`), other lists are atomic; an object whose managedFields are gone is no longer
tracked (see `updated`). Simplifications: every nested map is marked with
`"."` (the real server leaves that out for some typed structs), server-side apply is not modelled,
and writes by the fake's own controllers are not recorded.
"""

import copy
import json

SKIPPED_METADATA = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                    "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink", "generateName"}


def fieldset(obj: dict, subresource: str = "") -> dict:
    """The fields of an object as a FieldsV1 tree: {"f:spec": {".": {}, "f:size": {}}, ...}."""
    out = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind") or (key == "status") != (subresource == "status"):
            continue
        if key == "metadata":
            meta = {k: v for k, v in value.items() if k not in SKIPPED_METADATA}
            if meta:
                out["f:metadata"] = _metadata(meta)
            continue
        out[f"f:{key}"] = _node(value)
    return out


def _metadata(meta: dict) -> dict:
    out = {}
    for key, value in meta.items():
        if key == "finalizers" and isinstance(value, list):
            out["f:finalizers"] = {".": {}, **{f"v:{json.dumps(f)}": {} for f in value}}
        elif key == "ownerReferences" and isinstance(value, list):
            out["f:ownerReferences"] = {".": {}, **{
                "k:" + json.dumps({"uid": r.get("uid")}, separators=(",", ":")): {} for r in value}}
        else:
            out[f"f:{key}"] = _node(value)
    return out


def _node(value) -> dict:
    if isinstance(value, dict) and value:
        return {".": {}, **{f"f:{k}": _node(v) for k, v in value.items()}}
    return {}


def _leaves(tree: dict, prefix=()) -> set:
    out = set()
    for key, child in tree.items():
        path = prefix + (key,)
        out.add(path)
        out |= _leaves(child, path)
    return out


def _tree(paths: set) -> dict:
    root: dict = {}
    for path in sorted(paths):
        node = root
        for key in path:
            node = node.setdefault(key, {})
    return root


def updated(managed: list, old: dict | None, new: dict, manager: str, api_version: str, now: str,
            subresource: str = "") -> list:
    """managedFields after `manager` wrote `new` in place of `old` (None: created). An update of an object that
    has no managedFields records none: kube-apiserver stops tracking an object once its managedFields are
    empty, until a server-side apply (skipNonAppliedManager, k8s.io/apimachinery/pkg/util/managedfields/
    internal/skipnonapplied.go; seen on the real tier after kfin removed an object's only managed field)."""
    if old is not None and not managed:
        return []
    before = _leaves(fieldset(old, subresource)) if old else set()
    after = _leaves(fieldset(new, subresource))
    changed = {p for p in after if p not in before or _differs(old, new, p)}
    gone = before - after
    out, mine = [], None
    for entry in copy.deepcopy(managed or []):
        owned = _leaves(entry.get("fieldsV1") or {}) - gone
        if entry.get("manager") == manager and entry.get("subresource", "") == subresource and \
                entry.get("operation") == "Update":
            mine = entry
            owned |= changed
            entry["time"], entry["apiVersion"] = now, api_version
        else:
            owned -= {p for p in changed if p[-1] != "."}
        if owned:
            entry["fieldsV1"] = _tree(owned)
            out.append(entry)
    if mine is None and changed:
        entry = {"manager": manager, "operation": "Update", "apiVersion": api_version, "time": now,
                 "fieldsType": "FieldsV1", "fieldsV1": _tree(changed)}
        if subresource:
            entry["subresource"] = subresource
        out.append(entry)
    return out


def _differs(old: dict, new: dict, path: tuple) -> bool:
    """Whether the value at a FieldsV1 path changed (leaves only: containers change through their leaves)."""
    if path[-1] == "." or path[-1].startswith(("v:", "k:")):
        return False
    def value(obj):
        node = obj
        for key in path:
            if not isinstance(node, dict):
                return None
            node = node.get(key[2:]) if key.startswith("f:") else None
        return node
    a, b = value(old), value(new)
    return not isinstance(a, dict) and a != b
