"""The library revisions a shot links, put beside it before Blender opens it (ADR 0060).

A stored shot links ``//libraries/<name>@<revision>.blend`` (contracts/libraries.py).
Before every load of a shot (the head, a checkpoint, a result image, an import, a revert)
the executor empties the ``libraries`` folder beside the file and puts there, read-only,
exactly the revisions the file names, of the project of the scene the bridge holds now,
and nothing else: the bridge accepts a link only when its file is there, so a link to a
revision the project lacks, to another project's library or to any other path is refused
as an outside reference. One Blender holds one scene at a time, so one project at a time.

Each revision is fetched once into a cache of this executor, by project, and linked from
there: a library revision never changes once published.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from contracts.libraries import LIBRARY_DIR, MAX_LIBRARIES, file_name, parse_link, project_of


class LibraryStore(Protocol):
    """Port: the published revisions of each project's libraries (StoredLibraries)."""

    async def publish(self, project: str, name: str, path: Path) -> int:
        """Store the .blend at ``path`` as the newest revision of library ``name`` of
        ``project``, unless it is that already; the revision it is."""
        ...

    async def fetch(self, project: str, name: str, revision: int, dest: Path) -> bool:
        """Write the revision to ``dest``; False when the project has no such revision."""
        ...


class BlendLinks(Protocol):
    """Port: the library paths a .blend stores, read and rewritten without Blender (file
    work: called off the event loop)."""

    def read(self, path: Path) -> list[str]:
        """The stored path of each library ``path`` links; raises ValueError for a file
        that cannot be read as a .blend."""
        ...

    def rewrite(self, path: Path, paths: dict[str, str]) -> None:
        """Replace each stored library path that is a key of ``paths`` by its value."""
        ...


@dataclass
class LibraryShelf:
    """Puts a shot's library revisions beside it; ``project`` is the project of the scene
    the bridge is given next (None: a scene of nobody's, which may link nothing)."""

    store: LibraryStore
    links: BlendLinks
    cache: Path
    project: str | None = None

    async def materialise(self, shot: str) -> list[tuple[str, int]]:
        """Empty the ``libraries`` folder beside ``shot`` and put there the revisions it
        links that its project has; the (name, revision) pairs put there."""
        path = Path(shot)
        folder = path.parent / LIBRARY_DIR
        await asyncio.to_thread(_empty, folder)
        try:
            stored = await asyncio.to_thread(self.links.read, path)
        except ValueError:
            return []  # the bridge refuses the file itself, naming why
        wanted = sorted({found for p in stored if (found := parse_link(p)) is not None})
        project = self.project
        if project is None or not wanted:
            return []
        placed = []
        # Past the bound the bridge refuses the shot; none beyond it is fetched for nothing.
        for name, revision in wanted[: MAX_LIBRARIES + 1]:
            if not await self.has(project, name, revision):
                continue  # not the project's: left out, so the bridge refuses the link
            cached = self.cache / project / file_name(name, revision)
            await asyncio.to_thread(_place, cached, folder / cached.name)
            placed.append((name, revision))
        return placed

    async def has(self, project: str, name: str, revision: int) -> bool:
        """Whether ``project`` holds the revision; fetched into the cache when it does."""
        cached = self.cache / project / file_name(name, revision)
        if await asyncio.to_thread(cached.is_file):
            return True
        return await self._fetch(project, name, revision, cached)

    async def _fetch(self, project: str, name: str, revision: int, cached: Path) -> bool:
        await asyncio.to_thread(cached.parent.mkdir, parents=True, exist_ok=True)
        # Its own name: the run's and the preview's shelves may fetch one revision at once.
        part = cached.with_name(f".{cached.name}.{uuid.uuid4().hex}.part")
        try:
            if not await self.store.fetch(project, name, revision, part):
                return False
            await asyncio.to_thread(_seal, part, cached)
            return True
        finally:
            await asyncio.to_thread(part.unlink, missing_ok=True)


def project_for(owner: str) -> str | None:
    """The project of a scene of ``owner``; None for a scene of nobody's (or of a name no
    user has), which may link no library."""
    try:
        return project_of(owner) if owner else None
    except ValueError:
        return None


def _empty(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)


def _seal(part: Path, cached: Path) -> None:
    """Make ``part`` the read-only cached revision: Blender only reads a library."""
    os.chmod(part, 0o444)
    os.replace(part, cached)


def _place(cached: Path, dest: Path) -> None:
    try:
        os.link(cached, dest)  # the cache's inode: read-only, no copy
    except OSError:
        shutil.copyfile(cached, dest)
        os.chmod(dest, 0o444)
