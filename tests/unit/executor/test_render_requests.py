"""The executors' check of a render request before its frames are queued: a request that
slipped past a door (another user's scene, a revision never committed or no longer kept)
or that the full queue refuses ends the job failed, naming why; a good one queues each
frame once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from contracts.render_events import RenderEnded, RenderQueued, RenderRequested
from contracts.renders import FrameTask, spec_of
from contracts.scenes import Head
from services.executor.domain.render_worker import QueueFull
from services.executor.render_requests import RenderRequests
from services.runtime.service.consumer_spec import Delivery

DELIVERY = Delivery(stream_seq=1, num_delivered=1, subject="bm.run.j.render_requested")


@dataclass
class HeadsPort:
    current: Head | None
    kept: set[int] = field(default_factory=set)

    async def head(self, scene_id: str) -> Head | None:
        return self.current

    async def find_revision(self, scene_id: str, revision: int) -> Head | None:
        return self.current if revision in self.kept else None


@dataclass
class Queue:
    full: bool = False
    tasks: list[FrameTask] = field(default_factory=list)

    async def enqueue(self, tasks: Sequence[FrameTask]) -> None:
        if self.full:
            raise QueueFull("the render queue holds as many frames as it may (100000)")
        self.tasks += tasks


def asked(user: str = "ana", revision: int = 2) -> RenderRequested:
    spec = spec_of(1, 3, "cycles", 1, 32, 32)
    return RenderRequested(
        event_id="e1", at=1.0, run_id="job", request_id="r", thread_id="job", user=user,
        scene_id="shot", revision=revision, spec=spec, cost=spec.cost,
    )  # fmt: skip


def head(owner: str = "ana", revision: int = 3) -> Head:
    return Head(scene_id="shot", revision=revision, scene_hash="h", object_name="o", epoch=1,
                owner=owner)  # fmt: skip


async def test_request_when_good_queues_each_frame_once() -> None:
    queue = Queue()
    out = await RenderRequests(HeadsPort(head(), {2}), queue).handle(asked(), DELIVERY)
    assert [type(e) for e in out] == [RenderQueued] and out[0].frames == 3  # type: ignore[attr-defined]
    assert [t.frame for t in queue.tasks] == [1, 2, 3]
    assert {t.request_event_id for t in queue.tasks} == {"e1"}


@pytest.mark.parametrize(
    ("heads", "asking", "said"),
    [
        (HeadsPort(head(owner="ben")), asked(), "you have no scene 'shot'"),
        (HeadsPort(None), asked(), "you have no scene 'shot'"),
        (HeadsPort(head()), asked(revision=9), "has no revision 9 yet"),
        (HeadsPort(head(), set()), asked(revision=1), "is no longer stored"),
    ],
)
async def test_request_when_it_slipped_past_a_door_ends_the_job_failed(
    heads: HeadsPort, asking: RenderRequested, said: str
) -> None:
    queue = Queue()
    out = await RenderRequests(heads, queue).handle(asking, DELIVERY)
    assert len(out) == 1 and isinstance(out[0], RenderEnded)
    assert out[0].status == "failed" and said in out[0].message
    assert queue.tasks == []


async def test_request_when_the_queue_is_full_ends_the_job_failed_saying_so() -> None:
    out = await RenderRequests(HeadsPort(head(), {2}), Queue(full=True)).handle(asked(), DELIVERY)
    assert isinstance(out[0], RenderEnded) and "render queue holds" in out[0].message


@dataclass
class Budgets:
    refuse: str | None = None
    claimed: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)

    async def claim(self, user: str, job_id: str, cost: int) -> str | None:
        if self.refuse is None:
            self.claimed.append(job_id)
        return self.refuse

    async def release(self, user: str, job_id: str) -> None:
        self.released.append(job_id)


async def test_request_when_over_the_users_budget_ends_failed_queuing_nothing() -> None:
    queue, budgets = Queue(), Budgets(refuse="would pass BLENDMESH_USER_RENDER_COST_AT_ONCE")
    out = await RenderRequests(HeadsPort(head(), {2}), queue, budgets).handle(asked(), DELIVERY)
    assert isinstance(out[0], RenderEnded) and "AT_ONCE" in out[0].message
    assert queue.tasks == []


async def test_request_when_queued_claims_and_when_the_queue_is_full_releases() -> None:
    budgets = Budgets()
    await RenderRequests(HeadsPort(head(), {2}), Queue(), budgets).handle(asked(), DELIVERY)
    assert budgets.claimed == ["job"] and budgets.released == []
    full = Budgets()
    await RenderRequests(HeadsPort(head(), {2}), Queue(full=True), full).handle(asked(), DELIVERY)
    assert full.claimed == ["job"] and full.released == ["job"]
