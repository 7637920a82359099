"""Packing UV islands into the unit square: pure, so it is tested without Blender.

Islands arrive as the sizes of their bounding boxes; shelves are filled left to right,
tallest first, in a square whose side is the root of the islands' total area (or the
widest island), then everything is scaled by one factor to fit in 0..1, so islands
keep their relative sizes (texel density is even across the object).
"""

from __future__ import annotations

import math

Size = tuple[float, float]


def pack(sizes: list[Size], margin: float) -> tuple[list[Size], float]:
    """Where each island's box goes (its lower left corner, before scaling) and the one
    scale that brings the whole layout into the unit square. ``margin``: the gap between
    islands as a share of the layout's side."""
    if not sizes:
        return [], 1.0
    area = sum(w * h for w, h in sizes)
    side = max(math.sqrt(area), max(w for w, _ in sizes))
    gap = margin * side
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i][1], i))
    corners: list[Size] = [(0.0, 0.0)] * len(sizes)
    x = y = shelf = width = 0.0
    for i in order:
        w, h = sizes[i]
        if x > 0 and x + w > side:
            x, y, shelf = 0.0, y + shelf + gap, 0.0
        corners[i] = (x, y)
        x += w + gap
        shelf = max(shelf, h)
        width = max(width, x - gap)
    extent = max(width, y + shelf)
    return corners, (1.0 / extent if extent > 0 else 1.0)
