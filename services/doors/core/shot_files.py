"""A shot and the library .blend files it links, made ready to import (ADR 0060).

blender-asset-tracer (BAT, Blender Studio's own reader, which Flamenco packs shots with)
finds the libraries the shot links without opening Blender. Each becomes a library of the
project named after its file, and a copy of the shot is written whose links name them as
``//libraries/<name>.blend``; the executor publishes each library and points the links at
the revisions it published. Only the libraries the shot links itself are brought along: a
library that links another is refused by the executor, as a library must be
self-contained. File work throughout: call it off the event loop.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from blender_asset_tracer import blendfile as bat
from blender_asset_tracer import trace

from contracts.libraries import (
    MAX_LIBRARIES,
    MAX_LIBRARIES_TOTAL_BYTES,
    MAX_LIBRARY_BYTES,
    name_for,
    parse_link,
    uploaded_link,
)
from services.doors.core.scene_client import LibraryProblem

__all__ = ["LibraryProblem", "Shot", "gather"]


@dataclass
class Shot:
    """The file to stage (the shot itself, or its rewritten copy in ``folder``) and the
    library files it links by name; ``close`` removes the copy."""

    file: Path
    libraries: dict[str, Path] = field(default_factory=dict)
    folder: Path | None = None

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def linked_libraries(path: Path) -> dict[bytes, Path]:
    """The path each library the shot at ``path`` links is stored by -> where it is."""
    found: dict[bytes, Path] = {}
    shot = path.resolve()
    try:
        for usage in trace.deps(path):
            if usage.block.code == b"LI" and Path(usage.block.bfile.filepath).resolve() == shot:
                found[bytes(usage.asset_path)] = Path(usage.abspath)
    finally:
        bat.close_all_cached()
    return found


def gather(path: Path) -> Shot:
    """The shot at ``path`` ready to stage: unchanged when it links no library; else a
    copy linking ``//libraries/<name>.blend``, with each library named. Raises
    LibraryProblem naming the library and what to do."""
    from services.executor.client import BlendFileLinks

    try:
        # Read first with blendmesh's own bounded reader, which streams a compressed file:
        # BAT inflates one whole, and most files link nothing.
        if not BlendFileLinks().read(path):
            return Shot(path)
    except ValueError:
        return Shot(path)  # the import refuses it, saying why
    linked = linked_libraries(path)
    if not linked:
        return Shot(path)
    if len(linked) > MAX_LIBRARIES:
        raise LibraryProblem(
            f"{path.name} links {len(linked)} libraries, more than the {MAX_LIBRARIES} a shot "
            "may: make the rest local in Blender (Object > Relations > Make Local)"
        )
    names: dict[bytes, str] = {}
    files: dict[str, Path] = {}
    total = 0
    for stored, where in sorted(linked.items()):
        if not where.is_file():
            raise LibraryProblem(
                f"{path.name} links {where.name}, which is not at {where}: put it back or "
                "relink it in Blender (File > External Data > Find Missing Files)"
            )
        size = where.stat().st_size
        if size > MAX_LIBRARY_BYTES:
            raise LibraryProblem(
                f"library {where.name} holds {size} bytes, more than the {MAX_LIBRARY_BYTES} "
                "a library may"
            )
        total += size
        # A shot downloaded from blendmesh keeps its libraries' names (``name@revision``).
        stored_as = parse_link(stored.decode("utf-8", "replace"))
        named = stored_as[0] if stored_as else name_for(where.name)
        name = _unique(named or "library", files)
        names[stored], files[name] = name, where
    if total > MAX_LIBRARIES_TOTAL_BYTES:
        raise LibraryProblem(
            f"the libraries {path.name} links hold {total} bytes, more than the "
            f"{MAX_LIBRARIES_TOTAL_BYTES} a shot's libraries may together"
        )
    folder = Path(tempfile.mkdtemp(prefix="blendmesh-shot-"))
    copy = folder / path.name
    shutil.copyfile(path, copy)
    _relink(copy, names)
    return Shot(copy, files, folder)


def _unique(name: str, taken: dict[str, Path]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name[:58]}-{n}" in taken:
        n += 1
    return f"{name[:58]}-{n}"


def _relink(copy: Path, names: dict[bytes, str]) -> None:
    opened = bat.BlendFile(copy, mode="r+b")
    try:
        for block in opened.find_blocks_from_code(b"LI"):
            stored = block[b"name"]
            if isinstance(stored, bytes) and stored in names:
                block[b"name"] = uploaded_link(names[stored]).encode()
    finally:
        opened.close()
