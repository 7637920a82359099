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
from nats.js.errors import (
    BucketNotFoundError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
    ObjectNotFoundError,
)
from nats.js.object_store import ObjectStore

from contracts.scenes import Head
from services.executor.ports import INSPECTION_SUFFIX, StaleCommit, inspection_name
from services.runtime.bus import ensure_kv, object_store_config
from services.runtime.objects import put_object, read_object

# What one read takes into memory at most: a .blend (a 1000-object scene is about 1 MB
# compressed), and an inspection artifact (the guardians refuse larger ones anyway).
MAX_BLEND_BYTES = 1024 * 1024 * 1024
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024


class JetStreamSceneStore:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._bucket = f"{prefix}_scenes"
        self._store: ObjectStore | None = None

    async def _objects(self) -> ObjectStore:
        # Bound once: looking the bucket up costs a round trip, and every run reads and
        # writes it several times. The handle names the bucket's stream, nothing more.
        if self._store is None:
            try:
                self._store = await self._js.object_store(self._bucket)
            except BucketNotFoundError:
                self._store = await self._js.create_object_store(
                    self._bucket, object_store_config(self._js)
                )
        return self._store

    async def head(self, scene_id: str) -> Head | None:
        kv = await ensure_kv(self._js, self._prefix, "scene_heads")
        try:
            entry = await kv.get(scene_id)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        head = msgspec.json.decode(entry.value or b"", type=Head)
        return msgspec.structs.replace(head, kv_revision=entry.revision or 0)

    async def read(self, head: Head) -> bytes:
        data = await read_object(self._js, self._bucket, head.object_name, MAX_BLEND_BYTES)
        if data is None:
            raise ObjectNotFoundError(description=f"scene revision {head.object_name}")
        return data

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
        await self._objects()  # creates the store on a server nobody prepared
        await put_object(self._js, self._bucket, name, await asyncio.to_thread(blend.read_bytes))
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

    async def put_inspection(self, head: Head, document: bytes) -> str:
        name = inspection_name(head)
        await self._objects()
        await put_object(self._js, self._bucket, name, document)
        return name

    async def inspection(self, head: Head) -> str | None:
        name = inspection_name(head)
        try:
            await (await self._objects()).get_info(name)
        except NotFoundError:  # not found, or deleted
            return None
        return name

    async def revisions(self) -> list[tuple[str, int, str]]:
        """(scene id, revision, hash prefix) of every stored .blend revision, in name order."""
        try:
            infos = await (await self._objects()).list(ignore_deletes=True)
        except NotFoundError:
            return []
        found = []
        for info in infos:
            name = info.name or ""
            scene, _, rest = name.partition("/")
            number, _, digest = rest.partition("-")
            if scene and number.isdigit() and digest and not name.endswith(INSPECTION_SUFFIX):
                found.append((scene, int(number), digest))
        return sorted(found)

    async def find_revision(self, scene_id: str, revision: int) -> Head | None:
        """Revision ``revision`` of ``scene_id``, as a head to read it by; its ``scene_hash``
        is the hash prefix its object name carries (that is all a revision keeps)."""
        found = await self.dated_revisions(scene_id)
        return next(
            (
                Head(
                    scene_id=scene_id,
                    revision=n,
                    scene_hash=digest,
                    object_name=f"{scene_id}/{n:08d}-{digest}",
                    epoch=0,
                )
                for n, digest, _ in found
                if n == revision
            ),
            None,
        )

    async def dated_revisions(self, scene_id: str) -> list[tuple[int, str, str]]:
        """(revision, hash prefix, stored at: ISO 8601) of each .blend revision of
        ``scene_id``, oldest first."""
        try:
            infos = await (await self._objects()).list(ignore_deletes=True)
        except NotFoundError:
            return []
        found = []
        for info in infos:
            scene, _, rest = (info.name or "").partition("/")
            number, _, digest = rest.partition("-")
            if scene == scene_id and number.isdigit() and digest and "." not in digest:
                found.append((int(number), digest, info.mtime or ""))
        return sorted(found)

    async def find_inspection(self, scene_id: str, revision: int) -> str | None:
        """The artifact of revision ``revision`` of ``scene_id``, found by its name's prefix
        (the name also carries the revision's hash, which an old revision's reader lacks)."""
        start = f"{scene_id}/{revision:08d}-"
        try:
            infos = await (await self._objects()).list(ignore_deletes=True)
        except NotFoundError:
            return None
        names = [i.name for i in infos if i.name and i.name.startswith(start)]
        return next((n for n in names if n.endswith(INSPECTION_SUFFIX)), None)

    async def read_inspection(self, name: str) -> bytes | None:
        if not name.endswith(INSPECTION_SUFFIX):
            return None  # a .blend is no artifact: readers of artifacts get artifacts only
        return await read_object(self._js, self._bucket, name, MAX_ARTIFACT_BYTES)

    async def put_result(self, name: str, blend: Path) -> None:
        await self._objects()
        await put_object(self._js, self._bucket, name, await asyncio.to_thread(blend.read_bytes))

    async def fetch_result(self, name: str, dest: Path) -> bool:
        data = await read_object(self._js, self._bucket, name, MAX_BLEND_BYTES)
        if data is None:
            return False
        await asyncio.to_thread(_write_atomically, dest, data)
        return True


def _write_atomically(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part")
    tmp.write_bytes(data)
    tmp.replace(dest)
