"""What the polygon budget compares a revision with: the faces of the revision before it,
which is where the run that committed it started (a scene's runs commit one at a time).

Reading that revision's artifact again costs a big scene tens of milliseconds on every
run's path (its object is found, read, unpacked and decoded), although the guardians
judged that very revision one run earlier. So the faces of each revision judged are
remembered (``KnownFaces``): a scene's revision number names one revision for good (the
store moves a head only forward and never deletes a scene), so what was counted for it
is what its artifact would say.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from services.guardians.checks.budget import evaluated_faces

# (scene id, revision) -> that revision's inspection artifact, None when there is none
Revision = Callable[[str, int], Awaitable[bytes | None]]
MAX_KNOWN = 1024  # revisions whose faces are remembered; least recently used first out


class KnownFaces:
    """The evaluated faces of revisions judged, by (scene id, revision)."""

    def __init__(self, limit: int = MAX_KNOWN) -> None:
        self.limit = limit
        self._faces: OrderedDict[tuple[str, int], int] = OrderedDict()

    def get(self, scene_id: str, revision: int) -> int | None:
        found = self._faces.get((scene_id, revision))
        if found is not None:
            self._faces.move_to_end((scene_id, revision))
        return found

    def put(self, scene_id: str, revision: int, faces: int) -> None:
        self._faces[(scene_id, revision)] = faces
        self._faces.move_to_end((scene_id, revision))
        while len(self._faces) > self.limit:
            self._faces.popitem(last=False)


async def faces_before(
    revision: Revision, scene_id: str, number: int, known: KnownFaces | None = None
) -> int | None:
    """The evaluated faces of revision ``number - 1``: 0 before a scene's first revision,
    None when that artifact cannot be read (the whole scene is judged then). ``known``
    answers first for a revision judged before."""
    if number <= 1:
        return 0
    if known is not None and (faces := known.get(scene_id, number - 1)) is not None:
        return faces
    data = await revision(scene_id, number - 1)
    if data is None:
        return None
    return await asyncio.to_thread(evaluated_faces, data)  # a big scene's artifact is MBs
