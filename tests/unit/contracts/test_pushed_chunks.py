"""A push by changed chunks, without a mesh: the add-on's cuts of a .blend at its block
boundaries (``blendmesh_addon/chunks.py``) and the batch format the gateway reads
(``contracts/pushed_chunks.py``)."""

from __future__ import annotations

import hashlib
import random
import struct

import pytest

from blendmesh_addon import chunks
from contracts.pushed_chunks import (
    FRAME,
    MAX_BATCH_BYTES,
    MAX_CHUNK_BYTES,
    MAX_CHUNKS,
    BadBatch,
    frames,
    manifest_problem,
    unframe,
)


def blend(blocks: list[bytes], new: bool = True, addresses: list[int] | None = None) -> bytes:
    """A .blend of ``blocks`` (their data), in Blender 5's layout or 3.4's; each block's
    address in memory is ``addresses``' or, by default, one its bytes decide."""
    out = [b"BLENDER17-01v0500" if new else b"BLENDER-v304"]
    for n, data in enumerate(blocks):
        digest = hashlib.sha256(data).digest()[:6]
        address = addresses[n] if addresses else int.from_bytes(digest, "little")
        if new:  # code, struct index, old address, 64-bit length, 64-bit count
            out.append(struct.pack("<4siQqq", b"DATA", 1, address, len(data), 1))
        else:  # code, length, old address, struct index, count
            out.append(struct.pack("<4siQii", b"DATA", len(data), address, 1, 1))
        out.append(data)
    out.append(struct.pack("<4siQqq", b"ENDB", 0, 0, 0, 0) if new else b"ENDB" + bytes(20))
    return b"".join(out)


def scene(seed: int = 1, count: int = 3000) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.choice([40, 200, 900, 4000])) for _ in range(count)]


def spans(cut: chunks.Cut) -> list[tuple[int, int]]:
    return [(c.offset, c.size) for c in cut.chunks]


@pytest.mark.parametrize("new", [True, False])
def test_cut_when_one_block_changes_moves_only_the_chunk_that_holds_it(new: bool) -> None:
    blocks = scene()
    before = chunks.cut(blend(blocks, new))
    blocks[1500] = bytes(len(blocks[1500]))  # the same size, other bytes
    after = chunks.cut(blend(blocks, new))
    had = {c.sha256 for c in before.chunks}
    moved = [c for c in after.chunks if c.sha256 not in had]
    assert len(moved) == 1 and moved[0].size <= chunks.MAXIMUM
    assert len(before.chunks) > 20  # cut at blocks, not whole


def test_cut_when_a_block_is_inserted_keeps_the_chunks_after_it() -> None:
    blocks = scene()
    before = chunks.cut(blend(blocks))
    blocks.insert(100, b"new block")
    after = chunks.cut(blend(blocks))
    had = {c.sha256 for c in before.chunks}
    moved = [c for c in after.chunks if c.sha256 not in had]
    assert sum(c.size for c in moved) <= 2 * chunks.MAXIMUM
    assert len(moved) <= 2


def test_cut_when_a_block_is_huge_cuts_it_by_size_and_one_edit_moves_one_piece() -> None:
    rng = random.Random(2)
    big = bytearray(rng.randbytes(5 * chunks.MAXIMUM + 1234))
    blocks = [b"head" * 10, bytes(big), b"tail" * 10]
    before = chunks.cut(blend(blocks, addresses=[16, 32, 48]))
    big[3 * chunks.MAXIMUM + 7] ^= 0xFF  # edited in place: the same address
    after = chunks.cut(blend([blocks[0], bytes(big), blocks[2]], addresses=[16, 32, 48]))
    assert max(c.size for c in before.chunks) <= chunks.MAXIMUM
    had = {c.sha256 for c in before.chunks}
    assert len([c for c in after.chunks if c.sha256 not in had]) == 1


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"BLENDER-v304",  # a header and nothing else
        b"\x28\xb5\x2f\xfd" + bytes(700_000),  # compressed: not walked
        b"BLENDER-v304" + struct.pack("<4siQii", b"DATA", 10**9, 0, 0, 0) + bytes(300_000),
        b"BLENDER-v304" + struct.pack("<4siQii", b"DATA", -5, 0, 0, 0) + bytes(10),
    ],
    ids=["empty", "header-only", "compressed", "length-past-end", "negative-length"],
)
def test_cut_when_the_file_cannot_be_walked_still_covers_every_byte(data: bytes) -> None:
    cut = chunks.cut(data)
    assert cut.size == len(data) and cut.sha256 == hashlib.sha256(data).hexdigest()
    assert b"".join(data[c.offset : c.offset + c.size] for c in cut.chunks) == data
    assert all(0 < c.size <= chunks.MAXIMUM for c in cut.chunks)


@pytest.mark.parametrize("new", [True, False])
def test_cut_when_walked_covers_every_byte_in_order_within_the_limits(new: bool) -> None:
    data = blend(scene(3), new)
    cut = chunks.cut(data)
    assert b"".join(data[c.offset : c.offset + c.size] for c in cut.chunks) == data
    assert all(c.sha256 == hashlib.sha256(data[c.offset : c.offset + c.size]).hexdigest()
               for c in cut.chunks)  # fmt: skip
    assert max(c.size for c in cut.chunks) <= chunks.MAXIMUM == MAX_CHUNK_BYTES
    assert min(c.size for c in cut.chunks[:-1]) >= chunks.MINIMUM


def test_frames_when_unframed_give_the_chunks_back() -> None:
    parts = [b"a", bytes(MAX_CHUNK_BYTES), b"xyz"]
    assert unframe(frames(parts)) == parts


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"", "holds no chunk"),
        (b"\x00\x00", "ends 2 bytes into frame 1's length"),
        (b"\x00\x00\x00\x00", "frame 1 says its chunk holds 0 bytes"),
        ((MAX_CHUNK_BYTES + 1).to_bytes(4, "big"), f"holds {MAX_CHUNK_BYTES + 1} bytes"),
        (frames([b"ok"]) + b"\x00\x00\x00\x09abc", "frame 2 says 9 bytes but the body ends 3"),
    ],
)
def test_unframe_when_the_body_is_wrong_names_the_frame(body: bytes, said: str) -> None:
    with pytest.raises(BadBatch, match=said):
        unframe(body)


def test_unframe_when_over_the_chunk_count_is_refused() -> None:
    with pytest.raises(BadBatch, match=f"more than {MAX_CHUNKS} chunks"):
        unframe(frames([b"x"] * (MAX_CHUNKS + 1)))


def test_manifest_problem_names_a_wrong_total_and_a_file_over_the_limit() -> None:
    assert manifest_problem([3, 4], 7, 100) is None
    assert "add up to 7 bytes, not the 8" in str(manifest_problem([3, 4], 8, 100))
    assert "more than the 5 an import takes" in str(manifest_problem([3, 4], 7, 5))


def test_addon_limits_when_compared_are_the_gateways() -> None:
    from blendmesh_addon import gateway

    assert (gateway.MAX_CHUNKS, gateway.MAX_BATCH_BYTES) == (MAX_CHUNKS, MAX_BATCH_BYTES)
    assert (gateway.FRAME, chunks.MAXIMUM) == (FRAME, MAX_CHUNK_BYTES)
