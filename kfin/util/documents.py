"""YAML and JSON documents from files and streams nobody vetted, read within bounds: their size, their depth, and
what their YAML aliases expand to, each checked before the documents reach the code that walks them.

The YAML goes through libyaml (PyYAML's CSafeLoader: the safe constructor, about ten times as fast as PyYAML's
own parser) where it is installed, and PyYAML's SafeLoader where not."""

from __future__ import annotations

import codecs
import functools
import json
import re
from typing import Any

MAX_BYTES = 64 * 1024 * 1024
"""What one command reads of manifests, all files and stdin together. The API server takes an object of at most
3 MiB (its request body limit; etcd stores at most 1.5 MiB), and the largest manifest bundles, CRDs of a whole
platform, are a few MiB: 64 MiB is over ten times either, and what its YAML becomes in memory (about 15 bytes of
Python objects for each byte) still fits a laptop."""
MAX_DEPTH = 100
"""How deeply a document's maps and lists nest. The deepest real manifests, CRDs whose schema embeds a Pod
template, reach about 40 levels; Python's own recursion (1000 frames, shared with the code that reads the
objects afterwards) must keep room to spare."""
MAX_ALIAS_ENTRIES = 100_000
"""The entries (a map's keys, a list's items) YAML aliases may add to a document, counted as they expand: anchors
in real manifests (shared labels, an env list) add hundreds; a "billion laughs" adds billions from a few hundred
bytes. kubectl's YAML decoder (go-yaml's allowedAliasRatio) stops at about 400,000 alias-driven decodes."""


# Where a YAML alias can be: `*name` after a space, a line's start, or `[`, `{`, `,` or `:` (a plain scalar cannot start
# with `*`, and `"*"` in RBAC rules is quoted). What this finds is walked for what its aliases add; a text without
# one has none, nor a value inside itself.
ALIAS = re.compile(r"(?:^|[\s\[{,:])\*[^\s\[\]{},]")


class DocumentError(ValueError):
    """Why a text is not documents kfin reads: one line, said after the name of its source."""


