"""Scene revisions in the JetStream Object Store, the head in KV.

A revision is a manifest of content-addressed chunks (ADR 0021): a commit cuts the saved
.blend, uploads the chunks the store lacks, and writes the manifest last, so a writer
killed part way leaves chunks nobody names (the collector's) but never half a revision.
Revisions committed before ADR 0021, and those under ``WHOLE_BELOW``, hold the whole .blend.

The executor saves scenes uncompressed; what this stores is compressed (ADR 0035): each
chunk, a whole small revision and a result image are one zstd frame whose meta says so
(``packing``). Objects stored before, without that header, read as they are.

Committing a revision is a compare-and-set on the head's KV revision, so a writer that
lost the scene to another executor cannot overwrite the newer head. Revisions are never
overwritten; the head names the current one.
"""

from __future__ import annotations

import asyncio
import contextlib
import mmap
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import (
    BucketNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
    ObjectNotFoundError,
)
from nats.js.object_store import ObjectStore

from contracts import revisions
from contracts.revisions import ChunkedRevision
from contracts.scenes import Head
from services.executor.adapters import packing
from services.executor.adapters.chunk_store import ChunkUnreadable, JetStreamChunks
from services.executor.adapters.heads import read_head
from services.executor.adapters.revision_files import (
    MAX_BLEND_BYTES,
    _decode,
    _map,
    _pack_file,
    _packed,
    _unmap,
    _unpack_to,
    _unpacked,
    _write_atomically,
)
from services.executor.domain.chunking import ChunkWriter, Piece, RevisionDamaged, assemble, cut
from services.executor.domain.ports import INSPECTION_SUFFIX, StaleCommit, inspection_name
from services.runtime.nats.objects import put_object, read_object, read_stored
from services.runtime.nats.streams import ensure_kv, object_store_config

# What one read of an inspection artifact takes into memory at most (the guardians refuse
# larger ones anyway); a .blend's bound is revision_files.MAX_BLEND_BYTES.
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
# A manifest names one chunk per ~64 KiB: 80 bytes each, a few MiB for the largest scene.
MAX_MANIFEST_BYTES = 32 * 1024 * 1024
# Seconds an unreferenced chunk is kept before the collector may delete it: far longer
# than any commit takes between finding a chunk present and writing the manifest that
# names it (a commit that takes half this long checks its chunks again).
DEFAULT_CHUNK_GRACE = 3600.0
# A saved scene smaller than this is stored whole: it is within the 1 MiB an edit may
# store anyway, and a small scene's run pays fewer round trips (ADR 0021).
WHOLE_BELOW = 1024 * 1024
# Chunks a fetch holds at once (256 KiB at most each): the executor's memory for a revision.
FETCH_WINDOW = 64
# Scenes whose last manifest's chunk names a store remembers (about 80 KiB per 64 MiB).
KNOWN_SCENES = 64


