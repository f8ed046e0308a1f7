"""CEL's object construction (`JSONPatch{op: "add", path: "/x", value: 1}`, `Object{metadata:
Object.metadata{finalizers: ["a"]}}`), which the `cel` package does not build, written as the map literal it
stands for (`{"op": "add", ...}`): a MutatingAdmissionPolicy's mutations are such objects, and kube-apiserver
reads them field by field, as a map (k8s.io/apiserver pkg/admission/plugin/policy/mutating/patch)."""

from __future__ import annotations

import re

# A qualified name just before a `{`: a type, so an object construction (CEL's grammar: '.'? IDENT ('.' IDENT)*
# '{' fieldInits '}'), unless the last word is a keyword (`x in {"a": 1}` tests a map literal)
TYPE_NAME = re.compile(r"\.?[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*\s*$")
KEYWORDS = frozenset({"in", "true", "false", "null"})
FIELD = re.compile(r"(\s*)([A-Za-z_]\w*)(\s*):")


def as_maps(expression: str) -> str:
    """The expression with each object construction written as a map literal with the same fields."""
    out: list[str] = []
    stack: list[str] = []  # "(", "[", "map", "object": what each open bracket is
    i, size = 0, len(expression)
    field_next = False  # just after an object's "{" or a "," between its fields
    while i < size:
        char = expression[i]
        if field_next and stack and stack[-1] == "object":
            field = FIELD.match(expression, i)
            if field:
                out.append(f'{field.group(1)}"{field.group(2)}"{field.group(3)}:')
                i = field.end()
                field_next = False
                continue
        if not char.isspace():
            field_next = False
        if char in "'\"":
            end = _string_end(expression, i)
            out.append(expression[i:end])
            i = end
            continue
        if expression.startswith("//", i):
            end = expression.find("\n", i)
            end = size if end < 0 else end
            out.append(expression[i:end])
            i = end
            continue
        if char == "{":
            written = "".join(out)
            name = TYPE_NAME.search(written)
            last = name.group(0).strip().split(".")[-1].strip() if name else ""
            if name and last not in KEYWORDS:
                out = [written[: name.start()]]
                stack.append("object")
                field_next = True
            else:
                stack.append("map")
            out.append("{")
        elif char in "([":
            stack.append(char)
            out.append(char)
        elif char in ")]}":
            if stack:
                stack.pop()
            out.append(char)
        elif char == ",":
            field_next = bool(stack) and stack[-1] == "object"
            out.append(char)
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _string_end(text: str, start: int) -> int:
    """Where the string literal that opens at `start` ends (after its closing quote): single or triple quoted,
    raw (r"...", no escapes) or not."""
    quote = text[start]
    triple = text.startswith(quote * 3, start)
    closing = quote * 3 if triple else quote
    prefix = re.search(r"(?<![\w])[rRbB]{1,2}$", text[:start])
    raw = prefix is not None and "r" in prefix.group(0).lower()
    i = start + len(closing)
    while i < len(text):
        if text[i] == "\\" and not raw:
            i += 2
            continue
        if text.startswith(closing, i):
            return i + len(closing)
        i += 1
    return len(text)
