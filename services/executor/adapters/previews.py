"""Scene previews: the PNG rendered after a scene's last commit, one object per scene,
and one per recent revision for before/after views.

The executor writes them and the gateway serves them, both through this port, from the
Object Store bucket ``<prefix>_previews`` (object name = scene id; ``<scene id>@<revision>``
for a revision's picture, ``<scene id>@<revision>.glb`` for its glTF, the newest
KEPT_REVISION_PREVIEWS of each kept: scene ids never hold ``@``).

A scene's picture is replaced at every commit, often while a door reads it: a replaced
object's chunks are purged, and nats-py's ``ObjectStore.get`` then waits for them without
end. So reads and writes go through ``runtime.objects``, whose reads are bounded, and a
read whose chunks went away under it reads the new object.
"""

from __future__ import annotations

import contextlib

from nats.js import JetStreamContext
from nats.js.errors import (
    BucketNotFoundError,
    DigestMismatchError,
    NotFoundError,
    ObjectDeletedError,
    ObjectNotFoundError,
)
from nats.js.object_store import ObjectStore

from services.executor.domain.ports import KEPT_REVISION_PREVIEWS
from services.runtime.nats.objects import put_object, read_object
from services.runtime.nats.streams import object_store_config

_GONE = (ObjectNotFoundError, ObjectDeletedError, NotFoundError)
# A picture is 960x720 and a revision's glTF at most 16 MiB (the preview worker's limits).
MAX_PREVIEW_BYTES = 32 * 1024 * 1024
# Reads of one object replaced under each of them before a reader gives up: a commit
# replaces a scene's picture at most every few tenths of a second.
READS = 3


class ObjectStorePreviews:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self.bucket = f"{prefix}_previews"
        self._store: ObjectStore | None = None

    async def _objects(self, create: bool) -> ObjectStore | None:
        if self._store is None:
            try:
                self._store = await self._js.object_store(self.bucket)
            except BucketNotFoundError:
                if not create:
                    return None
                self._store = await self._js.create_object_store(
                    self.bucket, object_store_config(self._js)
                )
        return self._store

    async def put(self, scene_id: str, png: bytes) -> None:
        await self._objects(create=True)
        await put_object(self._js, self.bucket, scene_id, png)

    async def get(self, scene_id: str) -> bytes | None:
        return await self._read(scene_id)

    async def _read(self, name: str) -> bytes | None:
        """Object ``name``'s bytes; None when there is none (or no bucket yet)."""
        for attempt in range(READS):
            try:
                return await read_object(self._js, self.bucket, name, MAX_PREVIEW_BYTES) or None
            except DigestMismatchError:  # replaced under the read: its chunks were purged
                if attempt == READS - 1:
                    raise
        return None

    async def put_revision(self, scene_id: str, revision: int, png: bytes) -> None:
        await self._put_kept(scene_id, revision, "", png)

    async def get_revision(self, scene_id: str, revision: int) -> bytes | None:
        return await self._read(f"{scene_id}@{revision}")

    async def put_model(self, scene_id: str, revision: int, glb: bytes) -> None:
        await self._put_kept(scene_id, revision, ".glb", glb)

    async def get_model(self, scene_id: str, revision: int) -> bytes | None:
        return await self._read(f"{scene_id}@{revision}.glb")

    async def _put_kept(self, scene_id: str, revision: int, suffix: str, data: bytes) -> None:
        store = await self._objects(create=True)
        assert store is not None
        await put_object(self._js, self.bucket, f"{scene_id}@{revision}{suffix}", data)
        # The worker renders most revisions, so the one falling out of the window is
        # nearly always the one to delete; a few more behind it cover skipped revisions.
        falls_out = revision - KEPT_REVISION_PREVIEWS
        for old in range(max(1, falls_out - 4), falls_out + 1):
            with contextlib.suppress(*_GONE):
                await store.delete(f"{scene_id}@{old}{suffix}")
