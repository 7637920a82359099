"""``scene.import`` of a shot that brings its libraries along, and ``library.update``,
which points a shot's links at another revision of one, or publishes a staged .blend as
a library's next revision first (ADR 0060, docs/studio.md).

The door staged the shot, its links rewritten to ``//libraries/<name>.blend``, and each
library it links. Here each library is published as a revision of the project of the
run's user (the same bytes as its newest revision publish nothing new), and the shot's
links are rewritten to the revisions published, ``//libraries/<name>@<revision>.blend``,
before the bridge sees the shot. A library that links anything itself is refused before
it is published; so is a shot that links a library it did not bring.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from contracts.bridge import ToolErrorCode, ToolResult
from contracts.libraries import link, parse_link, parse_uploaded, uploaded_link
from contracts.scene_files import blend_problem
from services.executor.domain.library_shelf import LibraryShelf, project_for
from services.runtime.nats.objects import ObjectTooLarge

HEAD_BYTES = 1024 * 1024


class Staged(Protocol):
    """Port: the doors' staged uploads (ObjectStoreUploads)."""

    async def fetch(self, user: str, blob: str, dest: BinaryIO, max_bytes: int) -> bool: ...


def _refused(message: str, code: ToolErrorCode = "invalid_input") -> ToolResult:
    """Refused before Blender was touched: the scene is as it was."""
    return ToolResult(ok=False, error_code=code, message=message, mutated=False)


async def publish_libraries(
    shelf: LibraryShelf,
    uploads: Staged,
    user: str,
    staged: dict[str, dict[str, Any]],
    shot: Path,
) -> ToolResult | None:
    """Publish the ``staged`` libraries and point the shot at ``shot`` at their revisions;
    a refusal (nothing published past the first problem) or None."""
    try:
        linked = await asyncio.to_thread(shelf.links.read, shot)
    except ValueError as err:
        return _refused(f"the shot cannot be read as a .blend: {err}")
    missing = sorted({n for p in linked if (n := parse_uploaded(p)) and n not in staged})
    if missing:
        return _refused(
            f"the shot links the libraries {', '.join(missing)}, which the import did not "
            "bring; import it with `blendmesh scenes import`, which brings each along"
        )
    project = project_for(user)
    if project is None and staged:
        return _refused(f"{user!r} is no user name a project can be kept for")
    revisions: dict[str, int] = {}
    for name, upload in sorted(staged.items()):
        assert project is not None
        found = await _publish(shelf, uploads, user, project, name, upload, shot.parent)
        if isinstance(found, ToolResult):
            return found
        revisions[name] = found
    paths = {uploaded_link(name): link(name, rev) for name, rev in revisions.items()}
    await asyncio.to_thread(shelf.links.rewrite, shot, paths)
    return None


async def _publish(
    shelf: LibraryShelf,
    uploads: Staged,
    user: str,
    project: str,
    name: str,
    upload: dict[str, Any],
    folder: Path,
) -> int | ToolResult:
    blob, size = upload["blob"], upload["bytes"]
    path = await asyncio.to_thread(_private_file, folder)
    try:
        with await asyncio.to_thread(path.open, "wb") as out:
            try:
                found = await uploads.fetch(user, blob, out, max_bytes=size)
            except ObjectTooLarge:
                return _refused(f"library {name!r} holds more bytes than the plan says {size}")
            held = out.tell()
        if not found:
            return _refused(
                f"no staged upload {blob[:19]}… of {user} for library {name!r}: uploads "
                "expire a day after they are staged; import the shot again",
                "not_found",
            )
        if held != size:
            return _refused(f"library {name!r} holds {held} bytes, the plan says {size}")
        head = await asyncio.to_thread(_head, path)
        problem = blend_problem(head, f"library {name!r}")
        if problem is not None:
            return _refused(problem)
        try:
            inner = await asyncio.to_thread(shelf.links.read, path)
        except ValueError as err:
            return _refused(f"library {name!r} cannot be read as a .blend: {err}")
        if inner:
            return _refused(
                f"library {name!r} itself links {len(inner)} other .blend files; a library "
                "must hold its own data: make its linked data local in Blender and import "
                "the shot again"
            )
        return await shelf.store.publish(project, name, path)
    finally:
        await asyncio.to_thread(path.unlink, missing_ok=True)


def _private_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".library-", suffix=".blend", dir=folder)
    os.close(fd)
    return Path(name)


def _head(path: Path) -> bytes:
    with path.open("rb") as file:
        return file.read(HEAD_BYTES)


async def relink(shelf: LibraryShelf, path: Path, name: str, revision: int) -> ToolResult | None:
    """Point every link to library ``name`` in the scene saved at ``path`` at ``revision``
    (``library.update``); a refusal when the scene links no revision of it."""
    try:
        linked = await asyncio.to_thread(shelf.links.read, path)
    except ValueError as err:
        return _refused(f"the scene cannot be read as a .blend: {err}")
    old = [p for p in linked if (found := parse_link(p)) is not None and found[0] == name]
    if not old:
        names = _linked_names(linked)
        return _refused(
            f"the scene links no library {name!r}; it links "
            f"{', '.join(names) if names else 'none'}",
            "not_found",
        )
    await asyncio.to_thread(shelf.links.rewrite, path, dict.fromkeys(old, link(name, revision)))
    return None


def _linked_names(linked: list[str]) -> list[str]:
    return sorted({found[0] for p in linked if (found := parse_link(p)) is not None})


async def publish_linked(
    shelf: LibraryShelf,
    uploads: Staged,
    user: str,
    project: str,
    name: str,
    upload: dict[str, Any],
    path: Path,
) -> int | ToolResult:
    """Publish the staged ``upload`` as the next revision of library ``name`` when the
    scene saved at ``path`` links that library (checked first, so a refused update
    publishes nothing); the revision, or a refusal."""
    try:
        linked = _linked_names(await asyncio.to_thread(shelf.links.read, path))
    except ValueError as err:
        return _refused(f"the scene cannot be read as a .blend: {err}")
    if name not in linked:
        return _refused(
            f"the scene links no library {name!r}; it links "
            f"{', '.join(linked) if linked else 'none'}: import a shot that links it first",
            "not_found",
        )
    return await _publish(shelf, uploads, user, project, name, upload, path.parent)
