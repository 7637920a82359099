"""Render jobs, one rule for every door: who may ask for what, how much, and how a job
is read back, cancelled and its frames handed out (docs/renders.md).

A job is its user's alone: anyone else asking about it, its frames or its cancel is told
there is no such job, as for a run (``ownership``). A job's cost (frames x samples x
pixels) is bounded per user by ``RenderQuota``, refused before anything enters the log.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

from contracts import subjects
from contracts.events import follow
from contracts.render_events import RenderCancelRequested, RenderRequested
from contracts.render_fold import FINAL, RenderJob, fold_job
from contracts.renders import DEFAULT_COST_AT_ONCE, DEFAULT_JOB_COST, RenderSpec
from services.doors.core.client import ClientError, MeshClient
from services.doors.core.fairness import whole_numbers
from services.doors.core.ownership import NotOwned, own_scene
from services.executor.client import RenderFrames, SceneFiles, render_cost_under_way
from services.runtime.nats.history import read_run

SETTINGS = {"cost": "BLENDMESH_USER_RENDER_COST", "at_once": "BLENDMESH_USER_RENDER_COST_AT_ONCE"}
POLL = 0.25  # seconds between reads of a followed job's log


class RenderQuotaExceeded(ClientError):
    """The job costs more than its user may spend on one; the message names the limit."""


@dataclass(frozen=True)
class RenderQuota:
    cost: int = DEFAULT_JOB_COST  # one job
    at_once: int = DEFAULT_COST_AT_ONCE  # the user's jobs under way, this one with them

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RenderQuota:
        return cls(**whole_numbers(env, {f.name: SETTINGS[f.name] for f in fields(cls)}))

    def check(self, spec: RenderSpec) -> None:
        if spec.cost > self.cost:
            frames = len(spec.frames)
            raise RenderQuotaExceeded(
                f"this job costs {spec.cost:,} ({frames} frames x {spec.samples} samples x "
                f"{spec.width}x{spec.height} pixels), over the {self.cost:,} one user may "
                f"spend on a job ({SETTINGS['cost']}): render fewer frames, fewer samples "
                "or a smaller size"
            )


async def request_render(
    client: MeshClient,
    files: SceneFiles,
    quota: RenderQuota,
    user: str,
    scene_id: str,
    revision: int | None,
    spec: RenderSpec,
) -> RenderRequested:
    """Check and log a render request for ``user``; returns it (its ``run_id`` is the job's
    id). ``revision`` None is the scene's newest."""
    try:
        subjects.check_token(scene_id, "scene id")
    except ValueError as exc:
        raise ClientError(str(exc)) from None
    head = own_scene(await files.head(scene_id), scene_id, user)
    if revision is None:
        revision = head.revision
    if not 1 <= revision <= head.revision:
        raise ClientError(
            f"scene {scene_id} has revisions 1 to {head.revision}, not {revision}: render a "
            "committed revision (`blendmesh scenes history`)"
        )
    quota.check(spec)
    # The executors count it again when they queue it; asking first refuses it unlogged.
    under_way = await render_cost_under_way(client.bus.js, client.bus.prefix, user)
    if under_way + spec.cost > quota.at_once:
        raise RenderQuotaExceeded(
            f"your render jobs under way cost {under_way:,}; with this one ({spec.cost:,}) "
            f"they would pass the {quota.at_once:,} one user may have at once "
            f"({SETTINGS['at_once']}): wait for them to finish, or cancel one "
            "(`blendmesh render cancel JOB`)"
        )
    job_id = f"render-{uuid.uuid4().hex[:16]}"
    request = RenderRequested(
        event_id=str(uuid.uuid4()),
        at=time.time(),
        run_id=job_id,
        request_id=str(uuid.uuid4()),
        thread_id=job_id,
        user=user,
        scene_id=scene_id,
        revision=revision,
        spec=spec,
        cost=spec.cost,
    )
    await client.bus.publisher.publish(request)
    return request


async def job_of(client: MeshClient, job_id: str, user: str) -> RenderJob:
    """``user``'s job ``job_id``; anything else reads as no such job."""
    try:
        events = await read_run(client.bus.js, client.bus.prefix, job_id)
    except ValueError:  # not one token: no job has that id
        raise NotOwned(f"no render job {job_id[:80]}") from None
    job = fold_job(events)
    if job is None or job.user != user:
        raise NotOwned(f"no render job {job_id}")
    return job


async def cancel_render(client: MeshClient, job_id: str, user: str) -> RenderJob:
    """Cancel ``user``'s job: frames not yet taken are not rendered."""
    job = await job_of(client, job_id, user)
    if job.status in FINAL:
        raise ClientError(f"render job {job_id} is {job.status} already: nothing to cancel")
    events = await read_run(client.bus.js, client.bus.prefix, job_id)
    requested = next(e for e in events if isinstance(e, RenderRequested))
    # Derived from the request: one cancel per job, however many ask.
    cancel = follow(requested, RenderCancelRequested, time.time(), cancelled_by=user)
    await client.bus.publisher.publish(cancel)
    return await job_of(client, job_id, user)


async def follow_job(
    client: MeshClient,
    job_id: str,
    user: str,
    timeout: float,
    on_progress: Callable[[RenderJob], None] | None = None,
) -> RenderJob:
    """Read ``job_id`` until it ends (or ``timeout`` seconds pass: then as it stands)."""
    deadline = time.monotonic() + timeout
    seen = -1
    while True:
        job = await job_of(client, job_id, user)
        if on_progress is not None and len(job.frames) != seen:
            seen = len(job.frames)
            on_progress(job)
        if job.status in FINAL or time.monotonic() >= deadline:
            return job
        await asyncio.sleep(POLL)


async def frame_png(frames: RenderFrames, job: RenderJob, frame: int) -> bytes:
    """The PNG of ``frame`` of ``job`` (already checked to be the caller's)."""
    stored = next((f for f in job.frames if f.frame == frame), None)
    if stored is None:
        done = f"{len(job.frames)} of {job.total}"
        raise ClientError(
            f"render job {job.job_id} has no frame {frame} stored ({done} frames are): "
            "`blendmesh render show JOB` lists them"
        )
    png = await frames.get(job.user, stored.sha256)
    if png is None:
        raise ClientError(f"frame {frame} of render job {job.job_id} is no longer stored")
    return png


@dataclass
class MeshRenderJobs:
    """The rules above over one mesh, for a door that holds them as a port (the bus door's
    ``RenderJobs``)."""

    client: MeshClient
    files: SceneFiles
    frames: RenderFrames
    quota: RenderQuota

    async def request(
        self, user: str, scene_id: str, revision: int | None, spec: RenderSpec
    ) -> RenderJob:
        asked = await request_render(
            self.client, self.files, self.quota, user, scene_id, revision, spec
        )
        return await job_of(self.client, asked.run_id, user)

    async def job(self, job_id: str, user: str) -> RenderJob:
        return await job_of(self.client, job_id, user)

    async def cancel(self, job_id: str, user: str) -> RenderJob:
        return await cancel_render(self.client, job_id, user)

    async def frame(self, job_id: str, frame: int, user: str) -> bytes:
        return await frame_png(self.frames, await job_of(self.client, job_id, user), frame)