class JetStreamSceneStore:
    def __init__(
        self,
        js: JetStreamContext,
        prefix: str,
        chunk_grace: float = DEFAULT_CHUNK_GRACE,
        whole_below: int = WHOLE_BELOW,
    ) -> None:
        self._js = js
        self._prefix = prefix
        self._bucket = self.bucket = f"{prefix}_scenes"
        self._store: ObjectStore | None = None
        self.chunks = JetStreamChunks(js, prefix)
        self.chunk_grace = chunk_grace
        self.whole_below = whole_below
        # The chunks of the last manifest this store wrote or read per scene: what the next
        # commit's parent already holds, so an edit does not ask the store about each one.
        self._known: dict[str, tuple[str, ChunkedRevision]] = {}

    def _remember(self, scene_id: str, name: str, manifest: ChunkedRevision) -> None:
        self._known.pop(scene_id, None)
        self._known[scene_id] = (name, manifest)
        while len(self._known) > KNOWN_SCENES:  # the scenes least recently committed go
            self._known.pop(next(iter(self._known)))

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
        return await read_head(self._js, self._prefix, scene_id)

    async def _revision(self, head: Head) -> bytes | ChunkedRevision:
        """What ``head``'s object holds: a whole .blend (unpacked) or a manifest."""
        found = await read_stored(self._js, self._bucket, head.object_name, MAX_BLEND_BYTES)
        if found is None:
            raise ObjectNotFoundError(description=f"scene revision {head.object_name}")
        info, data = found
        what = f"revision {head.revision} of scene {head.scene_id}"
        if _packed(info.headers, what):  # a whole file; a manifest is stored as it is
            return await asyncio.to_thread(_unpacked, data, info.headers, what)
        if not revisions.is_manifest(data):
            return data  # stored whole and raw, before ADR 0021 or 0035
        return _decode(data, what)

    async def read(self, head: Head) -> bytes:
        """The .blend of ``head``, whichever format it was stored in; raises
        ``RevisionDamaged`` when a chunk or the whole file does not verify."""
        manifest = await self._revision(head)
        if not isinstance(manifest, ChunkedRevision):
            return manifest
        what = f"revision {head.revision} of scene {head.scene_id}"
        digests = [d for d, _ in manifest.chunks]
        found = await self._chunks(manifest.space, digests, what)
        blend = await asyncio.to_thread(assemble, manifest, found, what)
        self._remember(head.scene_id, head.object_name, manifest)
        return blend

    async def _chunks(self, space: str, digests: list[str], what: str) -> dict[str, bytes | None]:
        try:
            return await self.chunks.read(space, digests)
        except ChunkUnreadable as exc:
            raise RevisionDamaged(
                f"{what} is damaged: its chunk {exc.digest[:16]} {exc.why}"
            ) from None

    async def manifest(self, object_name: str) -> ChunkedRevision | None:
        """The manifest stored as ``object_name``; None for a whole-file revision or none."""
        data = await read_object(self._js, self._bucket, object_name, MAX_MANIFEST_BYTES)
        if data is None or not revisions.is_manifest(data):
            return None
        return _decode(data, f"revision {object_name}")

    async def fetch(self, head: Head, dest: Path) -> None:
        """Write ``head``'s .blend to ``dest``; a chunked revision a window of chunks at a
        time, so the executor holds at most ``FETCH_WINDOW`` chunks, not the scene."""
        manifest = await self._revision(head)
        # The event loop is shared with every service of an embedded mesh: no file I/O on it.
        if not isinstance(manifest, ChunkedRevision):
            await asyncio.to_thread(_write_atomically, dest, manifest)
            return
        what = f"revision {head.revision} of scene {head.scene_id}"
        writer = await asyncio.to_thread(ChunkWriter, manifest, dest, what)
        try:
            for at in range(0, len(manifest.chunks), FETCH_WINDOW):
                refs = manifest.chunks[at : at + FETCH_WINDOW]
                found = await self._chunks(manifest.space, [d for d, _ in refs], what)
                await asyncio.to_thread(writer.write, refs, found)
            await asyncio.to_thread(writer.finish)
        except BaseException:
            await asyncio.to_thread(writer.abort)
            raise
        self._remember(head.scene_id, head.object_name, manifest)

    async def commit(
        self,
        scene_id: str,
        blend: Path,
        scene_hash: str,
        parent: Head | None,
        epoch: int,
        owner: str = "",
        check: Callable[[], Awaitable[None]] | None = None,
    ) -> Head:
        revision = (parent.revision if parent else 0) + 1
        name = f"{scene_id}/{revision:08d}-{scene_hash[:16]}"
        # A scene keeps the owner its first revision gave it; its chunks are that user's.
        owner = parent.owner if parent is not None and parent.owner else owner
        await self._objects()  # creates the store on a server nobody prepared
        data = await asyncio.to_thread(_map, blend)
        try:
            if len(data) < self.whole_below:
                # Within the per-edit budget whole: one object costs fewer round trips
                # (each an fsync) than its chunks and a manifest would. Packed, as a
                # chunk is.
                packed, sha256 = await asyncio.to_thread(packing.pack, data)
                await put_object(self._js, self._bucket, name, packed, sha256, packing.PACKED)
                chunks: ChunkedRevision | None = None
            else:
                chunks = await self._put_chunked(name, data, parent, owner)
        finally:
            await asyncio.to_thread(_unmap, data)
        del data
        if check is not None:
            await check()  # the stored objects stay unreferenced if it raises; gc takes them
        head = Head(
            scene_id=scene_id,
            revision=revision,
            scene_hash=scene_hash,
            object_name=name,
            epoch=epoch,
            owner=owner,
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
        if chunks is not None:
            self._remember(scene_id, name, chunks)
        return msgspec.structs.replace(head, kv_revision=kv_revision)

    async def _put_chunked(
        self, name: str, data: bytes | mmap.mmap, parent: Head | None, owner: str
    ) -> ChunkedRevision:
        # The parent's chunks are this space's only when the owner did not change (an
        # unowned scene that a user's run takes on starts that user's space afresh).
        same = parent is not None and parent.owner == owner
        known = await self._parent_manifest(parent) if same else None
        # Cut starting from the parent's chunks: those still in place are only hashed.
        pieces = await asyncio.to_thread(cut, data, owner, known)
        try:
            held = frozenset(d for d, _ in known.chunks) if known else frozenset()
            new = {d: b for d, b in pieces.chunks.items() if d not in held}
            await self._store_chunks(owner, new)
            # Last: a manifest is stored only once every chunk it names is.
            await put_object(self._js, self._bucket, name, revisions.encode(pieces.manifest))
            return pieces.manifest
        finally:
            # The chunks are views of the file's map: released here, also when an error's
            # traceback keeps this frame, so the commit can unmap the file.
            for view in pieces.chunks.values():
                with contextlib.suppress(BufferError):  # a thread still packing it
                    view.release()

    async def _parent_manifest(self, parent: Head | None) -> ChunkedRevision | None:
        """The manifest of ``parent``: the head, whose chunks the collector always keeps,
        so they need no asking. None for a whole-file parent or an unreadable manifest."""
        if parent is None:
            return None
        known = self._known.get(parent.scene_id)
        if known is not None and known[0] == parent.object_name:
            return known[1]
        try:
            return await self.manifest(parent.object_name)
        except RevisionDamaged:
            return None  # every chunk is checked and stored again

    async def _store_chunks(self, space: str, new: Mapping[str, Piece]) -> None:
        # A chunk found present is trusted only while it is younger than half the grace,
        # and the manifest must follow within that half: else the pass runs again.
        fresh_for = self.chunk_grace / 2
        for _ in range(3):
            started = time.monotonic()
            await self.chunks.store(space, new, fresh_for)
            if time.monotonic() - started < fresh_for:
                return
        raise TimeoutError(
            f"storing {len(new)} chunks took longer than {fresh_for:.0f} s three times; "
            "the chunk store is too slow for BLENDMESH_CHUNK_GRACE"
        )

    async def put_inspection(self, head: Head, document: bytes) -> str:
        """Store ``head``'s inspection artifact, packed: a big scene's is most of what an
        edit stores, and its JSON shrinks several times (ADR 0035)."""
        name = inspection_name(head)
        await self._objects()
        packed, sha256 = await asyncio.to_thread(packing.pack, document)
        await put_object(self._js, self._bucket, name, packed, sha256, packing.PACKED)
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
        """The artifact stored as ``name``, unpacked; None when there is none. Raises
        ``RevisionDamaged`` for one that does not unpack within ``MAX_ARTIFACT_BYTES``."""
        if not name.endswith(INSPECTION_SUFFIX):
            return None  # a .blend is no artifact: readers of artifacts get artifacts only
        found = await read_stored(self._js, self._bucket, name, MAX_ARTIFACT_BYTES)
        if found is None:
            return None
        info, data = found
        what = f"inspection artifact {name}"
        return await asyncio.to_thread(_unpacked, data, info.headers, what, MAX_ARTIFACT_BYTES)

    async def put_result(self, name: str, blend: Path) -> None:
        """Store the result image ``blend`` (saved uncompressed) packed, as one frame."""
        await self._objects()
        packed, sha256 = await asyncio.to_thread(_pack_file, blend)
        await put_object(self._js, self._bucket, name, packed, sha256, packing.PACKED)

    async def fetch_result(self, name: str, dest: Path) -> bool:
        """Write result image ``name`` to ``dest``, unpacked; False when there is none.
        Raises ``RevisionDamaged`` for one that does not unpack."""
        found = await read_stored(self._js, self._bucket, name, MAX_BLEND_BYTES)
        if found is None:
            return False
        info, data = found
        await asyncio.to_thread(_unpack_to, dest, data, info.headers, f"result image {name}")
        return True
