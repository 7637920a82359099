"""A digest of what a saved .blend holds, leaving out what changes without the scene.

Blender writes the ``GLOB`` block (file globals) with bytes it never set, which differ
from one save to the next depending on where the save was called from; ``TEST`` is the
thumbnail and ``REND`` the render summary shown in file browsers. Every other block,
headers included, goes into the digest, so any change of the scene still shows.
Uncompressed files only (``files.py`` saves its copies so).
"""

from __future__ import annotations

import hashlib
import struct

SKIPPED = {b"GLOB", b"TEST", b"REND"}
END = b"ENDB"


def digest(data: bytes) -> str:
    """``sha256:<hex>`` of every block but the volatile ones; of all bytes when ``data``
    is not a .blend this reader knows (it then counts as changed more often, never less)."""
    try:
        parts = list(_blocks(data))
    except ValueError:
        parts = [data]
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return "sha256:" + h.hexdigest()


def _blocks(data: bytes) -> list[bytes]:
    if not data.startswith(b"BLENDER"):
        raise ValueError("not an uncompressed .blend")
    if data[7:9] == b"17":  # Blender 5's header: BLENDER17-01v0500, 64-bit block headers
        offset, layout, little = 17, "4siQqq", data[12:13] == b"v"
        length_at, size = 3, 32
    else:  # BLENDER-v304: pointer size, endianness, version
        offset, little = 12, data[8:9] == b"v"
        pointer = "Q" if data[7:8] == b"-" else "I"
        layout, length_at = "4si" + pointer + "ii", 1
        size = struct.calcsize("<" + layout)
    fmt = ("<" if little else ">") + layout
    found = [data[:offset]]
    while offset + size <= len(data):
        header = struct.unpack_from(fmt, data, offset)
        code, length = header[0], int(header[length_at])
        end = offset + size + length
        if length < 0 or end > len(data):
            raise ValueError("a block runs past the end of the file")
        if code not in SKIPPED:
            found.append(data[offset:end])
        if code == END:
            return found
        offset = end
    raise ValueError("no ENDB block")
