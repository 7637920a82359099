"""Packing stored bytes (ADR 0035): a frame round-trips, the meta header decides the
encoding, and bytes that are not one bounded frame are refused before they inflate."""

from __future__ import annotations

import hashlib
import random

import pytest
import zstandard

from contracts.revisions import MAX_CHUNK_BYTES
from services.executor.adapters import packing
from services.executor.adapters.packing import Unreadable


def test_pack_when_unpacked_gives_the_same_bytes_and_stores_fewer() -> None:
    data = b"BLENDER-v500" + bytes(range(256)) * 200 + random.Random(1).randbytes(1000)
    packed, sha256 = packing.pack(memoryview(data))
    assert len(packed) < len(data) // 4
    assert zstandard.frame_content_size(packed) == len(data)
    assert sha256 == hashlib.sha256(packed).digest()
    assert packing.unpack(packed, len(data)) == data
    assert packing.unpacked(packed, packing.PACKED, len(data)) == data


def test_unpacked_when_no_encoding_header_returns_the_bytes_as_stored() -> None:
    frame, _ = packing.pack(b"x" * 100)  # a raw .blend may look like a frame: the meta decides
    assert packing.unpacked(frame, None, 10) == frame
    assert packing.unpacked(frame, {"Other": ["1"]}, 10) == frame
    assert packing.encoding({}) is None and packing.encoding(packing.PACKED) == packing.ZSTD


@pytest.mark.parametrize("values", [["gzip"], ["zstd", "gzip"], ["ZSTD"]])
def test_encoding_when_unknown_is_refused_not_read_raw(values: list[str]) -> None:
    with pytest.raises(Unreadable, match="encoding this reader does not know"):
        packing.unpacked(b"data", {packing.HEADER: values}, 100)


def test_unpack_when_the_frame_records_more_than_allowed_refuses_before_inflating() -> None:
    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(MAX_CHUNK_BYTES + 1))
    assert len(bomb) < 100
    with pytest.raises(Unreadable, match=f"would inflate to {MAX_CHUNK_BYTES + 1} bytes"):
        packing.unpack(bomb, MAX_CHUNK_BYTES)
    huge = zstandard.ZstdCompressor(level=19).compress(bytes(64 * 1024 * 1024))
    with pytest.raises(Unreadable, match="over the 262144 it may hold"):
        packing.unpack(huge, MAX_CHUNK_BYTES)


def test_unpack_when_the_frame_does_not_record_its_size_is_refused() -> None:
    streamed = zstandard.ZstdCompressor(level=1).compressobj()
    frame = streamed.compress(bytes(10 * 1024 * 1024)) + streamed.flush()
    assert zstandard.frame_content_size(frame) == -1
    with pytest.raises(Unreadable, match="does not record its size"):
        packing.unpack(frame, MAX_CHUNK_BYTES)


def test_unpack_when_the_frame_lies_about_its_size_is_refused() -> None:
    # A frame recording 1,000 bytes whose blocks hold 100,000: the header's size field is
    # rewritten (single-segment frame, 4-byte size), the blocks left as they are.
    real = zstandard.ZstdCompressor(level=1, write_checksum=False).compress(bytes(100_000))
    params = zstandard.get_frame_parameters(real)
    assert params.content_size == 100_000
    header = real[4]  # frame header descriptor: 2 bits size field, single segment
    assert header >> 6 == 2 and header & 0x20
    lying = real[:5] + (1000).to_bytes(4, "little") + real[9:]
    assert zstandard.frame_content_size(lying) == 1000
    with pytest.raises(Unreadable, match="does not decompress"):
        packing.unpack(lying, MAX_CHUNK_BYTES)


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        (b"not a frame at all", "is not a zstd frame"),
        (packing.pack(b"abc" * 1000)[0][:-3], "does not decompress"),
        (packing.pack(b"abc" * 1000)[0] + b"tail", "does not decompress"),
        (packing.pack(b"abc")[0] + packing.pack(b"def")[0], "does not decompress"),
    ],
)
def test_unpack_when_not_one_whole_frame_says_why(stored: bytes, message: str) -> None:
    with pytest.raises(Unreadable, match=message):
        packing.unpack(stored, MAX_CHUNK_BYTES)
