"""The executor's share of render jobs, wired: the handler that queues a job's frames and
the worker that takes frames off the queue on a Blender of its own (docs/renders.md).

Part of the executor's composition root (``app.py`` calls ``start_renders``). The render
Blender starts at the first frame and stops after ``bridge_idle`` seconds without one,
so an executor that renders nothing keeps no Blender for it (ADR 0033).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from contracts import subjects
from services.executor.adapters.frame_queue import FrameQueue, FrameTaker
from services.executor.adapters.render_budgets import KvRenderBudgets, at_once
from services.executor.adapters.renders import LoggedJobs, ObjectStoreFrames, StoredRevisions
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.supervisor import SupervisedBridge
from services.executor.domain.render_worker import RenderWorker
from services.executor.render_requests import RenderRequests
from services.runtime.service.consumer_spec import ConsumerSpec
from services.runtime.service.host import Bus, ConsumerService
from services.runtime.service.publishers import JetStreamPublisher
from services.runtime.service.settings import Settings

RENDER_NICE = 10  # below a run's Blender, above the previews'


async def start_renders(
    settings: Settings,
    bus: Bus,
    service: ConsumerService,
    store: JetStreamSceneStore,
    owner: str,
    work_dir: Path,
) -> Callable[[], Awaitable[None]]:
    """Start taking render requests and frames; returns what stops both."""
    bridge = SupervisedBridge(
        call_timeout=settings.op_timeout,
        nice=RENDER_NICE,
        role="render",
        idle=settings.bridge_idle,
    )
    started = asyncio.Lock()

    async def open_bridge() -> SupervisedBridge:
        async with started:
            if not bridge.alive and not bridge.parked:
                await bridge.start()
        return bridge

    jobs = LoggedJobs(bus.js, bus.prefix)
    budgets = KvRenderBudgets(bus.js, bus.prefix, jobs.stopped, at_once(settings.env))
    requests = RenderRequests(heads=store, queue=FrameQueue(bus.js, bus.prefix), budgets=budgets)
    await service.add(
        bus,
        ConsumerSpec(
            durable="renders",
            filter_subjects=[subjects.any_run(bus.prefix, "render_requested")],
            handler=requests.handle,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
        ),
    )
    worker = RenderWorker(
        open_bridge=open_bridge,
        revisions=StoredRevisions(store),
        store=ObjectStoreFrames(bus.js, bus.prefix),
        jobs=jobs,
        work_dir=work_dir / "renders",
        frame_timeout=settings.op_timeout,
        executor=owner,
    )
    taker = FrameTaker(
        bus.js,
        bus.prefix,
        worker,
        JetStreamPublisher(bus.js, bus.prefix, bus.nc),
        ack_wait=settings.ack_wait,
        max_deliver=settings.max_deliver,
        release=budgets.release,
    )
    await taker.start(bus.ready_wait)

    async def stop() -> None:
        await taker.stop()
        await bridge.close()

    return stop
