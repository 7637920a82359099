"""The run route's guard for an exported .blend a person changed since blendmesh wrote it.

A run on a scene rewrites its exported file (``<home>/scenes/<id>.blend``); if someone
edited that file in Blender, the run would overwrite their work. The check is the scene
door's (``services/doors/core/scene_client.py``, as the CLI's): with no choice the run is refused
409 naming the file and both ways out; ``exportedFile: "discard"`` keeps the file beside
itself and goes on; ``exportedFile: "adopt"`` runs the file's import instead, which waits
for approval; once it is approved the request is sent again and builds on that file.
"""

from __future__ import annotations

import asyncio

from contracts.events import RunRequested
from services.doors.core import ownership, scene_client
from services.doors.core.scene_client import Choice, SceneDoor
from services.doors.gateway.context import Gateway
from services.doors.gateway.errors import TooLarge
from services.executor.client import SceneFiles

WORDS = ('"exportedFile": "adopt"', '"exportedFile": "discard"')


async def guard(
    gw: Gateway, user: str, scene_id: str, choice: Choice | None
) -> RunRequested | None:
    """None when the run may go ahead; the import of the exported file when the caller
    chose to adopt it. Raises ``SceneFileChanged`` (409) for a changed file and no choice."""
    owner = await SceneFiles(gw.bus.js, gw.prefix).owner(scene_id)
    if owner is not None and not ownership.owns(owner, user):
        return None  # not the caller's: the executor refuses the run, and the file is not theirs
    # Hashing (and keeping aside) a .blend is file work: off the event loop.
    adopt = await asyncio.to_thread(scene_client.guard_export, gw.settings, scene_id, choice, WORDS)
    if not adopt:
        return None
    path = scene_client.exported(gw.settings).path(scene_id)
    limit = gw.settings.max_upload_bytes
    if path.stat().st_size > limit:  # never read a file larger than an import takes
        raise TooLarge(
            f"{path.name} in the scenes folder is larger than the {limit} bytes an import "
            f"takes (BLENDMESH_MAX_UPLOAD_BYTES); raise the limit or use {WORDS[1]}"
        )
    file = await asyncio.to_thread(path.open, "rb")  # staged a chunk at a time
    try:
        return await SceneDoor(gw.bus, gw.settings).import_request(user, scene_id, file, path.name)
    finally:
        await asyncio.to_thread(file.close)
