"""A render job's state from its events: the one fold every door and executor shares."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

from contracts.event_base import Event
from contracts.render_events import (
    FrameRendered,
    RenderCancelRequested,
    RenderEnded,
    RenderRequested,
)
from contracts.renders import RenderSpec

JobStatus = Literal["queued", "rendering", "completed", "cancelled", "failed"]
FINAL: frozenset[str] = frozenset({"completed", "cancelled", "failed"})


class StoredFrame(msgspec.Struct, frozen=True, kw_only=True):
    """One frame of a job as stored: its content hash names its PNG."""

    frame: int
    sha256: str
    size: int
    ms: float
    executor: str


class RenderJob(msgspec.Struct, kw_only=True):
    """What a job's events fold to; ``frames`` holds each frame once, the first stored."""

    job_id: str
    user: str
    scene_id: str
    revision: int
    spec: RenderSpec
    cost: int
    status: JobStatus = "queued"
    frames: list[StoredFrame] = []
    requested_at: float = 0.0
    ended_at: float | None = None
    cancelled_by: str | None = None
    message: str = ""

    @property
    def total(self) -> int:
        return len(self.spec.frames)


def fold_job(events: Iterable[Event]) -> RenderJob | None:
    """The job the events tell of; None when they hold no render request."""
    job: RenderJob | None = None
    stored: dict[int, StoredFrame] = {}
    for event in events:
        match event:
            case RenderRequested():
                job = RenderJob(
                    job_id=event.run_id,
                    user=event.user,
                    scene_id=event.scene_id,
                    revision=event.revision,
                    spec=event.spec,
                    cost=event.cost,
                    requested_at=event.at,
                )
            case FrameRendered() if event.frame not in stored:
                stored[event.frame] = StoredFrame(
                    frame=event.frame,
                    sha256=event.sha256,
                    size=event.size,
                    ms=event.ms,
                    executor=event.executor,
                )
            case RenderCancelRequested() if job is not None and job.status not in FINAL:
                job.status, job.cancelled_by = "cancelled", event.cancelled_by
            case RenderEnded() if job is not None and job.ended_at is None:
                if job.status not in FINAL or event.status == "cancelled":
                    job.status = event.status
                job.ended_at, job.message = event.at, event.message
    if job is None:
        return None
    job.frames = [stored[f] for f in sorted(stored)]
    if job.status == "queued" and stored:
        job.status = "rendering"
    if job.status == "rendering" and len(stored) >= job.total:
        job.status = "completed"
    return job
