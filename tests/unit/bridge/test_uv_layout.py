"""Packing UV islands (services/bridge/uv_layout.py): inside the unit square, apart,
at one scale."""

from __future__ import annotations

import itertools

from services.bridge.uv_layout import pack


def _boxes(sizes: list[tuple[float, float]], margin: float) -> list[tuple[float, ...]]:
    corners, scale = pack(sizes, margin)
    return [
        (x * scale, y * scale, (x + w) * scale, (y + h) * scale)
        for (x, y), (w, h) in zip(corners, sizes, strict=True)
    ]


def test_pack_when_six_equal_faces_fits_them_apart_in_the_unit_square() -> None:
    boxes = _boxes([(2.0, 2.0)] * 6, margin=0.02)
    assert all(0 <= v <= 1 + 1e-9 for box in boxes for v in box)
    for a, b in itertools.combinations(boxes, 2):
        apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
        assert apart, (a, b)
    assert max(max(b[2], b[3]) for b in boxes) == 1.0  # the layout fills the square


def test_pack_when_sizes_differ_keeps_their_ratio() -> None:
    boxes = _boxes([(4.0, 1.0), (1.0, 1.0)], margin=0.0)
    big, small = boxes
    assert (big[2] - big[0]) / (small[2] - small[0]) == 4.0


def test_pack_when_no_islands_answers_nothing() -> None:
    assert pack([], 0.1) == ([], 1.0)
