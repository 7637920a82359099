"""The typed tools' bodies, in plain Blender Python: what a tool does to the scene.

The mesh's bridge runs them behind its argument checks (schemas, limits, receipts), and
the add-on replays a committed run's operations through them in the artist's open
session (ADR 0047), so both apply an operation the same way. They import nothing but
Blender and the standard library, and check only what needs the scene: that an object
exists, that a name is free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class ToolFailure(Exception):
    """A tool refused or failed; ``mutated`` says whether the scene may have changed."""

    def __init__(self, code: str, message: str, mutated: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.mutated = mutated


@dataclass(frozen=True)
class Done:
    """What a tool did: its data, a sentence, whether it changed the scene, and the
    (tool, arguments) call that undoes it when there is one."""

    data: dict[str, Any]
    message: str
    mutated: bool = True
    compensation: tuple[str, dict[str, Any]] | None = None
