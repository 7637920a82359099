"""Frames of render jobs, one at a time, on a Blender of their own (docs/renders.md).

A frame arrives from the render queue as a ``FrameTask``. The worker skips it when its
job was cancelled or has ended, loads the job's revision unless it holds it already (the
frames of one job follow each other, so most frames load nothing), renders, stores the
PNG by content and answers the ``render_frame`` event. A frame rendered twice (its first
executor died before acknowledging it) gives the same event id and the same object, so
the job still holds it once. The worker that stores the last frame ends the job.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from contracts.errors import BlendmeshError
from contracts.event_base import Event
from contracts.events import AnyEvent, follow
from contracts.render_events import (
    FrameRendered,
    RenderEnded,
    RenderRequested,
    RenderStatus,
)
from contracts.render_fold import fold_job
from contracts.renders import FrameImage, FrameParams, FrameTask, frame_object

log = logging.getLogger("blendmesh.executor")

KEPT_REQUESTS = 64  # jobs whose request a worker remembers; forgetting costs one read


class FrameBridge(Protocol):
    """The worker's Blender: load a revision, render one frame of it. ``generation``
    changes whenever another Blender process took over, holding no scene."""

    @property
    def generation(self) -> int: ...

    async def load(self, path: str) -> str: ...

    async def render_frame(self, want: FrameParams, timeout: float | None = None) -> FrameImage: ...

    async def restart(self) -> None: ...


class RevisionFetcher(Protocol):
    async def fetch_revision(self, scene_id: str, revision: int, dest: Path) -> bool:
        """Write the revision's .blend to ``dest``; False when the store has no such one."""
        ...


class FrameStore(Protocol):
    """The renders object store: frames by content, per user."""

    async def put(self, name: str, data: bytes) -> None: ...


class JobLog(Protocol):
    """What the worker reads of a job from the log."""

    async def events(self, job_id: str) -> Sequence[AnyEvent]: ...

    async def stopped(self, job_id: str) -> bool:
        """The job was cancelled or has ended: its frames are no longer wanted."""
        ...

    async def frames_logged(self, job_id: str) -> int: ...


class QueueFull(BlendmeshError):
    """The render queue refuses more frames: the job cannot be queued now."""


class FrameRefused(BlendmeshError):
    """A frame that can never render (its revision is gone): the job fails with it."""


def ended(
    cause: RenderRequested, status: RenderStatus, frames: int, at: float, message: str = ""
) -> RenderEnded:
    """The job's end; one id per job whatever the status, so the log keeps the first."""
    return follow(cause, RenderEnded, at, status=status, frames=frames, message=message)


@dataclass
class RenderWorker:
    open_bridge: Callable[[], Awaitable[FrameBridge]]  # started at the first frame
    revisions: RevisionFetcher
    store: FrameStore
    jobs: JobLog
    work_dir: Path
    frame_timeout: float
    executor: str = ""  # which executor this is, as its frames say
    _loaded: tuple[str, int, int] | None = None  # scene, revision, bridge generation
    _bridge: FrameBridge | None = None
    _requests: dict[str, RenderRequested] = field(default_factory=dict)

    async def render(self, task: FrameTask) -> list[Event]:
        """The events of rendering ``task`` (none when its job no longer wants it)."""
        if await self.jobs.stopped(task.job_id):
            return []
        if self._bridge is None:
            self._bridge = await self.open_bridge()
        bridge = self._bridge
        if self._loaded != (task.scene_id, task.revision, bridge.generation):
            self._loaded = None
            blend = self.work_dir / f"{task.scene_id}-{task.revision:08d}.blend"
            await asyncio.to_thread(self.work_dir.mkdir, parents=True, exist_ok=True)
            if not await self.revisions.fetch_revision(task.scene_id, task.revision, blend):
                raise FrameRefused(
                    f"revision {task.revision} of scene {task.scene_id} is not stored (deleted "
                    "by retention?): tag the revisions you render (`blendmesh scenes tag`)"
                )
            try:
                await bridge.load(str(blend))
            finally:
                await asyncio.to_thread(blend.unlink, True)  # loaded: Blender holds it now
            self._loaded = (task.scene_id, task.revision, bridge.generation)
        png_path = self.work_dir / f"{task.job_id}-{task.frame}.png"
        want = FrameParams(path=str(png_path), frame=task.frame, spec=task.spec)
        try:
            image = await bridge.render_frame(want, self.frame_timeout)
        except TimeoutError:
            self._loaded = None
            await bridge.restart()  # hung: the next frame gets a fresh Blender
            raise
        png = await asyncio.to_thread(png_path.read_bytes)
        await asyncio.to_thread(png_path.unlink, True)
        digest, name = frame_object(task.user, png)
        await self.store.put(name, png)
        cause = await self._request(task)
        return [
            follow(
                cause,
                FrameRendered,
                time.time(),
                index=task.frame,
                frame=task.frame,
                sha256=digest,
                size=len(png),
                ms=image.ms,
                executor=self.executor,
            )
        ]

    async def finish(self, task: FrameTask) -> list[Event]:
        """The job's end, when every frame is logged and it has not ended yet. Counting
        frames costs one request; the log is read whole only when the count says done."""
        total = len(task.spec.frames)
        if await self.jobs.frames_logged(task.job_id) < total:
            return []
        job = fold_job(await self.jobs.events(task.job_id))
        if job is None or job.ended_at is not None or len(job.frames) < total:
            return []
        cause = await self._request(task)
        return [ended(cause, "completed", len(job.frames), time.time())]

    async def fail(self, task: FrameTask, why: str) -> list[Event]:
        """The job's end for a frame that cannot render."""
        cause = await self._request(task)
        job = fold_job(await self.jobs.events(task.job_id))
        done = len(job.frames) if job is not None else 0
        return [ended(cause, "failed", done, time.time(), why)]

    async def cancelled(self, task: FrameTask) -> list[Event]:
        """The end of a job cancelled while its frames waited: said once, by whichever
        executor takes one of them first."""
        job = fold_job(await self.jobs.events(task.job_id))
        if job is None or job.ended_at is not None or job.status != "cancelled":
            return []
        cause = await self._request(task)
        return [ended(cause, "cancelled", len(job.frames), time.time())]

    async def _request(self, task: FrameTask) -> RenderRequested:
        """The job's request, read from the log once per job while its frames come."""
        known = self._requests.get(task.job_id)
        if known is not None:
            return known
        for event in await self.jobs.events(task.job_id):
            if isinstance(event, RenderRequested) and event.event_id == task.request_event_id:
                while len(self._requests) >= KEPT_REQUESTS:
                    del self._requests[next(iter(self._requests))]
                self._requests[task.job_id] = event
                return event
        raise FrameRefused(f"job {task.job_id} has no render request in the log")
