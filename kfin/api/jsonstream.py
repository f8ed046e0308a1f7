"""Reading one large JSON object from a file member by member, the elements of its big arrays one at a
time, so that a 250 MB `kubectl get -o json` List is never held parsed in memory at once.

The standard library's decoder does the parsing (raw_decode on a sliding buffer); this module only
walks the outer object and arrays.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

WHITESPACE = " \t\r\n"


class _Buffer:
    def __init__(self, handle: TextIO, chunk: int):
        self.handle, self.chunk = handle, chunk
        self.text, self.pos, self.eof = "", 0, False
        self.decoder = json.JSONDecoder()

    def more(self) -> bool:
        """Read on; a value longer than a chunk doubles what is read, so that retries stay linear."""
        if self.eof:
            return False
        rest = self.text[self.pos :]
        data = self.handle.read(max(self.chunk, len(rest)))
        if not data:
            self.eof = True
            return False
        self.text, self.pos = rest + data, 0
        return True

    def peek(self) -> str:
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in WHITESPACE:
                self.pos += 1
            if self.pos < len(self.text) or not self.more():
                return self.text[self.pos : self.pos + 1]

    def expect(self, char: str) -> None:
        found = self.peek()
        if found != char:
            raise ValueError(f"expected {char!r} but found {found or 'the end of the file'!r}")
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError:
                if self.more():
                    continue
                raise
            if end == len(self.text) and self.more():  # a number may go on in the next chunk
                continue
            self.pos = end
            return value


def members(handle: TextIO, streamed: frozenset[str] = frozenset(), chunk: int = 1 << 20) -> Iterator[tuple[str, Any]]:
    """(key, value) of each member of the file's top-level object, in file order. The value of a key in
    `streamed` that holds an array is an iterator over its elements instead: consume it before the next
    member."""
    buffer = _Buffer(handle, chunk)
    buffer.expect("{")
    if buffer.peek() == "}":
        return
    while True:
        key = buffer.value()
        if not isinstance(key, str):
            raise ValueError("an object's key is not a string")
        buffer.expect(":")
        if key in streamed and buffer.peek() == "[":
            yield key, _elements(buffer)
        else:
            yield key, buffer.value()
        if buffer.peek() == ",":
            buffer.pos += 1
            continue
        buffer.expect("}")
        if buffer.peek():
            raise ValueError("extra data after the top-level object")
        return


def _elements(buffer: _Buffer) -> Iterator[Any]:
    buffer.expect("[")
    if buffer.peek() == "]":
        buffer.pos += 1
        return
    while True:
        yield buffer.value()
        if buffer.peek() == ",":
            buffer.pos += 1
            continue
        buffer.expect("]")
        return
