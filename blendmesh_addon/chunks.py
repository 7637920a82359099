"""A saved .blend cut into chunks at its own block boundaries, so a push sends only what
changed (docs/adr/0051-a-push-sends-the-blocks-that-changed.md).

The mesh cuts revisions with FastCDC (ADR 0021), which Blender's own Python cannot import,
and a content-defined cut written in Python takes tens of seconds over a 77 MiB file. An
uncompressed .blend needs none: it is a file header and a sequence of blocks (a block
header: code, length, old address, struct index, count; then its bytes), and Blender
writes a datablock nothing changed byte for byte as it did at the last save of the same
session. So the cuts fall after a block, chosen by a CRC of the block's header (the
chance of a cut grows with the block's size, so chunks average ``AVERAGE`` bytes whatever
the blocks' sizes), never within ``MINIMUM`` of the last cut; a block larger than
``MAXIMUM`` (a big mesh's vertices) is cut every ``MAXIMUM`` bytes from its start. The
cost is one pass that reads block headers and one SHA-256 of the file.

A file this cannot walk (compressed, or a header it does not know) is cut every
``MAXIMUM`` bytes: still correct, it only finds less in common with the last push.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass

MINIMUM = 16 * 1024
AVERAGE = 64 * 1024
MAXIMUM = 256 * 1024  # the gateway's MAX_CHUNK_BYTES (contracts/pushed_chunks.py)
_SPAN = 1 << 32


@dataclass(frozen=True)
class Chunk:
    sha256: str  # hex
    offset: int
    size: int


@dataclass(frozen=True)
class Cut:
    sha256: str  # of the whole file, hex
    size: int
    chunks: list[Chunk]


@dataclass(frozen=True)
class _Layout:
    header: int  # bytes of the file header
    bhead: int  # bytes of a block header
    length: struct.Struct  # the block's data length, at ``at`` in its header
    at: int


def layout(data: bytes | memoryview) -> _Layout | None:
    """How ``data``'s blocks are laid out; None when it is not an uncompressed .blend
    this knows."""
    head = bytes(data[:17])
    if not head.startswith(b"BLENDER"):
        return None
    if head[7:9] == b"17" and head[9:12] == b"-01" and head[12:13] in (b"v", b"V"):
        # Blender 5.0 and later: a 17-byte header, 32-byte block headers (code, struct
        # index, old address, then 64-bit length and count).
        order = "<" if head[12:13] == b"v" else ">"
        return _Layout(17, 32, struct.Struct(order + "q"), 16)
    if head[7:8] in (b"-", b"_") and head[8:9] in (b"v", b"V") and head[9:12].isdigit():
        order = "<" if head[8:9] == b"v" else ">"
        pointer = 8 if head[7:8] == b"-" else 4
        return _Layout(12, 16 + pointer, struct.Struct(order + "i"), 4)
    return None


def cut(data: bytes) -> Cut:
    """``data`` cut into chunks, each named by its SHA-256."""
    view = memoryview(data)
    chunks = [
        Chunk(hashlib.sha256(view[start:end]).hexdigest(), start, end - start)
        for start, end in _spans(view)
    ]
    return Cut(hashlib.sha256(view).hexdigest(), len(data), chunks)


def _spans(view: memoryview) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    size = len(view)
    found = layout(view)
    start = 0
    pos = found.header if found else size
    while found is not None and pos + found.bhead <= size:
        header = view[pos : pos + found.bhead]
        length = found.length.unpack_from(header, found.at)[0]
        end = pos + found.bhead + length
        if length < 0 or end > size:
            break  # not a block this can read: the rest is cut by size
        if header[:4] == b"ENDB":
            pos = size
            break
        if end - pos > MAXIMUM:  # one huge block: cut before it, then through it
            if pos > start:
                spans.append((start, pos))
            pieces = range(pos, end, MAXIMUM)
            spans += [(s, s + MAXIMUM) for s in pieces[:-1]]
            start = pieces[-1]  # its tail begins the next chunk
        elif end - start > MAXIMUM:
            spans.append((start, pos))
            start = pos
        elif end - start >= MINIMUM and _cuts_after(header, end - pos):
            spans.append((start, end))
            start = end
        pos = end
    spans += [(s, min(s + MAXIMUM, size)) for s in range(start, size, MAXIMUM)]
    return spans


def _cuts_after(header: memoryview, size: int) -> bool:
    """Whether a chunk ends after this block: true for about ``size / AVERAGE`` of the
    blocks of a size, chosen by their headers' CRC (stable while the block is)."""
    return zlib.crc32(header) < _SPAN * size // AVERAGE
