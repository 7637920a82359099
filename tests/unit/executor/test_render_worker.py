"""The render worker's rules with in-memory ports: a cancelled job's frame is not
rendered, a revision is loaded once for a job's frames and again after Blender changed,
a frame rendered twice is one object and one event id, and the last frame ends the job."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from contracts.events import AnyEvent, follow
from contracts.render_events import (
    FrameRendered,
    RenderCancelRequested,
    RenderEnded,
    RenderRequested,
)
from contracts.renders import FrameImage, FrameParams, FrameTask, spec_of
from services.executor.domain.render_worker import FrameRefused, RenderWorker


@dataclass
class Blender:
    generation: int = 1
    loads: list[str] = field(default_factory=list)

    async def load(self, path: str) -> str:
        self.loads.append(await asyncio.to_thread(Path(path).read_text))
        return "hash"

    async def render_frame(self, want: FrameParams, timeout: float | None = None) -> FrameImage:
        await asyncio.to_thread(Path(want.path).write_bytes, b"PNG frame %d" % want.frame)
        return FrameImage(path=want.path, frame=want.frame, engine="CYCLES", ms=1.0)

    async def restart(self) -> None:
        self.generation += 1


@dataclass
class Revisions:
    kept: set[tuple[str, int]]

    async def fetch_revision(self, scene_id: str, revision: int, dest: Path) -> bool:
        if (scene_id, revision) not in self.kept:
            return False
        await asyncio.to_thread(dest.write_text, f"{scene_id}@{revision}")
        return True


@dataclass
class Store:
    objects: dict[str, bytes] = field(default_factory=dict)

    async def put(self, name: str, data: bytes) -> None:
        self.objects.setdefault(name, data)


@dataclass
class Jobs:
    log: list[AnyEvent] = field(default_factory=list)

    async def events(self, job_id: str) -> Sequence[AnyEvent]:
        return self.log

    async def stopped(self, job_id: str) -> bool:
        return any(isinstance(e, (RenderCancelRequested, RenderEnded)) for e in self.log)

    async def frames_logged(self, job_id: str) -> int:
        return sum(isinstance(e, FrameRendered) for e in self.log)


def setup(
    tmp_path: Path, last: int = 2
) -> tuple[RenderWorker, Blender, Store, Jobs, list[FrameTask]]:
    spec = spec_of(1, last, "cycles", 1, 32, 32)
    asked = RenderRequested(
        event_id="e1", at=1.0, run_id="job", request_id="r", thread_id="job", user="ana",
        scene_id="shot", revision=2, spec=spec, cost=spec.cost,
    )  # fmt: skip
    jobs = Jobs(log=[asked])
    blender, store = Blender(), Store()

    async def open_bridge() -> Blender:
        return blender

    worker = RenderWorker(
        open_bridge=open_bridge,
        revisions=Revisions({("shot", 2)}),
        store=store,
        jobs=jobs,
        work_dir=tmp_path,
        frame_timeout=10.0,
        executor="x",
    )
    tasks = [
        FrameTask(
            job_id="job",
            user="ana",
            scene_id="shot",
            revision=2,
            frame=n,
            spec=spec,
            request_event_id="e1",
        )
        for n in spec.frames
    ]
    return worker, blender, store, jobs, tasks


async def test_render_when_frames_of_one_job_loads_the_revision_once_and_ends_it(
    tmp_path: Path,
) -> None:
    worker, blender, store, jobs, tasks = setup(tmp_path)
    for task in tasks:
        events = await worker.render(task)
        jobs.log += events
        assert await worker.finish(task) == [] or task is tasks[-1]
    assert blender.loads == ["shot@2"]
    ended = await worker.finish(tasks[-1])
    assert [(e.status, e.frames) for e in ended if isinstance(e, RenderEnded)] == [("completed", 2)]
    assert len(store.objects) == 2
    assert all(name.startswith("ana/") for name in store.objects)


async def test_render_when_a_frame_is_rendered_twice_gives_one_object_and_one_event_id(
    tmp_path: Path,
) -> None:
    worker, _, store, _, tasks = setup(tmp_path)
    first = await worker.render(tasks[0])
    again = await worker.render(tasks[0])
    assert [e.event_id for e in first] == [e.event_id for e in again]
    assert len(store.objects) == 1


async def test_render_when_blender_was_replaced_loads_the_revision_again(tmp_path: Path) -> None:
    worker, blender, _, _, tasks = setup(tmp_path)
    await worker.render(tasks[0])
    blender.generation += 1  # a new Blender process holds no scene
    await worker.render(tasks[1])
    assert blender.loads == ["shot@2", "shot@2"]


async def test_render_when_job_cancelled_renders_nothing_and_says_cancelled(tmp_path: Path) -> None:
    worker, blender, store, jobs, tasks = setup(tmp_path)
    asked = jobs.log[0]
    assert isinstance(asked, RenderRequested)
    jobs.log.append(follow(asked, RenderCancelRequested, 2.0, cancelled_by="ana"))
    assert await worker.render(tasks[0]) == []
    assert blender.loads == [] and store.objects == {}
    said = await worker.cancelled(tasks[0])
    assert [e.status for e in said if isinstance(e, RenderEnded)] == ["cancelled"]


async def test_render_when_revision_is_gone_refuses_naming_it(tmp_path: Path) -> None:
    worker, _, _, _, tasks = setup(tmp_path)
    gone = FrameTask(job_id="job", user="ana", scene_id="shot", revision=9, frame=1,
                     spec=tasks[0].spec, request_event_id="e1")  # fmt: skip
    with pytest.raises(FrameRefused, match="revision 9 of scene shot is not stored"):
        await worker.render(gone)
