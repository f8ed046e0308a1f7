"""A plan's steps on a terminal: each command alone on its line, never wrapped (a command longer than the terminal
stays one line, so that it pastes whole), its condition and note on lines of their own below it; kfin's words wrap
between words. No line ends in a space."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from kfin.core.explain.causes import Action
from kfin.render.layout import spans
from kfin.render.terminal import Console
from kfin.util.text import printable

if TYPE_CHECKING:
    from rich.console import Console as RichConsole

Line = tuple[str, str]  # the text, its style


def wrapped(text: str, first: str, rest: str, width: int, style: str = "") -> list[Line]:
    """Prose after `first` on its first line, continued `rest` in: wrapped between words at `width`."""
    shown = printable(text, one_line=True)
    room = max(width - len(rest), 12)  # a narrow terminal's width holds: a few words a line rather than past it
    return [((first if i == 0 else rest) + shown[a:b], style) for i, (a, b) in enumerate(spans(shown, room))]


def action_lines(action: Action, first: str, rest: str, width: int) -> list[Line]:
    """One action: its command on the first line as it stands, then `when:` and `note:` two columns further in; an
    action outside kubectl is its instruction, after its condition ("instead: reinstall the controller"), wrapped."""
    if action.command is None:
        return wrapped(action.text, first, rest, width)
    below = rest + "  "
    lines = [(first + printable(action.command, one_line=True), "bold")]
    if action.when:
        lines += wrapped(f"when: {action.when}", below, below + "      ", width)
    if action.note:
        lines += wrapped(f"note: {action.note}", below, below + "      ", width)
    return lines


def step_lines(number: int, actions: Iterable[Action], width: int, indent: str = "  ") -> list[Line]:
    """A numbered step: its actions one below the other, under the number."""
    head = f"{indent}{number}. "
    rest = " " * len(head)
    lines: list[Line] = []
    for i, action in enumerate(actions):
        lines += action_lines(action, head if i == 0 else rest, rest, width)
    return lines


def print_lines(lines: list[Line], target: RichConsole) -> None:
    """Lines as they are: rich neither wraps nor pads them."""
    from rich.text import Text

    for line, style in lines:
        target.print(Text(line.rstrip(), style=style), soft_wrap=True)


class ExplainedStep(Protocol):
    """A plan's step that says why it is there (kfin preflight's plan, a teardown's safe order)."""

    @property
    def actions(self) -> Sequence[Action]: ...
    @property
    def why(self) -> str: ...


def print_plan(console: Console, steps: Iterable[ExplainedStep]) -> None:
    """Numbered steps on stdout, each with why below it, laid out for the terminal (or $COLUMNS or 120 in a pipe)."""
    target = console.rich(piped_width=console.columns or 120)
    lines: list[Line] = []
    for number, step in enumerate(steps, 1):
        lines += step_lines(number, step.actions, target.width) + wrapped(step.why, "     ", "     ", target.width)
    print_lines(lines, target)
    console.stdout.flush()
