"""How the scene store keeps bytes compressed: one zstd frame per object, said in its meta.

The executor saves scenes uncompressed (ADR 0035): Blender's own compression was most of
a big scene's commit, and an uncompressed file cuts into chunks that stay put. The store
compresses what it writes instead, each new chunk (or small whole file) on its own, at a
fast level. An object so written carries ``Content-Encoding: zstd`` in its meta's headers;
one without the header holds its bytes as they are (everything stored before ADR 0035),
and one with any other encoding is refused rather than guessed at: a .blend may itself
start with zstd's magic, so the bytes alone cannot say which they are.

CPU-bound: callers run ``pack`` and ``unpack`` on a thread, never on the event loop.
"""

from __future__ import annotations

import hashlib
import mmap
from collections.abc import Mapping

import zstandard

from contracts.errors import BlendmeshError

HEADER = "Content-Encoding"
ZSTD = "zstd"
PACKED = {HEADER: [ZSTD]}  # the meta headers of a packed object
# zstd level 1: a 64 KiB chunk packs in about 0.2 ms; level 3 stores 5% less for 30% more
# time (ADR 0035 measures both on the production-sized scene).
LEVEL = 1
# The largest window a frame may ask the reader for: level 1 uses 512 KiB at most, and a
# frame of a smaller input no more than the input; a hostile frame cannot ask for more.
MAX_WINDOW = 2 * 1024 * 1024


class Unreadable(BlendmeshError, ValueError):
    """Stored bytes that do not unpack: the message says why, in words a revision's
    ``RevisionDamaged`` message can carry after the chunk's name."""


def encoding(headers: Mapping[str, list[str]] | None) -> str | None:
    """The encoding an object's meta headers name: None for bytes stored as they are,
    ``ZSTD`` for a packed object; raises ``Unreadable`` for any other."""
    values = (headers or {}).get(HEADER)
    if not values:
        return None
    if list(values) == [ZSTD]:
        return ZSTD
    raise Unreadable(f"is stored in an encoding this reader does not know ({values!r:.80})")


def pack(data: bytes | memoryview | mmap.mmap) -> tuple[bytes, bytes]:
    """``data`` as one zstd frame that records its size, and the frame's SHA-256 (what the
    object's meta names)."""
    # A compressor per call: one is not safe to share between threads.
    compressor = zstandard.ZstdCompressor(level=LEVEL, write_content_size=True)
    with memoryview(data) as view:  # released at once: a map cannot close while viewed
        packed = compressor.compress(view)
    return packed, hashlib.sha256(packed).digest()


def unpack(stored: bytes, max_bytes: int) -> bytes:
    """The bytes ``stored`` packs, refused (``Unreadable``) when they are not one whole
    frame, or would inflate beyond ``max_bytes``: the frame's recorded size is checked
    before a byte is inflated, and inflating stops at it."""
    try:
        size = zstandard.frame_content_size(stored)
    except zstandard.ZstdError as exc:
        raise Unreadable(f"is not a zstd frame ({exc})") from None
    if size < 0:  # every frame ``pack`` writes records its size
        raise Unreadable("is a zstd frame that does not record its size")
    if size > max_bytes:
        raise Unreadable(f"would inflate to {size} bytes, over the {max_bytes} it may hold")
    reader = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW)
    try:
        data = reader.decompress(stored, max_output_size=max_bytes, allow_extra_data=False)
    except zstandard.ZstdError as exc:
        raise Unreadable(f"does not decompress ({exc})") from None
    if len(data) != size:
        raise Unreadable(f"inflates to {len(data)} bytes, not the {size} its frame records")
    return data


def unpacked(stored: bytes, headers: Mapping[str, list[str]] | None, max_bytes: int) -> bytes:
    """The bytes an object holds, whichever way it was stored."""
    return stored if encoding(headers) is None else unpack(stored, max_bytes)
