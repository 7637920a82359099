"""Scene revisions: .blend files in the JetStream Object Store, the head in KV.

Committing a revision is a compare-and-set on the head's KV revision, so a writer that
lost the scene to another executor cannot overwrite the newer head. Revisions are never
overwritten; the head names the current one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

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

from services.runtime.bus import ensure_kv


class Head(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The current revision of a scene."""

    scene_id: str
    revision: int
    scene_hash: str
    object_name: str
    epoch: int  # lease epoch of the executor that committed it
    kv_revision: int = 0  # filled in on read: what a commit must compare against


class StaleCommit(Exception):
    """Someone else committed the scene since this writer read its head."""


class SceneStore(Protocol):
    """Port: read the head, fetch a revision, commit a new one (compare-and-set)."""

    async def head(self, scene_id: str) -> Head | None: ...

    async def fetch(self, head: Head, dest: Path) -> None: ...

    async def commit(
        self, scene_id: str, blend: Path, scene_hash: str, parent: Head | None, epoch: int
    ) -> Head: ...


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

    async def fetch(self, head: Head, dest: Path) -> None:
        result = await (await self._objects()).get(head.object_name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.part")
        tmp.write_bytes(result.data or b"")
        tmp.replace(dest)

    async def commit(
        self, scene_id: str, blend: Path, scene_hash: str, parent: Head | None, epoch: int
    ) -> Head:
        revision = (parent.revision if parent else 0) + 1
        name = f"{scene_id}/{revision:08d}-{scene_hash[:16]}"
        await (await self._objects()).put(name, blend.read_bytes())
        head = Head(
            scene_id=scene_id,
            revision=revision,
            scene_hash=scene_hash,
            object_name=name,
            epoch=epoch,
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
