"""Composition root of the executor: bridge child process, catalog, scene store, consumer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import msgspec

from contracts import assets, exports, libraries, scene_files, views
from contracts.health import BlenderState
from contracts.libraries import MAX_LIBRARY_BYTES
from contracts.tools import catalog_from_mcp
from services.executor.adapters.catalog import KvCatalog, KvNodeCatalog
from services.executor.adapters.collector import Collector, collect_every, retention_of
from services.executor.adapters.exports import SceneExports
from services.executor.adapters.kv_journal import KvJournal
from services.executor.adapters.leases import KvLeases
from services.executor.adapters.libraries import BlendFileLinks, StoredLibraries, library_prefix
from services.executor.adapters.previews import ObjectStorePreviews
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.scene_summaries import KvSceneSummaries
from services.executor.adapters.supervisor import SupervisedBridge
from services.executor.adapters.uploads import ObjectStoreUploads
from services.executor.domain.library_shelf import LibraryShelf
from services.executor.domain.preview_worker import PreviewWorker
from services.executor.domain.project_access import refusals
from services.executor.domain.runner import PlanRunner
from services.executor.domain.scene_tools import SceneTools
from services.executor.domain.session import Scenes
from services.executor.handlers import ExecutorHandlers, filter_subjects
from services.executor.render_app import start_renders
from services.runtime.nats import access
from services.runtime.nats.history import last_of, read_run
from services.runtime.nats.ready import until_ready
from services.runtime.service import health, metrics
from services.runtime.service.atomic_batches import AtomicPipeline
from services.runtime.service.consumer_spec import ConsumerSpec
from services.runtime.service.host import Bus, ConsumerService
from services.runtime.service.projects import projects_of
from services.runtime.service.settings import Settings
from services.runtime.service.version import BLENDMESH_VERSION

# Waiting for another executor's lease is a nak per try: allow many before dead-lettering.
LEASE_PATIENCE = 20
PREVIEW_NICE = 19


def blender_state(bridge: SupervisedBridge, scenes: Scenes) -> BlenderState:
    """The run bridge's Blender, and the scene revision it holds loaded between runs."""
    held = scenes.loaded if bridge.alive else None  # a stopped Blender holds nothing
    return BlenderState(
        up=bridge.alive,
        idle=bridge.parked,
        version=bridge.profile.version,
        restarts=bridge.restarts,
        scene=held[0] if held else None,
        revision=held[1] if held else None,
    )


