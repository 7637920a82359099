"""What a commit leaves beside the .blend: the revision's inspection artifact (what the
guardians judge) and the scene's summary (what planners read).

Blender describes the scene while the revision's file is being stored, since the bridge
is idle during the upload and describing changes nothing; the two notes are then written
side by side. Neither may fail a run whose revision is committed: a missing artifact is
reported as None (the guardians see that), a missing summary leaves the previous one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from contracts.inspection import RunRecord, SceneInspection
from contracts.scenes import Head, SceneSummary
from services.executor.domain.inspection import document
from services.executor.domain.ports import Bridge, SceneStore, SceneSummaries

log = logging.getLogger("blendmesh.executor")


@dataclass(frozen=True)
class Described:
    scene: SceneInspection | Exception  # why there is no inspection, when there is none
    summary: SceneSummary | None
    # The artifact, built while the revision uploads for the head the commit should make:
    # (revision, scene hash, bytes). Used only if the commit made exactly that head.
    built: tuple[int, str, bytes] | None = None


@dataclass
class RevisionNotes:
    bridge: Bridge
    store: SceneStore
    summaries: SceneSummaries | None
    new_id: Callable[[], str]

    def describe(
        self,
        scene_id: str,
        saved: asyncio.Event,
        expected: tuple[int, str, RunRecord] | None = None,
    ) -> asyncio.Future[Described]:
        """Start describing the scene once ``saved`` is set (the bridge wrote the file);
        with ``expected`` (the revision and hash the commit should make, and the run), the
        artifact is built too, while the file is still being stored."""
        return asyncio.ensure_future(self._describe(scene_id, saved, expected))

    async def _describe(
        self, scene_id: str, saved: asyncio.Event, expected: tuple[int, str, RunRecord] | None
    ) -> Described:
        await saved.wait()
        scene: SceneInspection | Exception
        try:
            scene = await self.bridge.inspect()
        except Exception as exc:  # noqa: BLE001 - reported where the artifact is written
            scene = exc
        # The artifact is built here while Blender summarises the scene: two processes.
        building: asyncio.Future[bytes] | None = None
        if expected is not None and not isinstance(scene, Exception):
            revision, scene_hash, record = expected
            head = Head(scene_id=scene_id, revision=revision, scene_hash=scene_hash,
                        object_name="", epoch=0)  # fmt: skip
            building = asyncio.ensure_future(asyncio.to_thread(document, scene, head, record))
        try:
            summary = await self._summary(scene_id)
        finally:
            built = None if building is None else (revision, scene_hash, await building)
        return Described(scene, summary, built)

    async def _summary(self, scene_id: str) -> SceneSummary | None:
        if self.summaries is None:
            return None
        try:
            return await self.bridge.summary(scene_id)
        except Exception as exc:  # noqa: BLE001 - planners keep the previous summary
            log.warning("no summary of scene %s: %s", scene_id, exc)
        return None

    async def write(
        self, head: Head, record: RunRecord, described: asyncio.Future[Described]
    ) -> str | None:
        """Write both notes of the revision ``head``; the artifact's name, or None."""
        try:
            about = await described
            if isinstance(about.scene, Exception):
                await self._put_summary(about.summary)
                raise about.scene
            if about.built is not None and about.built[:2] == (head.revision, head.scene_hash):
                data = about.built[2]
            else:
                data = await asyncio.to_thread(document, about.scene, head, record)
            # Two independent writes, each waiting for its own fsync: side by side.
            _, name = await asyncio.gather(
                self._put_summary(about.summary), self.store.put_inspection(head, data)
            )
            return name
        except Exception as exc:  # noqa: BLE001 - the revision stands; the guardians see None
            log.warning(
                "no inspection of scene %s revision %d: %s", head.scene_id, head.revision, exc
            )
            return None

    async def _put_summary(self, summary: SceneSummary | None) -> None:
        if summary is None or self.summaries is None:
            return
        try:
            await self.summaries.put(summary)
        except Exception as exc:  # noqa: BLE001 - planners keep the previous summary
            log.warning("no summary of scene %s: %s", summary.scene_id, exc)


async def discard(described: asyncio.Future[Described] | None, saved: asyncio.Event) -> None:
    """Drop a description nobody will use. One still waiting for the save is cancelled; one
    under way finishes, so the bridge is never left mid-call."""
    if described is None:
        return
    if not saved.is_set():
        described.cancel()
    with contextlib.suppress(BaseException):
        await described
