"""Where a command prints: rich's console on a terminal, plain lines when the stream is piped.

rich takes about 30 ms to import, a tenth of a warm ``blendmesh run``; a script piping
the command reads the same words without its colours. Piped, a line printed with
``markup=False`` is written as it is, and anything only rich can draw (a table, markup)
makes the rich console it needs at that moment, as wide as ``PIPED_WIDTH``.
"""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeAlias

    from rich.console import Console

PIPED_WIDTH = 1000  # piped output is read by scripts and grep: keep every row on one line


class Piped:
    """rich's console in place, for a stream that is not a terminal."""

    def __init__(self, stderr: bool = False) -> None:
        self.stderr = stderr
        self._rich: Console | None = None

    @property
    def width(self) -> int:
        return PIPED_WIDTH

    @property
    def file(self) -> IO[str]:
        # Looked up at each print, as rich does: whoever replaced sys.stdout meant it.
        return sys.stderr if self.stderr else sys.stdout

    def print(
        self,
        *objects: Any,
        markup: bool | None = None,
        highlight: bool | None = None,
        soft_wrap: bool | None = None,
        emoji: bool | None = None,
    ) -> None:
        if markup is False and all(isinstance(o, str) for o in objects):
            self.file.write(" ".join(objects) + "\n")
            return
        self.rich.print(
            *objects, markup=markup, highlight=highlight, soft_wrap=soft_wrap, emoji=emoji
        )

    @property
    def rich(self) -> Console:
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(stderr=self.stderr, width=PIPED_WIDTH)
        return self._rich


if TYPE_CHECKING:
    Screen: TypeAlias = Console | Piped


def screen(stderr: bool = False) -> Screen:
    """The console for stdout, or for stderr: rich's on a terminal, else ``Piped``."""
    if (sys.stderr if stderr else sys.stdout).isatty():
        from rich.console import Console

        return Console(stderr=stderr)
    return Piped(stderr)


def rich(on: Screen) -> Console:
    """rich's console for ``on``: what a command that draws tables prints with."""
    return on.rich if isinstance(on, Piped) else on
