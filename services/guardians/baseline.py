"""What the polygon budget compares a revision with: the faces of the revision before it,
which is where the run that committed it started (a scene's runs commit one at a time)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from services.guardians.checks.budget import evaluated_faces

# (scene id, revision) -> that revision's inspection artifact, None when there is none
Revision = Callable[[str, int], Awaitable[bytes | None]]


async def faces_before(revision: Revision, scene_id: str, number: int) -> int | None:
    """The evaluated faces of revision ``number - 1``: 0 before a scene's first revision,
    None when that artifact cannot be read (the whole scene is judged then)."""
    if number <= 1:
        return 0
    data = await revision(scene_id, number - 1)
    if data is None:
        return None
    return await asyncio.to_thread(evaluated_faces, data)  # a big scene's artifact is MBs
