"""What a .blend refers to outside itself, judged from its blocks before Blender opens it.

A scene may only hold what its own file holds: a linked library would be read from the
host's disk when the file is opened (another user's scene, say), and an image, font,
sound, cache, volume, text or movie clip stored as a path would be read from there when
Blender needs it. Packed data lives inside the file and is fine, and so is a shot's link to
a library of its own project that the executor put beside it (shelf.py, ADR 0060): the
caller says which stored paths those are. ``blendmesh/scene.load``
refuses a file with any of these, naming each by kind and datablock name and showing only
the last part of its path, never where it points on this host.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from services.bridge.blendfiles.blendfile import Block, Sdna, read_blocks

SHOWN = 10  # references a message names; it counts the rest
ADVICE = (
    "blendmesh opens only self-contained files: make linked data local and pack external "
    "files into the .blend in Blender (File > External Data > Pack Resources), or remove them"
)
# Blender's image and movie clip sources that read a file (IMA_SRC_FILE, _SEQUENCE, _MOVIE,
# _TILED); generated and viewer images have no file behind them.
_IMAGE_FILE_SOURCES = {1, 2, 3, 6}
_BUILTIN_FONT = "<builtin>"
_TEXT_DATA = 64  # blocks after a text kept to find its path (Blender writes it first)


@dataclass(frozen=True)
class Reference:
    """One thing outside the file: its kind, its datablock's name (empty when Blender
    reports only a path) and the last part of its path."""

    kind: str
    name: str
    file: str

    def __str__(self) -> str:
        where = f" ({self.file})" if self.file else ""
        return f"{self.kind} {self.name!r}{where}" if self.name else f"file {self.file!r}"


# ID code -> (kind, the struct Blender writes for it, the fields its path may be in: the
# SDNA keeps the names older Blenders used, so Image's filepath is ``name`` there).
_KINDS: dict[bytes, tuple[str, str, tuple[str, ...]]] = {
    b"LI\0\0": ("library", "Library", ("name", "filepath")),
    b"IM\0\0": ("image", "Image", ("name", "filepath")),
    b"VF\0\0": ("font", "VFont", ("name", "filepath")),
    b"SO\0\0": ("sound", "bSound", ("name", "filepath")),
    b"CF\0\0": ("cache file", "CacheFile", ("filepath",)),
    b"VO\0\0": ("volume", "Volume", ("filepath", "name")),
    b"TX\0\0": ("text", "Text", ("name", "filepath")),
    b"MC\0\0": ("movie clip", "MovieClip", ("name", "filepath")),
}
_TEXT = b"TX\0\0"
_LIBRARY = b"LI\0\0"
_DATA = b"DATA"


def last_part(path: str) -> str:
    """The last part of a path as Blender stores it (``//`` relative, either separator)."""
    return re.split(r"[\\/]", path)[-1]


def describe(found: list[Reference]) -> str:
    listed = ", ".join(str(ref) for ref in found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return listed + more


class _Keep:
    """Which blocks to hold: the IDs above, and the few blocks right after a text (its
    path is one of them)."""

    def __init__(self) -> None:
        self.after_text = 0

    def __call__(self, code: bytes, length: int) -> bool:
        if code == _DATA and self.after_text:
            self.after_text -= 1
            return length <= 1024 + 1
        self.after_text = _TEXT_DATA if code == _TEXT else 0
        return code in _KINDS


def references(path: str, accepts: Callable[[str], bool] | None = None) -> list[Reference]:
    """Everything the file at ``path`` would read from outside itself, in file order, but
    the libraries whose stored path ``accepts`` takes (a shot's own, shelf.py).
    Raises blendfile.Unreadable."""
    blocks, sdna = read_blocks(path, _Keep())
    data = {block.old: block for block in blocks if block.code == _DATA}
    found = []
    for block in blocks:
        if block.code in _KINDS:
            ref = _outside(block, sdna, data, accepts)
            if ref is not None:
                found.append(ref)
    return found


def _outside(
    block: Block, sdna: Sdna, data: dict[int, Block], accepts: Callable[[str], bool] | None
) -> Reference | None:
    kind, struct_name, path_fields = _KINDS[block.code]
    name = (sdna.text(block, "id.name") or "")[2:]  # after the ID code Blender prefixes
    if sdna.struct_of(block) != struct_name:
        return Reference(kind, name or "?", "a block blendmesh cannot read")
    if block.code == _TEXT:
        pointer = next((p for f in path_fields if (p := sdna.number(block, f)) is not None), 0)
        if not pointer:
            return None
        held = data.get(pointer)
        return Reference(kind, name, last_part(_c_string(held.data)) if held else "")
    stored = next((t for f in path_fields if (t := sdna.text(block, f)) is not None), None)
    if stored is None:
        return Reference(kind, name, "a path blendmesh cannot read")
    packed = sdna.number(block, "packedfile") or sdna.number(block, "packedfiles.first")
    if block.code == b"LI\0\0":
        if accepts is not None and not packed and accepts(stored):
            return None
        return Reference(kind, name, last_part(stored))  # linked data is refused, packed or not
    if not stored or packed or (kind == "font" and stored == _BUILTIN_FONT):
        return None
    if kind == "image" and sdna.number(block, "source") not in _IMAGE_FILE_SOURCES:
        return None
    return Reference(kind, name, last_part(stored))


def _c_string(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def library_paths(path: str) -> list[str]:
    """The paths of the libraries the file at ``path`` links, as it stores them, read with
    the same bounds as ``references`` (the executor reads them to know which library
    revisions to put beside a shot). Raises blendfile.Unreadable."""
    blocks, sdna = read_blocks(path, lambda code, _: code == _LIBRARY)
    found = []
    for block in blocks:
        fields = _KINDS[_LIBRARY][2]
        found.append(next((t for f in fields if (t := sdna.text(block, f)) is not None), ""))
    return found
