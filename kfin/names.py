"""Names the user types, checked as the API server checks them.

Arguments are validated before anything is sent, with the API server's own rules, so that a typo gets a
clear one-line error instead of a 404 from a path nobody meant (the paths themselves are built from
percent-encoded segments in kfin.api.paths).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from kfin.errors import KfinError, UsageError
from kfin.util.text import printable

# RFC 1123 label: what a namespace name must be (k8s.io/apimachinery/pkg/util/validation).
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_LABEL_MAX = 63
# What discovery names and kubectl's resource forms are made of: pvc, deploy.apps, Widget, v1.
KIND_TEXT = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?")
NAME_MAX = 253  # the longest object name any built-in type allows (a DNS subdomain)
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def path_segment_problem(name: str) -> str | None:
    """Why `name` cannot name any object (the server's path-segment rule, apimachinery's
    IsValidPathSegmentName, which every request path is checked against), or None."""
    if not name:
        return "may not be empty"
    if name in (".", ".."):
        return f"may not be '{name}'"
    for bad in ("/", "%"):
        if bad in name:
            return f"may not contain '{bad}'"
    if CONTROL.search(name):
        return "may not contain control characters"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8 on the command line
        return "is not valid UTF-8"
    if len(name) > NAME_MAX:
        return f"must be no more than {NAME_MAX} characters"
    return None


def check_name(name: str, what: str = "name") -> str:
    problem = path_segment_problem(name)
    if problem:
        raise UsageError(f"invalid {what} {quoted(name)}: {problem}")
    return name


def namespace_problem(namespace: str) -> str | None:
    if len(namespace) > DNS_LABEL_MAX:
        return f"must be no more than {DNS_LABEL_MAX} characters"
    if not DNS_LABEL.fullmatch(namespace):
        return (
            "a namespace must be a lowercase RFC 1123 label: lower case alphanumeric characters or '-', "
            "starting and ending with an alphanumeric character"
        )
    return None


def check_namespace(namespace: str, error: type[KfinError] = UsageError, source: str = "namespace") -> str:
    problem = namespace_problem(namespace)
    if problem:
        raise error(f"invalid {source} {quoted(namespace)}: {problem}")
    return namespace


def check_kind(text: str) -> str:
    if len(text) > NAME_MAX or not KIND_TEXT.fullmatch(text):
        raise UsageError(
            f"invalid resource type {quoted(text)}: use a kind, plural or short name, optionally "
            "with its group (pvc, deploy.apps, widgets.example.com)"
        )
    return text


def quoted(text: str) -> str:
    """A user's or server's text inside an error line: one line, control characters made visible."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    return '"' + printable(shown, one_line=True).replace('"', '\\"') + '"'


def nearest(typed: str, names: Iterable[str]) -> str | None:
    """The name `typed` most likely meant, or None: the commonest typo, two neighbouring letters swapped (pcv
    for pvc), before what difflib finds nearest (which, for pcv, is pv), at a closeness of 0.75 or more."""
    candidates = sorted(set(names) - {typed})
    swapped = [name for name in candidates if _transposed(typed, name)]
    close = swapped or difflib.get_close_matches(typed, candidates, n=1, cutoff=0.75)
    return close[0] if close else None


def _transposed(typed: str, name: str) -> bool:
    """Whether `typed` is `name` with two neighbouring letters swapped."""
    if len(typed) != len(name) or typed == name:
        return False
    differ = [i for i, (a, b) in enumerate(zip(typed, name, strict=True)) if a != b]
    return (
        len(differ) == 2
        and differ[1] == differ[0] + 1
        and typed[differ[0]] == name[differ[1]]
        and (typed[differ[1]] == name[differ[0]])
    )
