"""Scene previews: the PNG rendered after a scene's last commit, one object per scene,
and one per recent revision for before/after views.

The executor writes them and the gateway serves them, both through this port, from the
Object Store bucket ``<prefix>_previews`` (object name = scene id; ``<scene id>@<revision>``
for a revision's picture, ``<scene id>@<revision>.glb`` for its glTF, the newest
KEPT_REVISION_PREVIEWS of each kept: scene ids never hold ``@``).
"""

from __future__ import annotations

import contextlib

from nats.js import JetStreamContext
from nats.js.errors import (
    BucketNotFoundError,
    NotFoundError,
    ObjectDeletedError,
    ObjectNotFoundError,
)
from nats.js.object_store import ObjectStore

from services.executor.domain.ports import KEPT_REVISION_PREVIEWS
from services.runtime.streams import object_store_config

_GONE = (ObjectNotFoundError, ObjectDeletedError, NotFoundError)


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
        store = await self._objects(create=True)
        assert store is not None
        await store.put(scene_id, png)

    async def get(self, scene_id: str) -> bytes | None:
        store = await self._objects(create=False)
        if store is None:
            return None
        try:
            result = await store.get(scene_id)
        except _GONE:
            return None
        return result.data or None

    async def put_revision(self, scene_id: str, revision: int, png: bytes) -> None:
        await self._put_kept(scene_id, revision, "", png)

    async def get_revision(self, scene_id: str, revision: int) -> bytes | None:
        return await self.get(f"{scene_id}@{revision}")

    async def put_model(self, scene_id: str, revision: int, glb: bytes) -> None:
        await self._put_kept(scene_id, revision, ".glb", glb)

    async def get_model(self, scene_id: str, revision: int) -> bytes | None:
        return await self.get(f"{scene_id}@{revision}.glb")

    async def _put_kept(self, scene_id: str, revision: int, suffix: str, data: bytes) -> None:
        store = await self._objects(create=True)
        assert store is not None
        await store.put(f"{scene_id}@{revision}{suffix}", data)
        # The worker renders most revisions, so the one falling out of the window is
        # nearly always the one to delete; a few more behind it cover skipped revisions.
        falls_out = revision - KEPT_REVISION_PREVIEWS
        for old in range(max(1, falls_out - 4), falls_out + 1):
            with contextlib.suppress(*_GONE):
                await store.delete(f"{scene_id}@{old}{suffix}")
