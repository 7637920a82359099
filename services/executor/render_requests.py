"""The executors' handler of render requests: check the job against the scene it names,
then put its frames on the render queue (docs/renders.md).

The door checked the spec, the quota and that the scene is the user's; this checks again
what only the executor's stores can say, and refuses a request that slipped past a door
(another user's scene, a revision never committed) by ending the job ``failed``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from contracts.event_base import Event
from contracts.events import AnyEvent, follow
from contracts.render_events import RenderQueued, RenderRequested
from contracts.renders import FrameTask
from contracts.scenes import Head
from services.executor.domain.render_worker import QueueFull, ended
from services.runtime.service.consumer_spec import Delivery


class SceneHeads(Protocol):
    async def head(self, scene_id: str) -> Head | None: ...

    async def find_revision(self, scene_id: str, revision: int) -> Head | None: ...


class Enqueue(Protocol):
    async def enqueue(self, tasks: Sequence[FrameTask]) -> None: ...


class Budgets(Protocol):
    """What each user's jobs under way cost (adapters/render_budgets.py)."""

    async def claim(self, user: str, job_id: str, cost: int) -> str | None: ...

    async def release(self, user: str, job_id: str) -> None: ...


@dataclass
class RenderRequests:
    heads: SceneHeads
    queue: Enqueue
    budgets: Budgets | None = None  # None: no bound on a user's jobs at once

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        if not isinstance(event, RenderRequested):
            return []
        problem = await self._problem(event)
        if problem is None and self.budgets is not None:
            problem = await self.budgets.claim(event.user, event.run_id, event.cost)
        if problem is not None:
            return [ended(event, "failed", 0, time.time(), problem)]
        tasks = [
            FrameTask(
                job_id=event.run_id,
                user=event.user,
                scene_id=event.scene_id,
                revision=event.revision,
                frame=frame,
                spec=event.spec,
                request_event_id=event.event_id,
            )
            for frame in event.spec.frames
        ]
        try:
            await self.queue.enqueue(tasks)
        except QueueFull as full:  # frames queued before it are skipped: the job ended
            if self.budgets is not None:
                await self.budgets.release(event.user, event.run_id)
            return [ended(event, "failed", 0, time.time(), str(full))]
        return [follow(event, RenderQueued, time.time(), frames=len(tasks))]

    async def _problem(self, event: RenderRequested) -> str | None:
        head = await self.heads.head(event.scene_id)
        if head is None or (head.owner and head.owner != event.user):
            # Another user's scene reads as no scene at all: its name says nothing.
            return f"you have no scene {event.scene_id!r}: render one of your own scenes"
        if event.revision > head.revision:
            return (
                f"scene {event.scene_id!r} has no revision {event.revision} yet (its newest "
                f"is {head.revision}): render a committed revision"
            )
        kept = event.revision == head.revision or (
            await self.heads.find_revision(event.scene_id, event.revision) is not None
        )
        if not kept:
            return (
                f"revision {event.revision} of scene {event.scene_id!r} is no longer stored: "
                "render a revision the scene still keeps (`blendmesh scenes history`)"
            )
        return None
