"""A revision of a scene downloaded with the libraries it links (ADR 0060).

A stored shot links ``//libraries/<name>@<revision>.blend``; the download writes the shot
as ``<folder>/<scene>.blend`` and each library revision it names, of the scene's project,
as ``<folder>/libraries/<name>@<revision>.blend``, so Blender opening the shot there
resolves every link. A folder rather than an archive: Blender opens it as it is, and a
person who imports the shot again brings the same files back.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.libraries import LIBRARY_DIR, file_name, parse_link, project_of
from contracts.scenes import Head
from services.doors.core.client import ClientError

if TYPE_CHECKING:
    from services.executor.client import LibraryFiles, SceneFiles


class DownloadRefused(ClientError):
    """The folder holds the scene's file already, or a library revision is missing."""


async def download(
    scenes: SceneFiles, libraries: LibraryFiles, head: Head, owner: str, folder: Path
) -> list[Path]:
    """Write ``head``'s .blend and the library revisions it links, of ``owner``'s project,
    into ``folder``; the files written, the shot first."""
    shot = folder / f"{head.scene_id}.blend"
    if await asyncio.to_thread(shot.exists):
        raise DownloadRefused(f"{shot} exists already; download into another folder (--to)")
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    await scenes.fetch(head, shot)
    try:
        linked = await asyncio.to_thread(libraries.links.read, shot)
    except ValueError as err:
        raise DownloadRefused(f"revision {head.revision} cannot be read: {err}") from None
    written = [shot]
    project = project_of(owner)
    for name, revision in sorted({p for x in linked if (p := parse_link(x)) is not None}):
        dest = folder / LIBRARY_DIR / file_name(name, revision)
        await asyncio.to_thread(dest.parent.mkdir, parents=True, exist_ok=True)
        if not await libraries.fetch(project, name, revision, dest):
            raise DownloadRefused(
                f"revision {head.revision} of scene {head.scene_id} links revision "
                f"{revision} of library {name}, which its project does not hold"
            )
        written.append(dest)
    return written
