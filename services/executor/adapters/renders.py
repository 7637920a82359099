"""The render worker's ports over NATS: the renders object store, the job's log, and the
revisions a job renders.

Frames are objects ``<user>/<sha256>.png`` in ``<prefix>_renders``: content names them,
so a frame stored twice is one object, and the user's name comes first, so a door reads
only its own user's frames. Nothing here expires them: a job's frames are kept as its
revision is, until someone deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError, ObjectNotFoundError

from contracts.events import AnyEvent
from contracts.renders import MAX_FRAME_BYTES
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.runtime.nats import access
from services.runtime.nats.history import count_of, last_of, read_run
from services.runtime.nats.objects import put_object, read_object


class ObjectStoreFrames:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self.bucket = access.bucket(prefix, "renders")

    async def put(self, name: str, data: bytes) -> None:
        try:  # stored already (a frame rendered twice): content names it, keep the first
            store = await self._js.object_store(self.bucket)
            await store.get_info(name)
            return
        except (ObjectNotFoundError, NotFoundError):
            pass
        await put_object(self._js, self.bucket, name, data)

    async def get(self, name: str) -> bytes | None:
        return await read_object(self._js, self.bucket, name, MAX_FRAME_BYTES)


class LoggedJobs:
    """A job as the log tells it: its events, whether it stopped, its frames logged."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix

    async def events(self, job_id: str) -> Sequence[AnyEvent]:
        return await read_run(self._js, self._prefix, job_id)

    async def stopped(self, job_id: str) -> bool:
        for kind in ("render_cancel_requested", "render_ended"):
            if await last_of(self._js, self._prefix, job_id, kind) is not None:
                return True
        return False

    async def frames_logged(self, job_id: str) -> int:
        return await count_of(self._js, self._prefix, job_id, "render_frame")


class StoredRevisions:
    """A scene's committed revisions, fetched by number."""

    def __init__(self, store: JetStreamSceneStore) -> None:
        self._store = store

    async def fetch_revision(self, scene_id: str, revision: int, dest: Path) -> bool:
        found = await self._store.head(scene_id)
        if found is None or found.revision != revision:
            found = await self._store.find_revision(scene_id, revision)
        if found is None:
            return False
        await self._store.fetch(found, dest)
        return True
