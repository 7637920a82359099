"""A shot's library .blend files, found where Blender reads them, so a push brings them
along (docs/studio.md, "Linked libraries").

Blender's own Python may not have blender-asset-tracer, so the files are found through
``bpy.data.libraries`` and read as they are. The pushed copy links each as
``//libraries/<name>.blend``, the form an import names the libraries it brings by; the
open session keeps its own paths. The limits and names are library_names.py's: past
them nothing is sent.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

import bpy

from . import files
from .gateway import Gateway
from .library_names import MAX_LIBRARIES, MAX_LIBRARIES_TOTAL_BYTES, MAX_LIBRARY_BYTES, name_for


class LibraryProblem(Exception):
    """A library the push cannot bring; ``str()`` names it and what to do."""


@dataclass(frozen=True)
class Library:
    name: str  # as the import names it: the file's stem, lower case
    path: str  # where Blender reads it
    what: str  # its file's name, to show the artist

    def read(self) -> bytes:
        """The library's bytes (file work: the add-on reads them on its worker thread)."""
        try:
            with open(self.path, "rb") as file:
                data = file.read(MAX_LIBRARY_BYTES + 1)
        except OSError as exc:
            raise LibraryProblem(
                f"cannot read library {self.what} ({exc.strerror}): put it back or relink "
                "it (File > External Data > Find Missing Files)"
            ) from None
        if len(data) > MAX_LIBRARY_BYTES:
            raise LibraryProblem(f"library {self.what} grew past {MAX_LIBRARY_BYTES} bytes")
        return data


def _unique(name: str, taken: dict[str, Library]) -> str:
    base = name or "library"
    found, n = base, 2
    while found in taken:  # at most MAX_LIBRARIES names are taken
        found, n = f"{base[:58]}-{n}", n + 1
    return found


def gathered() -> dict[str, Library]:
    """Each library the open file links, by its stored path. Raises LibraryProblem for too
    many, a nested or missing one, or too many bytes, before anything is sent."""
    libraries = list(bpy.data.libraries)
    if len(libraries) > MAX_LIBRARIES:
        raise LibraryProblem(
            f"the file links {len(libraries)} libraries, more than the {MAX_LIBRARIES} a "
            "shot may: make the rest local (Object > Relations > Make Local)"
        )
    found: dict[str, Library] = {}
    named: dict[str, Library] = {}
    total = 0
    for library in libraries:
        what = os.path.basename(library.filepath) or library.name
        if getattr(library, "parent", None) is not None:
            raise LibraryProblem(
                f"library {what} is linked by another library; a library must hold its "
                "own data: make its linked data local first"
            )
        path = bpy.path.abspath(library.filepath)
        if not os.path.isfile(path):
            raise LibraryProblem(
                f"the file links {what}, which is not where it points: put it back or "
                "relink it (File > External Data > Find Missing Files)"
            )
        size = os.path.getsize(path)
        if size > MAX_LIBRARY_BYTES:
            raise LibraryProblem(
                f"library {what} holds {size} bytes, more than the {MAX_LIBRARY_BYTES} a "
                "library may"
            )
        total += size
        if total > MAX_LIBRARIES_TOTAL_BYTES:
            raise LibraryProblem(
                f"the libraries hold more than the {MAX_LIBRARIES_TOTAL_BYTES} bytes a "
                "shot's libraries may together"
            )
        name = _unique(name_for(library.filepath), named)
        named[name] = found[library.filepath] = Library(name, path, what)
    return found


def saved_shot(libraries: dict[str, Library]) -> bytes:
    """The open session as a .blend whose links read ``//libraries/<name>.blend``; the
    session's own library paths are put back at once, and nothing is reloaded."""
    kept = {library: library.filepath for library in bpy.data.libraries}
    try:
        for library, path in kept.items():
            library.filepath = f"//libraries/{libraries[path].name}.blend"
        with tempfile.TemporaryDirectory(prefix="blendmesh-") as folder:
            copy = os.path.join(folder, "shot.blend")
            # relative_remap off: the links keep the form above, wherever the copy is.
            bpy.ops.wm.save_as_mainfile(
                filepath=copy, copy=True, compress=False, relative_remap=False
            )
            with open(copy, "rb") as file:
                return file.read()
    finally:
        for library, path in kept.items():
            library.filepath = path


def saved(libraries: dict[str, Library]) -> bytes:
    """What a push sends of the open file: the shot with its links pointing at the
    libraries sent beside it, or the file as it is when it links none."""
    return saved_shot(libraries) if libraries else files.saved_copy()


def send(gw: Gateway, scene: str, data: bytes, libraries: dict[str, Library]) -> tuple[int, Any]:
    """Import ``data`` as ``scene``, with each library's bytes when it links any (read
    here, on the worker, never on Blender's thread)."""
    if not libraries:
        return gw.import_blend(scene, data)
    return gw.import_shot(scene, data, {lib.name: lib.read() for lib in libraries.values()})
