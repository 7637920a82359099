"""The collector: removes what the retention policy no longer keeps (docs/storage.md).

In order: revisions past the policy (with their inspection artifacts), then chunks no kept
manifest names, then expired result images of Python steps and staged uploads. A chunk
goes only when it is older than the grace and no commit stored it again since it was
looked at (``JetStreamChunks.delete_if_older``), so a commit running meanwhile never loses
one; and when any kept manifest cannot be read, no chunk is deleted at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from nats.js import JetStreamContext, api
from nats.js.errors import NotFoundError, ObjectNotFoundError

from contracts.revisions import chunk_name
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.tags import KvSceneTags
from services.executor.adapters.uploads import ObjectStoreUploads
from services.executor.domain.chunking import RevisionDamaged
from services.executor.domain.ports import INSPECTION_SUFFIX
from services.executor.domain.retention import Retention, Stored, age, doomed
from services.runtime.service.settings import Settings

log = logging.getLogger("blendmesh.executor")
RESULTS = "_results/"


@dataclass(frozen=True)
class Collected:
    """What one collection removed."""

    revisions: int = 0
    chunks: int = 0
    chunk_bytes: int = 0
    results: int = 0
    uploads: int = 0
    chunks_skipped: str = ""  # why no chunk was collected this time, "" when they were


class Collector:
    def __init__(self, js: JetStreamContext, prefix: str, policy: Retention) -> None:
        self._js = js
        self.policy = policy
        self.scenes = JetStreamSceneStore(js, prefix, chunk_grace=policy.chunk_grace)
        self.tags = KvSceneTags(js, prefix)
        self.uploads = ObjectStoreUploads(js, prefix)

    async def collect(self) -> Collected:
        now = datetime.now(UTC)
        infos = await _listing(self._js, self.scenes.bucket)
        names = {i.name or "" for i in infos}
        stored = [s for s in map(_revision, infos) if s is not None]
        heads = {}
        for scene in sorted({s.scene_id for s in stored}):
            head = await self.scenes.head(scene)
            if head is not None:
                heads[scene] = (head.revision, head.object_name)
        gone = doomed(stored, heads, await self.tags.kept(), self.policy, now)
        for item in gone:
            await _delete(self._js, self.scenes.bucket, item.name)
            if item.name + INSPECTION_SUFFIX in names:
                await _delete(self._js, self.scenes.bucket, item.name + INSPECTION_SUFFIX)
        removed = set(gone)
        kept = [s for s in stored if s not in removed]
        chunks, freed, skipped = await self._chunks(kept)
        results = [
            i.name or ""
            for i in infos
            if (i.name or "").startswith(RESULTS)
            and age(i.mtime or "", now) > self.policy.result_ttl
        ]
        for name in results:
            await _delete(self._js, self.scenes.bucket, name)
        uploads = await self._uploads(now)
        return Collected(len(gone), chunks, freed, len(results), uploads, skipped)

    async def _chunks(self, kept: list[Stored]) -> tuple[int, int, str]:
        started = time.monotonic()
        named: set[str] = set()
        for item in kept:
            try:
                manifest = await self.scenes.manifest(item.name)
            except (RevisionDamaged, ObjectNotFoundError) as exc:
                log.error("collecting no chunks: %s", exc)
                return 0, 0, f"revision {item.name} cannot be read ({exc})"
            if manifest is not None:
                named.update(chunk_name(manifest.space, d) for d, _ in manifest.chunks)
        count = freed = 0
        for info in await self.scenes.chunks.listing():
            name = info.name or ""
            if name in named:
                continue
            # What was read of the manifests above is trusted for a quarter of the grace:
            # a commit that found a chunk present writes its manifest well within it.
            grace = self.policy.chunk_grace
            if grace and time.monotonic() - started > grace / 4:
                return count, freed, "the collection outlasted a quarter of the chunk grace"
            released = await self.scenes.chunks.delete_if_older(name, self.policy.chunk_grace)
            count, freed = count + (released > 0), freed + released
        return count, freed, ""

    async def _uploads(self, now: datetime) -> int:
        expired = [
            i.name or ""
            for i in await _listing(self._js, self.uploads.bucket)
            if age(i.mtime or "", now) > self.policy.upload_ttl
        ]
        for name in expired:
            await _delete(self._js, self.uploads.bucket, name)
        return len(expired)


def _revision(info: api.ObjectInfo) -> Stored | None:
    scene, _, rest = (info.name or "").partition("/")
    number, _, digest = rest.partition("-")
    if not scene or not number.isdigit() or not digest or "." in digest:
        return None
    return Stored(scene, int(number), info.name or "", info.mtime or "")


async def _listing(js: JetStreamContext, bucket: str) -> list[api.ObjectInfo]:
    try:
        return await (await js.object_store(bucket)).list(ignore_deletes=True)
    except NotFoundError:  # no such store yet, or nothing in it
        return []


async def _delete(js: JetStreamContext, bucket: str, name: str) -> None:
    # Not found: another collector (a second executor) was first.
    with contextlib.suppress(NotFoundError, ObjectNotFoundError):
        await (await js.object_store(bucket)).delete(name)


def retention_of(settings: Settings) -> Retention:
    """The policy the mesh's settings name (BLENDMESH_KEEP_REVISIONS and the TTLs)."""
    return Retention(
        keep=settings.keep_revisions,
        chunk_grace=settings.chunk_grace,
        result_ttl=settings.result_ttl,
        upload_ttl=settings.upload_ttl,
    )


async def collect_every(collector: Collector, interval: float) -> None:
    """Collect now and then for as long as the executor runs (``blendmesh up``)."""
    while True:
        # Jittered, so the executors of one mesh do not all collect at the same moment.
        await asyncio.sleep(interval * random.uniform(0.5, 1.0))
        try:
            got = await collector.collect()
        except Exception as exc:  # noqa: BLE001 - the next round tries again
            log.warning("collecting scene storage failed: %s; next try in about %.0f s",
                        exc, interval)  # fmt: skip
            continue
        log.info("collected %s", got)
