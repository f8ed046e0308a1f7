"""Tables laid out for a measured width: cells wrap between words and after `/` or `,`, never inside a name.

Rich's tables fold a cell at any character when its column is narrow ("kubernetes.i/o/pvc-protec/tion"). Here
each column gets at least its longest unbreakable piece, the columns that say who the object is keep their
natural width, and the long ones (finalizers, blocker) share what is left; the caller falls back to another
layout when even that does not fit (`None`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

GAP = "  "
BREAK_AFTER = "/,"  # a path or a list reads well broken after its separator
BREAK_AFTER_IF_NEEDED = ".-_:"  # inside a name, only when a piece is wider than the column


def spans(line: str, width: int) -> list[tuple[int, int]]:
    """(start, end) of each wrapped line of `line` at `width`: between words, after `/` or `,`, then after
    `.`, `-`, `_` or `:` for a piece that is still too wide, and only then at any character."""
    out: list[tuple[int, int]] = []
    start, size = 0, len(line)
    width = max(width, 1)
    while size - start > width:
        cut = _cut(line, start, width)
        end = cut
        while end > start and line[end - 1] == " ":
            end -= 1
        out.append((start, end))
        start = cut
        while start < size and line[start] == " ":
            start += 1
    out.append((start, size))
    return out


def _cut(line: str, start: int, width: int) -> int:
    limit = start + width
    if line[limit] == " ":
        return limit
    for separators in (" ", BREAK_AFTER, BREAK_AFTER_IF_NEEDED):
        for at in range(limit, start, -1):  # a break after line[at - 1]
            if line[at - 1] in separators:
                return at
    return limit


def widest_piece(line: str) -> int:
    """The width below which `line` can only be broken inside a word or a name part."""
    piece = best = 0
    for char in line:
        if char == " ":
            piece = 0
            continue
        piece += 1
        best = max(best, piece)
        if char in BREAK_AFTER:
            piece = 0
    return best


def wrapped(cell: Text, width: int) -> list[Text]:
    """A cell's lines at `width` (styles kept)."""
    plain = cell.plain
    if len(plain) <= width and "\n" not in plain:  # most cells: as they are, without rich's slicing
        return [cell]
    lines: list[Text] = []
    for part in cell.split("\n"):
        # one division for all its lines: a slice each would copy the whole part each time (a "holds 10000: ..."
        # line wrapped at a terminal's width)
        ranges = spans(part.plain, width)
        pieces = part.divide([offset for start, end in ranges for offset in (start, end)])
        lines.extend(pieces[1::2])  # (before the first, the first, between, the second, ...)
    return lines or [cell]


def hanging(cell: Text, width: int, first: str, rest: str | None = None) -> list[Text]:
    """A cell wrapped between words after a first-line prefix, its further lines indented by `rest`."""
    from rich.text import Text

    rest = first if rest is None else rest
    parts = wrapped(cell, max(width - len(rest), 20))
    return [Text(first) + parts[0]] + [Text(rest) + part for part in parts[1:]]


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Text]],
    width: int,
    flexible: Sequence[int] = (),
    least: dict[int, int] | None = None,
) -> tuple[Text, list[list[Text]]] | None:
    """The header line and each row's lines of a table no wider than `width`, or None when it cannot fit
    without breaking a name.

    Columns not in `flexible` keep their natural width; flexible ones shrink, each to no less than its
    widest unbreakable piece and `least[column]`.
    """
    from rich.text import Text

    count = len(headers)
    natural = [max([len(headers[c])] + [_longest_line(row[c]) for row in rows]) for c in range(count)]
    sizes = list(natural)
    room = width - len(GAP) * (count - 1)
    if sum(sizes) > room:
        floor = {
            c: min(
                natural[c], max([(least or {}).get(c, 0), len(headers[c])] + [widest_piece(r[c].plain) for r in rows])
            )
            for c in flexible
        }
        fixed = sum(sizes[c] for c in range(count) if c not in floor)
        spare = room - fixed
        if spare < sum(floor.values()):
            return None
        sizes = _share(natural, floor, spare, sizes)
    header = Text(GAP.join(h.ljust(sizes[c]) for c, h in enumerate(headers)).rstrip(), style="bold")
    out: list[list[Text]] = []
    for row in rows:
        cells = [wrapped(row[c], sizes[c]) for c in range(count)]
        lines: list[Text] = []
        for index in range(max(len(cell) for cell in cells)):
            line = Text()
            for c, cell in enumerate(cells):
                part = cell[index] if index < len(cell) else Text()
                if c:
                    line.append(GAP)
                line.append_text(part)
                if c < count - 1:
                    line.append(" " * (sizes[c] - len(part.plain)))
            line.rstrip()
            lines.append(line)
        out.append(lines)
    return header, out


def _longest_line(cell: Text) -> int:
    return max(len(part) for part in cell.plain.split("\n"))


def _share(natural: list[int], floor: dict[int, int], spare: int, sizes: list[int]) -> list[int]:
    """Give each flexible column its floor, then the rest in turn to the columns still short of natural."""
    for c, least in floor.items():
        sizes[c] = least
    left = spare - sum(floor.values())
    while left > 0:
        short = [c for c in floor if sizes[c] < natural[c]]
        if not short:
            break
        share = max(left // len(short), 1)
        for c in short:
            step = min(share, natural[c] - sizes[c], left)
            sizes[c] += step
            left -= step
    return sizes
