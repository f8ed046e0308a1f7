"""kubectl's -l/--selector and --field-selector, in the API server's grammar, applied to stuck objects.

They choose which stuck objects are shown; they are not sent with kfin's lists. A selector on the lists would
hide from kfin what holds the selected objects (an unlabelled Pod that mounts a labelled claim, a dependent
without the label that blocks its owner): the verdict would turn from HOLDING to WAITING, the dangerous way.
Grammar: k8s.io/apimachinery/pkg/labels/selector.go and pkg/fields/selector.go.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from msgspec import Struct

from kfin.errors import UsageError
from kfin.model import KubeObject

_KEY = r"(?:[a-z0-9A-Z](?:[a-z0-9A-Z._-]{0,251}[a-z0-9A-Z])?/)?[a-z0-9A-Z](?:[-a-z0-9A-Z_.]{0,61}[a-z0-9A-Z])?"
_VALUE = r"(?:[a-z0-9A-Z](?:[-a-z0-9A-Z_.]{0,61}[a-z0-9A-Z])?)?"
_SET = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s+\(([^()]*)\)\s*$")
_EQUALITY = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*$")
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")
# What the API server lets every type be selected by; the rest are per type and rarely on a stuck object.
FIELDS = {"metadata.name": lambda o: o.name, "metadata.namespace": lambda o: o.namespace}


class Selector(Struct, frozen=True):
    """A -l/--field-selector pair, as one test of an object."""

    label: Callable[[dict[str, str]], bool]
    field: Callable[[KubeObject], bool]

    def matches(self, obj: KubeObject) -> bool:
        return self.field(obj) and self.label(obj.meta.get("labels") or {})


def _split(text: str) -> list[str]:
    """Requirements are comma-separated, except inside the parentheses of a set."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()] if text.strip() else []


def _label_test(key: str, allowed: frozenset[str] | None, negated: bool) -> Callable[[dict[str, str]], bool]:
    """One requirement: the label's value is one of `allowed` (None: the label exists), or the negation of
    that (!=, notin, !key: which an object without the label meets)."""
    if allowed is None:
        return lambda labels: (key in labels) != negated
    return lambda labels: (labels.get(key) in allowed) != negated


def _field_test(read: Callable[[KubeObject], str], value: str, negated: bool) -> Callable[[KubeObject], bool]:
    return lambda obj: (read(obj) == value) != negated


def label_selector(text: str | None) -> Callable[[dict[str, str]], bool]:
    tests: list[Callable[[dict[str, str]], bool]] = []
    for part in _split(text or ""):
        if found := _SET.match(part):
            key, op, raw = found.groups()
            values = {v.strip() for v in raw.split(",")}
            if any(not re.fullmatch(_VALUE, v) for v in values):
                raise UsageError(f"-l: invalid value in {part.strip()!r}")
            tests.append(_label_test(key, frozenset(values), op == "notin"))
        elif found := _EQUALITY.match(part):
            key, op, value = found.groups()
            tests.append(_label_test(key, frozenset({value}), op == "!="))
        elif found := _EXISTS.match(part):
            negated, key = found.groups()
            tests.append(_label_test(key, None, bool(negated)))
        else:
            raise UsageError(
                f"-l: cannot parse {part.strip()!r} (kubectl's forms: key=value, key!=value, key in (a,b), "
                "key notin (a,b), key, !key)"
            )
    return lambda labels: all(test(labels) for test in tests)


def field_selector(text: str | None) -> Callable[[KubeObject], bool]:
    tests: list[Callable[[KubeObject], bool]] = []
    for part in _split(text or ""):
        found = re.fullmatch(r"\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*?)\s*", part)
        if not found:
            raise UsageError(f"--field-selector: cannot parse {part.strip()!r} (field=value or field!=value)")
        name, op, value = found.groups()
        if name not in FIELDS:
            raise UsageError(
                f'--field-selector: field label not supported: "{name}" (every kind has {", ".join(FIELDS)})'
            )
        tests.append(_field_test(FIELDS[name], value, op == "!="))
    return lambda obj: all(test(obj) for test in tests)


def selector(labels: str | None, fields: str | None) -> Selector | None:
    """None when neither was given; UsageError (exit 2) for a selector the API server would refuse."""
    if not labels and not fields:
        return None
    return Selector(label_selector(labels), field_selector(fields))