def megabytes(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB"


def text_of(raw: bytes) -> str:
    """The text of a file as kubectl reads it (cli-runtime's FileVisitor, unicode.BOMOverride over UTF-8): a UTF-16
    byte order mark makes it UTF-16, a UTF-8 one is dropped, and anything else is UTF-8. Where kubectl would put
    U+FFFD for a byte that is not UTF-8, kfin refuses the file: a name it reads there would not be the object's."""
    encoding, start = "utf-8", 0
    if raw.startswith(codecs.BOM_UTF8):
        start = len(codecs.BOM_UTF8)
    elif raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"  # reads the mark for the byte order, and drops it
    try:
        return raw[start:].decode(encoding)
    except UnicodeDecodeError as failure:
        what = "UTF-16" if encoding == "utf-16" else "UTF-8"
        raise DocumentError(f"it is not {what} text (byte {start + failure.start} cannot be decoded)") from None


def check_size(text: str, limit: int = MAX_BYTES) -> None:
    """A text already in memory (a pipe's, a Helm record's) held to the same size as a file read."""
    if len(text) > limit or (len(text) * 4 > limit and len(text.encode("utf-8", "surrogatepass")) > limit):
        raise DocumentError(f"it is larger than {megabytes(limit)}")


def load_all(text: str) -> list[Any]:
    """The documents of a text: one JSON value when it starts as JSON does, else YAML documents in order."""
    if text.lstrip().startswith(("{", "[")):
        try:
            value = json.loads(text)
        except RecursionError:  # json's decoder recurses: far deeper than MAX_DEPTH
            raise DocumentError(_too_deep()) from None
        except ValueError as failure:
            raise DocumentError(str(failure).splitlines()[0]) from None
        _check_depth(value)
        return [value]
    return _yaml_documents(text)


def _too_deep() -> str:
    return f"it is nested more than {MAX_DEPTH} levels deep"


def _check_depth(value: Any) -> None:
    """Maps and lists at most MAX_DEPTH deep, found without recursion."""
    level: list[Any] = [value]
    for _ in range(MAX_DEPTH):
        below: list[Any] = []
        for each in level:
            if isinstance(each, dict):
                below += [v for v in each.values() if isinstance(v, (dict, list))]
            elif isinstance(each, list):
                below += [v for v in each if isinstance(v, (dict, list))]
        if not below:
            return
        level = below
    raise DocumentError(_too_deep())


def _yaml_documents(text: str) -> list[Any]:
    """YAML documents, then checked: their depth, and, where there can be aliases, what they add and whether one
    is inside the node it names. PyYAML builds a node reached through an alias once and shares it, so building
    is bounded; what walks the values afterwards meets it at each alias."""
    import yaml

    try:
        out = list(yaml.load_all(text, Loader=_loader()))
    except yaml.YAMLError as failure:
        if "maximum nesting depth" in str(failure):  # libyaml's own bound (1000), met before MAX_DEPTH is checked
            raise DocumentError(_too_deep()) from None
        raise DocumentError(_yaml_failure(failure)) from None
    except RecursionError:  # PyYAML's own composer (without libyaml) recurses
        raise DocumentError(_too_deep()) from None
    check = _check_aliases if ALIAS.search(text) else _check_depth
    for document in out:
        check(document)
    return out


@functools.cache
def _loader() -> Any:
    """PyYAML's safe loader (libyaml's where installed) with timestamps left as text: kubectl's YAML (go-yaml v2,
    into JSON) reads `2024-01-01` as a string, so an annotation or a name written so is one."""
    import yaml

    safe = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    resolvers = {
        first: [(tag, pattern) for tag, pattern in entries if tag != "tag:yaml.org,2002:timestamp"]
        for first, entries in safe.yaml_implicit_resolvers.items()
    }
    return type("ManifestLoader", (safe,), {"yaml_implicit_resolvers": resolvers})


def _yaml_failure(failure: Exception) -> str:
    """PyYAML's message on one line: what went wrong, and where (its mark says a line and a column)."""
    problem = getattr(failure, "problem", None)
    mark = getattr(failure, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(failure).split())


def _check_aliases(root: Any) -> None:
    """One document's maps and lists, walked once without recursion, each shared one (an alias) counted each time
    it is reached, as whatever walks the values would meet it: its depth so expanded, the entries aliases add, and
    no alias inside the node it names (PyYAML builds a value that contains itself, which no walk ends)."""
    done: dict[int, tuple[int, int]] = {}  # each map or list walked: its depth and its entries, as expanded
    written = 0  # the entries as written: each map or list once
    open_ids: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        value, leaving = stack.pop()
        key = id(value)
        if leaving:
            open_ids.discard(key)
            inner = _inner(value)
            depth = 1 + max((done[id(c)][0] for c in inner), default=0)
            if depth > MAX_DEPTH:
                raise DocumentError(_too_deep())
            done[key] = (depth, len(value) + sum(done[id(c)][1] for c in inner))
            written += len(value)
        elif key not in done and isinstance(value, (dict, list)):
            open_ids.add(key)
            stack.append((value, True))
            for child in _inner(value):
                if id(child) in open_ids:
                    raise DocumentError("a YAML alias refers to a node that contains it")
                if id(child) not in done:
                    stack.append((child, False))
    added = done[id(root)][1] - written if isinstance(root, (dict, list)) else 0
    if added > MAX_ALIAS_ENTRIES:
        raise DocumentError(
            f"its YAML aliases expand to {_count(added)} more entries, over {MAX_ALIAS_ENTRIES:,}: refused "
            "(an alias bomb?)"
        )


def _inner(value: Any) -> list[Any]:
    """The maps and lists directly inside a map or a list (a map's keys are never either: they are hashable)."""
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [c for c in children if isinstance(c, (dict, list))]


def _count(number: int) -> str:
    return f"{number:,}" if number < 10**15 else f"about 10^{len(str(number)) - 1}"
