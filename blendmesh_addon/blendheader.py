"""Which Blender saved a .blend, from its first bytes, so a pull never writes a file the
open Blender cannot read.

Blender reads files from older versions, not from newer ones, and Blender 5.0 changed
the file's header (``BLENDER17-01v0500``) in a way 4.x and older do not read at all: a
revision the mesh's Blender 5 saved opens in Blender 5 and later only. A zstd-compressed
file shows its header only once decompressed, which the standard library cannot do; it
is then not judged here.
"""

from __future__ import annotations

import re

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
NEWER = "cannot open files from a newer Blender"
_OLD = re.compile(rb"BLENDER[_-][vV](\d)(\d\d)")  # BLENDER-v304: 64-bit, little-endian, 3.4
_NEW = re.compile(rb"BLENDER\d\d-\d\d[vV](\d\d)(\d\d)")  # BLENDER17-01v0500: 5.0


def saved_by(data: bytes) -> tuple[int, int] | None:
    """(major, minor) of the Blender that saved ``data``; None when the header is
    compressed or not one this reader knows."""
    head = data[:17]
    found = _NEW.match(head) or _OLD.match(head)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2))


def unreadable(data: bytes, running: tuple[int, int]) -> str:
    """Why the Blender at version ``running`` cannot open ``data``; "" when it can (or
    this reader cannot tell)."""
    saved = saved_by(data)
    if saved is None or saved <= running:
        return ""
    return (
        f"it was saved by Blender {saved[0]}.{saved[1]}, and Blender "
        f"{running[0]}.{running[1]} {NEWER}"
    )
