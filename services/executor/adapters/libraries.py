"""Each project's library revisions in the store the scenes use, and the library paths a
.blend stores, read by the bridge's bounded reader and rewritten with
blender-asset-tracer (ADR 0060).

A library is kept as a scene's revisions are (scene_store.py): a head in KV, each revision
an object named by its number and content hash, compare-and-set on publish. Its own
buckets (``<prefix>_lib_scene_heads``, ``<prefix>_lib_scenes``) keep libraries out of the
scene listings and out of the scenes' retention, which would otherwise collect a library
revision no scene head names while an older revision of a shot still links it; and a
library is stored whole (packed), since the collector, which knows scene manifests only,
would collect a library's chunks.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from blender_asset_tracer import blendfile as bat

from contracts.libraries import MAX_LIBRARY_BYTES, library_key
from services.bridge.blendfiles import blendfile, references
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.domain.chunking import RevisionDamaged
from services.executor.domain.ports import StaleCommit
from services.runtime.nats.objects import ObjectTooLarge

LIBRARY_PREFIX = "lib"  # the store's prefix after the mesh's: <prefix>_lib_scenes
PUBLISH_TRIES = 3  # two executors publishing one library at once: the loser looks again


def library_prefix(prefix: str) -> str:
    return f"{prefix}_{LIBRARY_PREFIX}"


class StoredLibraries:
    def __init__(self, store: JetStreamSceneStore) -> None:
        self._store = store

    async def publish(self, project: str, name: str, path: Path) -> int:
        key = library_key(project, name)
        digest = await asyncio.to_thread(_sha256, path)
        for _ in range(PUBLISH_TRIES):
            head = await self._store.head(key)
            if head is not None and head.scene_hash == digest:
                return head.revision  # published already: the same bytes, the same revision
            try:
                new = await self._store.commit(key, path, digest, head, epoch=0, owner=project)
            except StaleCommit:
                continue
            return new.revision
        raise StaleCommit(f"library {name} was published by others {PUBLISH_TRIES} times meanwhile")

    async def listing(self, project: str) -> list[tuple[str, int, str]]:
        """(name, revision, content hash prefix) of each revision of ``project``'s
        libraries, by name and revision."""
        prefix = library_key(project, "")
        return [
            (key.removeprefix(prefix), revision, digest)
            for key, revision, digest in await self._store.revisions()
            if key.startswith(prefix)
        ]

    async def fetch(self, project: str, name: str, revision: int, dest: Path) -> bool:
        key = library_key(project, name)
        head = await self._store.find_revision(key, revision)
        if head is None:
            return False
        try:
            await self._store.fetch(head, dest)
        except ObjectTooLarge:
            raise RevisionDamaged(f"revision {revision} of library {name} is too large") from None
        size, digest = await asyncio.to_thread(_measure, dest)
        # The object's name carries the first 16 digits of the content hash it was put as.
        if size > MAX_LIBRARY_BYTES or not digest.startswith(head.scene_hash):
            raise RevisionDamaged(
                f"revision {revision} of library {name} does not read back as it was published"
            )
        return True


def _sha256(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def _measure(path: Path) -> tuple[int, str]:
    return path.stat().st_size, _sha256(path)


class BlendFileLinks:
    """The library paths of a .blend: read with the bridge's reader, which refuses a
    decompression bomb before it inflates; rewritten in place with blender-asset-tracer
    (a compressed file comes back gzip-compressed, which Blender reads as well)."""

    def read(self, path: Path) -> list[str]:
        try:
            return references.library_paths(str(path))
        except blendfile.Unreadable as err:
            raise ValueError(str(err)) from None

    def rewrite(self, path: Path, paths: dict[str, str]) -> None:
        self.read(path)  # bounded first: BAT inflates a compressed file whole
        opened = bat.BlendFile(path, mode="r+b")
        try:
            for block in opened.find_blocks_from_code(b"LI"):
                stored = block[b"name"]
                old = stored.decode("utf-8", "replace") if isinstance(stored, bytes) else ""
                if old in paths:
                    block[b"name"] = paths[old].encode()
        finally:
            opened.close()
