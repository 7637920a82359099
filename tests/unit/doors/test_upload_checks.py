"""The door's check of a file to import, on the file itself: its size from where it stands,
and only its first bytes read to tell a .blend, compressed or not; a file too big is
refused before a byte of it is read."""

from __future__ import annotations

import gzip
import io

import pytest
import zstandard

from services.doors.core.scene_client import HEAD_BYTES, NotABlend, UploadTooLarge, check_upload

BLEND = b"BLENDER-v405RENDH" + bytes(range(256)) * 4096  # 1 MiB and a little


class Reads(io.BytesIO):
    """A file in memory that counts the bytes read from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.read_bytes = 0

    def read(self, size: int | None = -1) -> bytes:
        got = super().read(size)
        self.read_bytes += len(got)
        return got


@pytest.mark.parametrize(
    "data",
    [BLEND, gzip.compress(BLEND), zstandard.ZstdCompressor().compress(BLEND)],
    ids=["plain", "gzip", "zstd"],
)
def test_check_upload_when_a_blend_reads_its_head_only_and_leaves_the_file_there(
    data: bytes,
) -> None:
    file = Reads(b"ignored prefix" + data)
    file.seek(len(b"ignored prefix"))  # checked from where it stands, as it is staged
    assert check_upload(file, "scene.blend", limit=len(data)) == len(data)
    assert file.tell() == len(b"ignored prefix")
    assert file.read_bytes <= HEAD_BYTES


def test_check_upload_when_too_big_refuses_before_reading() -> None:
    file = Reads(BLEND)
    with pytest.raises(UploadTooLarge) as refused:
        check_upload(file, "scene.blend", limit=len(BLEND) - 1)
    assert str(refused.value) == (
        f"scene.blend holds {len(BLEND)} bytes, more than the {len(BLEND) - 1} an import "
        "takes (BLENDMESH_MAX_UPLOAD_BYTES); save it compressed (File > Save with Compress) "
        "or raise the limit"
    )
    assert file.read_bytes == 0


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"not blender at all" * 100_000, "notes.txt is not a .blend file"),
        (b"", "notes.txt is empty"),
        (gzip.compress(b"PK zip inside" * 1000), "notes.txt is not a .blend file"),
    ],
    ids=["text", "empty", "gzip-of-other"],
)
def test_check_upload_when_not_a_blend_says_so_from_its_head(data: bytes, words: str) -> None:
    file = Reads(data)
    with pytest.raises(NotABlend, match=words):
        check_upload(file, "notes.txt", limit=len(data) + 1)
    assert file.read_bytes <= HEAD_BYTES