async def start(settings: Settings, bus: Bus) -> ConsumerService:
    owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    work_dir = settings.work_dir / owner.replace(":", "-")
    # Each Blender is stopped after settings.bridge_idle seconds unused and started again
    # by the next call (ADR 0033): an idle mesh keeps no Blender.
    bridge = SupervisedBridge(call_timeout=settings.op_timeout, idle=settings.bridge_idle)
    # Previews render on a Blender process of their own, started by the first picture
    # asked for, so a picture never holds up the bridge the next run needs; at the lowest
    # CPU priority, so on a busy machine the runs' processes go first.
    preview_bridge = SupervisedBridge(
        call_timeout=settings.op_timeout,
        nice=PREVIEW_NICE,
        role="preview",
        idle=settings.bridge_idle,
    )
    worker: PreviewWorker | None = None
    collecting: asyncio.Task[None] | None = None
    scenes: Scenes | None = None

    stop_renders: Callable[[], Awaitable[None]] | None = None

    async def cleanup() -> None:
        stopped: list[BaseException] = []
        if stop_renders is not None:  # a frame in hand comes back to another executor
            try:
                await stop_renders()
            except Exception as exc:  # noqa: BLE001 - the other Blenders close all the same
                stopped.append(exc)
        if collecting is not None:
            collecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await collecting
        if scenes is not None:  # another executor takes its warm scene at once
            await scenes.shutdown()

        async def close_previews() -> None:
            if worker is not None:
                await worker.close()
            await preview_bridge.close()

        # The two Blenders end side by side: each takes a second or so to exit, and the
        # preview's may first finish a render, so one after the other a stop took the sum.
        ended = await asyncio.gather(close_previews(), bridge.close(), return_exceptions=True)
        shutil.rmtree(work_dir, ignore_errors=True)
        for error in [*stopped, *ended]:
            if isinstance(error, BaseException):
                raise error

    # Without its Blender the executor is dead: a bridge that keeps dying ends the service.
    service = ConsumerService("executor", closers=[cleanup], essentials=[bridge.gone])
    try:
        tools = await bridge.start()
        # The executor's own tools join the bridge's: the planner, the policy and the
        # capability gate judge plans against one catalog.
        own = [
            *scene_files.tool_entries(),
            assets.tool_entry(),
            views.tool_entry(),
            exports.tool_entry(),
            libraries.tool_entry(),
        ]
        catalog = catalog_from_mcp([*tools, *own], bridge.profile.version)
        metrics.known_tools(catalog.names)  # the only tool names metrics label operations with
        node_catalog = await bridge.node_catalog()
        # The first writes to a bucket that may have just been made: on a cluster that is
        # still starting, its leader may not be elected yet.
        bucket = f"KV bucket {access.bucket(bus.prefix, 'catalog')}"
        await until_ready(
            bucket, lambda: KvCatalog(bus.js, bus.prefix).publish(catalog), bus.ready_wait
        )
        await until_ready(
            bucket,
            lambda: KvNodeCatalog(bus.js, bus.prefix).publish(node_catalog),
            bus.ready_wait,
        )
        store = JetStreamSceneStore(bus.js, bus.prefix, chunk_grace=settings.chunk_grace)
        # Retention's collector (docs/storage.md) runs beside the runs, never on their path.
        collector = Collector(bus.js, bus.prefix, retention_of(settings))
        collecting = asyncio.create_task(collect_every(collector, settings.gc_interval))
        files = SceneExports(settings.scenes_dir)
        # Each project's libraries, kept as scenes are; a shot's revisions are put beside
        # it before Blender opens it (ADR 0060).
        library_store = JetStreamSceneStore(
            bus.js, library_prefix(bus.prefix), whole_below=MAX_LIBRARY_BYTES + 1
        )
        stored = StoredLibraries(library_store)
        shelf = LibraryShelf(stored, BlendFileLinks(), work_dir / "library-cache")
        bridge.before_load = shelf.materialise
        preview_shelf = LibraryShelf(stored, BlendFileLinks(), work_dir / "library-cache")
        preview_bridge.before_load = preview_shelf.materialise
        scenes = Scenes(
            store=store,
            leases=KvLeases(bus.js, bus.prefix, owner, settings.lease_ttl),
            files=files,
            work_dir=work_dir,
            bridge=bridge,
            # Between runs the scene stays held for the next run here (ADR 0037), while
            # this Blender runs: one stopped for idling holds no scene.
            warm_for=settings.warm_hold,
            holds_scene=lambda: bridge.alive,
            shelf=shelf,
        )
        # A run's unsaved scene lives in it; a warm hold's does not keep it running.
        bridge.keep_while(lambda: scenes is not None and scenes.open_sessions > 0)
        if settings.previews:

            async def open_preview_bridge() -> SupervisedBridge:
                await preview_bridge.start()
                return preview_bridge

            worker = PreviewWorker(
                open_bridge=open_preview_bridge,
                files=files,
                previews=ObjectStorePreviews(bus.js, bus.prefix),
                work_dir=work_dir / "previews",
                shelf=preview_shelf,
            )
            preview_bridge.keep_while(lambda: worker is not None and worker.rendering)
        runner = PlanRunner(
            bridge=bridge,
            scenes=scenes,
            journal=KvJournal(bus.js, bus.prefix, bus.nc),
            catalog=lambda: catalog,
            profile=lambda: bridge.profile,
            op_timeout=settings.op_timeout,
            allow_unsafe=settings.allow_unsafe_ops,
            cancels=partial(last_of, bus.js, bus.prefix, kind="cancel_requested"),
            summaries=KvSceneSummaries(bus.js, bus.prefix),
            preview_worker=worker,
            scene_tools=SceneTools(
                revisions=store,
                uploads=ObjectStoreUploads(bus.js, bus.prefix),
                work_dir=work_dir / "imports",
                max_upload_bytes=settings.max_upload_bytes,
                shelf=shelf,
            ),
            release=BLENDMESH_VERSION,
            refusal=refusals(projects_of(bus).current, time.time),
        )
        handlers = ExecutorHandlers(
            runner=runner,
            progress=lambda: AtomicPipeline(bus.js, bus.nc, bus.prefix),
            history=partial(read_run, bus.js, bus.prefix),
            catalog_version=lambda: catalog.version,
            catalog_wait=settings.catalog_wait,
            max_deliver=settings.max_deliver * LEASE_PATIENCE,
        )
        for spec in consumers(handlers, settings, bus.prefix):
            await service.add(bus, spec)
        stop_renders = await start_renders(settings, bus, service, store, owner, work_dir)
        read_consumer = health.consumer_stats(bus.js, bus.prefix, ["executor"], service.problems)

        async def stats() -> dict[str, Any]:
            found = await read_consumer()
            blender = msgspec.to_builtins(blender_state(bridge, scenes))
            pins = {"catalog_version": catalog.version, "waiting": handlers.waiting()}
            return found | {"blender": blender} | pins

        registered = await health.register(bus, "executor", stats)
        service.closers.append(registered.stop)
    except BaseException:  # a half-started executor leaves no Blender behind
        await service.stop()
        raise
    return service


def consumers(handlers: ExecutorHandlers, settings: Settings, prefix: str) -> list[ConsumerSpec]:
    """The executor's consumer as it runs it; an in-memory mesh for tests wires this."""
    return [
        ConsumerSpec(
            durable="executor",
            filter_subjects=filter_subjects(prefix),
            handler=handlers.handle,
            ack_wait=settings.ack_wait,
            # A scene's lease held by another run makes the handler nak: patience, not
            # failures, so those deliveries get a larger allowance.
            max_deliver=settings.max_deliver * LEASE_PATIENCE,
            heartbeat=True,
        )
    ]
