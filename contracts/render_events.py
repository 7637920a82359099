"""The events of a render job, facts in the log like a run's (docs/renders.md).

A job is logged as a run of its own (``<prefix>.run.<job id>.render_*``), so the one
table of event kinds gives its publishers and the AsyncAPI document, and a job's events
are read back as any run's. A door writes ``render_requested`` and
``render_cancel_requested``; executors write the rest. A frame completed twice (its
executor died after storing it, and another took it again) publishes the same event id,
and the log keeps one: ``render_fold`` counts each frame once in any case.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from contracts.event_base import RunEvent
from contracts.renders import FrameNumber, RenderSpec, Sha256


class RenderEvent(RunEvent, frozen=True, kw_only=True):
    """An event of a render job; the run machinery (planner, audit's run rows) skips it."""


class RenderRequested(RenderEvent, frozen=True, kw_only=True, tag="run.render_requested"):
    """A person asks for frames of a committed revision of their scene, already checked
    against the contract and their render quota by the door that wrote it."""

    scene_id: str
    revision: Annotated[int, msgspec.Meta(ge=1)]
    spec: RenderSpec
    cost: int  # frames x samples x pixels, as the door counted it


class RenderQueued(RenderEvent, frozen=True, kw_only=True, tag="run.render_queued"):
    """An executor put the job's frames on the render queue."""

    frames: int


class FrameRendered(RenderEvent, frozen=True, kw_only=True, tag="run.render_frame"):
    """One frame is stored, by content, in the renders object store."""

    frame: FrameNumber
    sha256: Sha256
    size: int  # bytes of the PNG
    ms: float  # Blender's render time
    executor: str  # which executor rendered it


class RenderCancelRequested(
    RenderEvent, frozen=True, kw_only=True, tag="run.render_cancel_requested"
):
    """A person stops the job: frames not yet taken are dropped, not rendered."""

    cancelled_by: str


RenderStatus = Literal["completed", "cancelled", "failed"]


class RenderEnded(RenderEvent, frozen=True, kw_only=True, tag="run.render_ended"):
    """The job ended. Its id is derived from the request alone, so however many executors
    see the end at once, the log keeps the first."""

    status: RenderStatus
    frames: int  # frames stored
    message: str = ""


# Every render job event, as the log's union of events takes them (contracts/events.py).
AnyRenderEvent = (
    RenderRequested | RenderQueued | FrameRendered | RenderCancelRequested | RenderEnded
)
