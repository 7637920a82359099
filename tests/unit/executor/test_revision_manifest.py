"""The revision manifest (ADR 0021): what decodes, what is refused and why, and the cut
that makes one reassembling to the same bytes."""

from __future__ import annotations

import random

import msgspec
import pytest

from contracts import revisions
from contracts.revisions import ChunkedRevision, ManifestError
from services.executor.domain.chunking import RevisionDamaged, assemble, cut

HEX = "ab" * 32


def manifest(**fields: object) -> bytes:
    base: dict[str, object] = {
        "format": revisions.FORMAT,
        "space": "ann",
        "size": 10,
        "digest": "blake3:" + HEX,
        "chunks": [[HEX, 10]],
    }
    return msgspec.json.encode({**base, **fields})


def test_decode_when_well_formed_returns_the_manifest() -> None:
    got = revisions.decode(manifest())
    assert got == ChunkedRevision(space="ann", size=10, digest="blake3:" + HEX,
                                  chunks=[(HEX, 10)])  # fmt: skip
    assert revisions.is_manifest(revisions.encode(got))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"digest": "sha256:" + HEX}, "is no blake3"),
        ({"chunks": [["../etc", 10]]}, "bad chunk"),
        ({"chunks": [[HEX, 0]]}, "bad chunk"),
        ({"chunks": [[HEX, revisions.MAX_CHUNK_BYTES + 1]]}, "bad chunk"),
        ({"size": 11}, "do not add up"),
        ({"extra": 1}, "does not decode"),
        ({"format": "chunks-0"}, "does not decode"),
    ],
)
def test_decode_when_hostile_names_what_is_wrong(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        revisions.decode(manifest(**fields))


def test_decode_when_too_many_chunks_is_refused_before_they_are_checked() -> None:
    many = [[HEX, 1]] * (revisions.MAX_CHUNKS + 1)
    with pytest.raises(ManifestError, match="chunks, over"):
        revisions.decode(manifest(chunks=many, size=len(many)))


def test_is_manifest_when_data_is_a_blend_is_false() -> None:
    assert not revisions.is_manifest(b"BLENDER-v500")
    assert not revisions.is_manifest(b"\x28\xb5\x2f\xfd zstd")


def test_cut_when_assembled_gives_the_same_bytes_and_an_edit_moves_few_chunks() -> None:
    data = random.Random(7).randbytes(2_000_000)
    whole = cut(data, "ann")
    assert assemble(whole.manifest, dict(whole.chunks), "r") == data
    sizes = [size for _, size in whole.manifest.chunks]
    assert max(sizes) <= revisions.MAX_CHUNK_BYTES and sum(sizes) == len(data)
    changed = cut(data[:999_000] + b"edit" + data[999_004:], "ann")
    assert len(set(changed.chunks) - set(whole.chunks)) == 1


def test_assemble_when_a_chunk_is_wrong_or_missing_raises_damaged() -> None:
    data = random.Random(8).randbytes(300_000)
    whole = cut(data, "ann")
    first = whole.manifest.chunks[0][0]
    with pytest.raises(RevisionDamaged, match="is not in the store"):
        assemble(whole.manifest, {**whole.chunks, first: None}, "revision 3 of scene s")
    with pytest.raises(RevisionDamaged, match="does not hash to its name"):
        assemble(whole.manifest, {**whole.chunks, first: b"x"}, "revision 3 of scene s")


def test_assemble_when_chunks_verify_but_file_digest_differs_raises_damaged() -> None:
    whole = cut(random.Random(9).randbytes(100_000), "ann")
    lying = msgspec.structs.replace(whole.manifest, digest="blake3:" + HEX)
    with pytest.raises(RevisionDamaged, match="do not add up to the file it recorded"):
        assemble(lying, dict(whole.chunks), "revision 1 of scene s")
