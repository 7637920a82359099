"""A big mesh's vertex digest is remembered by its raw positions: the memo returns what
hashing them again gives, never a digest of other positions, and holds a bounded number."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from services.bridge.scene.vertex_hash import VertexHashes

BIG = 70_000  # vertices: above REMEMBERED_FROM


def grid(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(BIG * 3, dtype=np.float32)


def test_digest_when_small_is_the_scene_hash_value_it_always_was() -> None:
    """Pinned: the values committed revisions carry must not change."""
    positions = np.array([0.0, -0.0, 1.0000004, 2.5e-7, -3.25, 1e6], dtype=np.float32)
    expected = "2fdf978ff1c54ba9b45c90b6a0ea757d7eb9e21f73d389ee42c7f7b0e0131d63"
    assert VertexHashes().digest(positions) == expected


def test_digest_when_big_mesh_asked_again_is_remembered() -> None:
    hashes = VertexHashes()
    first = hashes.digest(grid())
    again = hashes.digest(grid())  # equal bytes, another array
    assert again == first and hashes.computed == 1


def test_digest_when_one_vertex_moved_is_computed_afresh() -> None:
    hashes = VertexHashes()
    positions = grid()
    before = hashes.digest(positions)
    positions[12_345] += 0.5
    after = hashes.digest(positions)
    assert after != before and hashes.computed == 2
    assert after == VertexHashes().digest(positions)


def test_digest_when_only_zero_signs_differ_is_the_same() -> None:
    positions = np.zeros(BIG * 3, dtype=np.float32)
    negative = -positions
    hashes = VertexHashes()
    assert hashes.digest(negative) == hashes.digest(positions)


def test_digest_when_small_mesh_asked_again_is_remembered_by_its_bytes() -> None:
    hashes = VertexHashes()
    cube = np.ones(24, dtype=np.float32)
    first = hashes.digest(cube)
    moved = cube.copy()
    moved[5] = 2.0
    assert hashes.digest(cube.copy()) == first and hashes.computed == 1
    assert hashes.digest(moved) != first and hashes.computed == 2


def test_digest_when_mesh_is_between_small_and_big_is_never_remembered() -> None:
    hashes = VertexHashes()
    rock = np.ones(3_000, dtype=np.float32)  # 1,000 vertices: 12,000 bytes
    hashes.digest(rock)
    hashes.digest(rock)
    assert hashes.computed == 2


def test_digest_when_more_meshes_than_the_bound_forgets_the_least_recent() -> None:
    hashes = VertexHashes(max_remembered=2)
    a, b, c = grid(1), grid(2), grid(3)
    for positions in (a, b, a, c):  # a used again: b is the least recent when c comes
        hashes.digest(positions)
    assert hashes.computed == 3
    hashes.digest(a)
    assert hashes.computed == 3
    hashes.digest(b)
    assert hashes.computed == 4


@pytest.mark.parametrize(
    "positions", [np.zeros(6, dtype=np.float64), np.zeros((2, 3), dtype=np.float32)]
)
def test_digest_when_not_flat_float32_says_so(positions: np.ndarray) -> None:
    with pytest.raises(ValueError, match="flat float32"):
        VertexHashes().digest(positions)


@given(hnp.arrays(np.float32, st.integers(0, 60).map(lambda n: n * 3)))
def test_digest_when_remembered_equals_the_rounded_sha256(positions: np.ndarray) -> None:
    hashes = VertexHashes(remembered_from=1)
    rounded = np.round(positions.astype(np.float64), 6) + 0.0
    expected = hashlib.sha256(rounded.data).hexdigest()
    assert hashes.digest(positions) == hashes.digest(positions.copy()) == expected
