"""Answers cut to a size: the leading items from an offset that fit a budget of bytes, and
where the next page starts. Pure: no I/O.

The bus door's answers travel in one NATS message each, and an MCP host reads a tool's
answer whole into its context: a run of the most operations a plan may hold has some
two thousand rows of audit trail, more than either should take at once (ADR 0076).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

Item = dict[str, Any]


def page(items: Sequence[Item], offset: int, budget: int) -> tuple[list[Item], int | None]:
    """The items from ``offset`` whose JSON fits ``budget`` bytes (at least one, so a page
    always moves on), and the offset of the next page; None when these are the last."""
    taken: list[Item] = []
    size = 0
    for item in items[offset:]:
        size += len(msgspec.json.encode(item))
        if taken and size > budget:
            break
        taken.append(item)
    end = offset + len(taken)
    return taken, end if end < len(items) else None
