"""The cut that starts from the parent revision's chunks gives the very cut a plain one
does, for any edit of the parent's bytes, and keeps the chunks that did not move without
cutting or hashing them again."""

from __future__ import annotations

import random

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.revisions import ChunkedRevision
from services.executor.domain import chunking
from services.executor.domain.chunking import cut

SIZE = 1_200_000  # about 18 chunks of the 64 KiB average


def parent_of(old: bytes) -> ChunkedRevision:
    return cut(old, "ann").manifest


def edited(old: bytes, kind: str, at: float, size: int, seed: int) -> bytes:
    where = int(at * len(old))
    noise = random.Random(seed).randbytes(size)
    if kind == "overwrite":  # a value changed in place: what a move does to a .blend
        return old[:where] + noise + old[where + size :]
    if kind == "insert":
        return old[:where] + noise + old[where:]
    if kind == "delete":
        return old[:where] + old[where + size :]
    if kind == "append":
        return old + noise
    return old[:where]  # truncate


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(["overwrite", "insert", "delete", "append", "truncate"]),
    at=st.floats(0, 1),
    size=st.integers(1, 200_000),
    seed=st.integers(0, 2**16),
    edits=st.integers(1, 3),
)
def test_cut_with_parent_when_any_edit_equals_the_plain_cut(
    kind: str, at: float, size: int, seed: int, edits: int
) -> None:
    old = random.Random(seed + 1).randbytes(SIZE)
    new = old
    for i in range(edits):
        new = edited(new, kind, (at + i / 3) % 1, size, seed + i)
    plain = cut(new, "ann")
    liked = cut(new, "ann", parent_of(old))
    assert liked.manifest == plain.manifest
    assert {d: bytes(b) for d, b in liked.chunks.items()} == {
        d: bytes(b) for d, b in plain.chunks.items()
    }


def test_cut_with_parent_when_one_value_changed_cuts_only_around_it(monkeypatch: object) -> None:
    old = random.Random(3).randbytes(SIZE)
    new = old[:600_000] + b"moved" + old[600_005:]
    parent, plain = parent_of(old), cut(new, "ann")
    fresh: list[int] = []
    cut_from = chunking._cut_from

    def counted(view: memoryview, start: int, *rest: object) -> int:
        end = cut_from(view, start, *rest)  # type: ignore[arg-type]
        fresh.append(end - start)
        return end

    monkeypatch.setattr(chunking, "_cut_from", counted)  # type: ignore[attr-defined]
    liked = cut(new, "ann", parent)
    assert liked.manifest == plain.manifest
    # One chunk (or two, where a cut point moved) is cut again; the rest is kept as it was.
    assert len(fresh) == 1 and fresh[0] <= 2 * chunking.MAX_CHUNK_BYTES


def test_cut_with_parent_when_the_file_is_the_same_cuts_none(monkeypatch: object) -> None:
    old = random.Random(4).randbytes(SIZE)
    parent = parent_of(old)

    def refused(*_: object) -> int:
        raise AssertionError("cut afresh where every chunk stayed")

    monkeypatch.setattr(chunking, "_cut_from", refused)  # type: ignore[attr-defined]
    assert cut(old, "ann", parent).manifest.chunks == list(parent.chunks)


def test_cut_with_parent_when_its_chunks_name_other_bytes_cuts_afresh() -> None:
    # A parent whose chunks do not hash as named (another file, a damaged manifest) can
    # only cost the shortcut: every chunk is hashed before it is taken.
    old = random.Random(7).randbytes(SIZE)
    plain = cut(old, "ann").manifest
    lying = msgspec.structs.replace(plain, chunks=[("0" * 64, n) for _, n in plain.chunks])
    assert cut(old, "ann", lying).manifest == cut(old, "ann").manifest


def test_cut_with_parent_when_its_last_chunk_no_longer_ends_the_file_cuts_it_again() -> None:
    # The parent's last chunk ended with its file, not at a cut point: in a longer file the
    # same bytes may run on into a longer chunk.
    old = random.Random(5).randbytes(SIZE)
    new = old + random.Random(6).randbytes(1000)
    assert cut(new, "ann", parent_of(old)).manifest == cut(new, "ann").manifest
