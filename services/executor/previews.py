"""Scene previews: the PNG rendered after a scene's last commit, one object per scene.

The executor writes them and the gateway serves them, both through this port, from the
Object Store bucket ``<prefix>_previews`` (object name = scene id).
"""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.errors import (
    BucketNotFoundError,
    NotFoundError,
    ObjectDeletedError,
    ObjectNotFoundError,
)
from nats.js.object_store import ObjectStore

from services.runtime.bus import object_store_config


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
        except (ObjectNotFoundError, ObjectDeletedError, NotFoundError):
            return None
        return result.data or None
