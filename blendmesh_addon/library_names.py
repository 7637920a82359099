"""A shot's library names and limits as the mesh makes them (contracts/libraries.py), for
the add-on, which imports nothing of the mesh; a unit test holds the two equal. No bpy
here, so that test reads them outside Blender."""

from __future__ import annotations

import os
import re

MAX_LIBRARIES = 16
MAX_LIBRARY_BYTES = 64 * 1024 * 1024
MAX_LIBRARIES_TOTAL_BYTES = 4 * MAX_LIBRARY_BYTES
_STORED = re.compile(r"([a-z0-9][a-z0-9_-]{0,62})@[1-9][0-9]{0,7}")  # name@revision


def name_for(path: str) -> str:
    """A library's name for its file, as ``contracts.libraries.name_for`` makes it; a file
    pulled from blendmesh (``characters@2.blend``) keeps its library's name."""
    stem = os.path.basename(path.replace("\\", "/"))
    stem = stem[: -len(".blend")] if stem.lower().endswith(".blend") else stem
    stored = _STORED.fullmatch(stem)
    if stored:
        return stored.group(1)
    return re.sub(r"[^a-z0-9_-]+", "-", stem.lower()).strip("-_")[:63]
