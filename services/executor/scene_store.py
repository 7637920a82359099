"""Scene revisions: .blend files in the JetStream Object Store, the head in KV.

Committing a revision is a compare-and-set on the head's KV revision, so a writer that
lost the scene to another executor cannot overwrite the newer head. Revisions are never
overwritten; the head names the current one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig, StorageType
from nats.js.errors import (
    BucketNotFoundError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
)
from nats.js.object_store import ObjectStore

from contracts.scenes import Head
from services.executor.ports import StaleCommit
from services.runtime.bus import ensure_kv


class JetStreamSceneStore:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._bucket = f"{prefix}_scenes"

    async def _objects(self) -> ObjectStore:
        try:
            return await self._js.object_store(self._bucket)
        except BucketNotFoundError:
            return await self._js.create_object_store(
                self._bucket, ObjectStoreConfig(storage=StorageType.FILE)
            )

    async def head(self, scene_id: str) -> Head | None:
        kv = await ensure_kv(self._js, self._prefix, "scene_heads")
        try:
            entry = await kv.get(scene_id)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        head = msgspec.json.decode(entry.value or b"", type=Head)
        return msgspec.structs.replace(head, kv_revision=entry.revision or 0)

    async def read(self, head: Head) -> bytes:
        result = await (await self._objects()).get(head.object_name)
        return result.data or b""

    async def fetch(self, head: Head, dest: Path) -> None:
        data = await self.read(head)
        # The event loop is shared with every service of an embedded mesh: no file I/O on it.
        await asyncio.to_thread(_write_atomically, dest, data)

    async def commit(
        self,
        scene_id: str,
        blend: Path,
        scene_hash: str,
        parent: Head | None,
        epoch: int,
        owner: str = "",
    ) -> Head:
        revision = (parent.revision if parent else 0) + 1
        name = f"{scene_id}/{revision:08d}-{scene_hash[:16]}"
        await (await self._objects()).put(name, await asyncio.to_thread(blend.read_bytes))
        head = Head(
            scene_id=scene_id,
            revision=revision,
            scene_hash=scene_hash,
            object_name=name,
            epoch=epoch,
            # A scene keeps the owner its first revision gave it.
            owner=parent.owner if parent is not None and parent.owner else owner,
        )
        kv = await ensure_kv(self._js, self._prefix, "scene_heads")
        value = msgspec.json.encode(head)
        try:
            if parent is None:
                kv_revision = await kv.create(scene_id, value)
            else:
                kv_revision = await kv.update(scene_id, value, last=parent.kv_revision)
        except KeyWrongLastSequenceError:
            raise StaleCommit(
                f"scene {scene_id} was committed by another executor since revision "
                f"{parent.revision if parent else 0}"
            ) from None
        return msgspec.structs.replace(head, kv_revision=kv_revision)


def _write_atomically(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part")
    tmp.write_bytes(data)
    tmp.replace(dest)
