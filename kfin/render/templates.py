"""kubectl's -o jsonpath=..., -o custom-columns=... and --sort-by, over kfin's JSON documents.

kubectl's JSONPath is a template: text, and expressions in braces (`{.items[*].metadata.name}`), with
`{range ...}...{end}` to repeat a part for each element. Each expression is evaluated by jsonpath-ng.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kfin.errors import UsageError
from kfin.model import JSON
from kfin.util.text import printable

_PIECE = re.compile(r"\{((?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*)\}")


def _compile(expression: str, flag: str) -> Any:
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
    from jsonpath_ng.ext.parser import parse

    text = expression.strip()
    if text in ("", "."):
        text = "$"
    elif text.startswith(".") or text.startswith("["):
        text = "$" + text
    try:
        return parse(text)
    except (JsonPathLexerError, JsonPathParserError, Exception) as error:  # the parser raises plain Exception too
        raise UsageError(f"{flag}: cannot parse {expression!r}: {error}") from None


def _values(compiled: Any, document: Any) -> list[Any]:
    return [match.value for match in compiled.find(document)]


def _shown(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if value is None:
        return "<none>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def jsonpath(template: str, document: Any) -> str:
    """kubectl's `-o jsonpath=TEMPLATE` over `document`; cluster data made printable."""
    if not template.strip():
        raise UsageError("-o jsonpath: the template is empty")
    tokens: list[tuple[str, str]] = []  # ("text", ...) or ("expr", ...)
    at = 0
    for found in _PIECE.finditer(template):
        tokens.append(("text", template[at : found.start()]))
        tokens.append(("expr", found.group(1)))
        at = found.end()
    tokens.append(("text", template[at:]))
    if "{" in "".join(t for kind, t in tokens if kind == "text"):
        raise UsageError(f"-o jsonpath: unclosed brace in {template!r}")
    out, _ = _render(tokens, 0, document)
    return out


def _render(tokens: list[tuple[str, str]], start: int, document: Any) -> tuple[str, int]:
    out, index = "", start
    while index < len(tokens):
        kind, text = tokens[index]
        if kind == "text":
            out += text.replace("\\n", "\n").replace("\\t", "\t")
        elif text.strip() == "end":
            return out, index
        elif text.strip().startswith("range "):
            items = _values(_compile(text.strip()[len("range ") :], "-o jsonpath"), document)
            end = index + 1
            for item in items:
                part, end = _render(tokens, index + 1, item)
                out += part
            if not items:
                _, end = _render(tokens, index + 1, None)
            index = end
        elif text.strip().startswith('"') and text.strip().endswith('"'):
            out += json.loads(text.strip())
        else:
            out += " ".join(printable(_shown(v)) for v in _values(_compile(text, "-o jsonpath"), document))
        index += 1
    return out, index


def custom_columns(spec: str, items: list[JSON]) -> tuple[list[str], list[list[str]]]:
    """kubectl's `-o custom-columns=HEADER:.path,...`: (headers, a row per item)."""
    columns = []
    for part in spec.split(","):
        header, sep, path = part.partition(":")
        if not sep or not header or not path:
            raise UsageError(f"-o custom-columns: {part!r} is not HEADER:.json.path")
        columns.append((header, _compile(path.strip("{}"), "-o custom-columns")))
    rows = [
        [",".join(printable(_shown(v)) for v in _values(compiled, item)) or "<none>" for _, compiled in columns]
        for item in items
    ]
    return [header for header, _ in columns], rows


def sort_key(path: str) -> Any:
    """--sort-by=JSONPATH: a key function over items (missing values first, numbers by value, as kubectl)."""
    compiled = _compile(path.strip().strip("{}"), "--sort-by")

    def key(item: JSON) -> tuple[int, Any, str]:
        values = _values(compiled, item)
        value = values[0] if values else None
        if value is None:
            return (0, 0, "")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return (1, value, "")
        return (2, 0, _shown(value))

    return key
