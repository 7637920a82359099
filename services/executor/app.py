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
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from contracts import assets, exports, libraries, scene_files, views
from contracts.bridge import BlenderProfile
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
from services.executor.adapters.trash import Trash, stale_work_dirs
from services.executor.adapters.uploads import ObjectStoreUploads
from services.executor.domain.lanes import Lane, LanePool, pool_size
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


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo, in bytes; None where there is none."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass
class _LaneParts:
    """One lane of the pool as wired here: its Blender, the scene it holds, its runner."""

    bridge: SupervisedBridge
    scenes: Scenes
    runner: PlanRunner


async def start(settings: Settings, bus: Bus) -> ConsumerService:
    owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    work_dir = settings.work_dir / owner.replace(":", "-")
    size = pool_size(settings.bridges, await asyncio.to_thread(available_memory))
    # Each Blender is stopped after settings.bridge_idle seconds unused and started again
    # by the next call (ADR 0033): an idle mesh keeps no Blender. The first bridge starts
    # now, for the catalog; the pool's others when a run first needs them (ADR 0070).
    bridges = [
        SupervisedBridge(call_timeout=settings.op_timeout, idle=settings.bridge_idle)
        for _ in range(size)
    ]
    bridge = bridges[0]
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
    trash: Trash | None = None
    lanes: list[_LaneParts] = []

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
        # Another executor takes the warm scenes at once.
        await asyncio.gather(*(lane.scenes.shutdown() for lane in lanes))

        async def close_previews() -> None:
            if worker is not None:
                await worker.close()
            await preview_bridge.close()

        # The Blenders end side by side: each takes a second or so to exit, and the
        # preview's may first finish a render, so one after the other a stop took the sum.
        ended = await asyncio.gather(
            close_previews(), *(b.close() for b in bridges), return_exceptions=True
        )
        if trash is not None:
            await asyncio.to_thread(trash.close)
        shutil.rmtree(work_dir, ignore_errors=True)
        for error in [*stopped, *ended]:
            if isinstance(error, BaseException):
                raise error

    # Without its Blenders the executor is dead: a bridge that keeps dying ends the service.
    service = ConsumerService("executor", closers=[cleanup], essentials=[b.gone for b in bridges])
    try:
        tools = await bridge.start()
        for spare in bridges[1:]:
            spare.start_parked(bridge.profile)
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
        # Big files are deleted by the trash's own thread, never on a run's path; so are
        # the work directories of this host's executors that died (adapters/trash.py).
        trash = await asyncio.to_thread(_open_trash, settings.work_dir)
        files = SceneExports(settings.scenes_dir, trash)
        # Each project's libraries, kept as scenes are; a shot's revisions are put beside
        # it before Blender opens it (ADR 0060).
        library_store = JetStreamSceneStore(
            bus.js, library_prefix(bus.prefix), whole_below=MAX_LIBRARY_BYTES + 1
        )
        stored = StoredLibraries(library_store)
        preview_shelf = LibraryShelf(stored, BlendFileLinks(), work_dir / "library-cache")
        preview_bridge.before_load = preview_shelf.materialise
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
                discard=trash.discard,
            )
            preview_bridge.keep_while(lambda: worker is not None and worker.rendering)
        journal = KvJournal(bus.js, bus.prefix, bus.nc)
        summaries = KvSceneSummaries(bus.js, bus.prefix)
        uploads = ObjectStoreUploads(bus.js, bus.prefix)
        refusal = refusals(projects_of(bus).current, time.time)
        for index, lane_bridge in enumerate(bridges):
            # Each Blender loads its revisions and imports beside libraries of its own: a
            # shelf holds exactly the revisions its last load named, which another lane's
            # shot may not.
            lane_dir = work_dir if index == 0 else work_dir / f"lane-{index}"
            shelf = LibraryShelf(stored, BlendFileLinks(), work_dir / "library-cache")
            lane_bridge.before_load = shelf.materialise
            scenes = Scenes(
                store=store,
                # Each lane leases as an owner of its own: the lease stays the one writer
                # of a scene between this executor's Blenders too.
                leases=KvLeases(
                    bus.js,
                    bus.prefix,
                    owner if index == 0 else f"{owner}:{index}",
                    settings.lease_ttl,
                ),
                files=files,
                work_dir=lane_dir,
                bridge=lane_bridge,
                # Between runs the scene stays held for the next run here (ADR 0037), while
                # this Blender runs: one stopped for idling holds no scene.
                warm_for=settings.warm_hold,
                holds_scene=partial(_alive, lane_bridge),
                shelf=shelf,
                discard=trash.discard,
            )
            # A run's unsaved scene lives in it; a warm hold's does not keep it running.
            lane_bridge.keep_while(partial(_in_run, scenes))
            runner = PlanRunner(
                bridge=lane_bridge,
                scenes=scenes,
                journal=journal,
                catalog=lambda: catalog,
                profile=partial(_profile, lane_bridge),
                op_timeout=settings.op_timeout,
                allow_unsafe=settings.allow_unsafe_ops,
                cancels=partial(last_of, bus.js, bus.prefix, kind="cancel_requested"),
                summaries=summaries,
                preview_worker=worker,
                scene_tools=SceneTools(
                    revisions=store,
                    uploads=uploads,
                    work_dir=lane_dir / "imports",
                    max_upload_bytes=settings.max_upload_bytes,
                    shelf=shelf,
                ),
                release=BLENDMESH_VERSION,
                refusal=refusal,
            )
            lanes.append(_LaneParts(lane_bridge, scenes, runner))
        pool = LanePool(
            [
                Lane(i, lane.runner, partial(_holds, lane), partial(_alive, lane.bridge))
                for i, lane in enumerate(lanes)
            ]
        )
        handlers = ExecutorHandlers(
            runner=lanes[0].runner,
            progress=lambda: AtomicPipeline(bus.js, bus.nc, bus.prefix),
            history=partial(read_run, bus.js, bus.prefix),
            catalog_version=lambda: catalog.version,
            catalog_wait=settings.catalog_wait,
            max_deliver=settings.max_deliver * LEASE_PATIENCE,
            lanes=pool if len(lanes) > 1 else None,
        )
        # One consumer loop per lane on the one durable: a loop takes a run while the
        # others' runs go on, and the pool gives it a free Blender.
        for spec in consumers(handlers, settings, bus.prefix):
            for _ in lanes:
                await service.add(bus, spec)
        stop_renders = await start_renders(settings, bus, service, store, owner, work_dir)
        read_consumer = health.consumer_stats(bus.js, bus.prefix, ["executor"], service.problems)

        async def stats() -> dict[str, Any]:
            found = await read_consumer()
            states = [msgspec.to_builtins(blender_state(p.bridge, p.scenes)) for p in lanes]
            pins = {"catalog_version": catalog.version, "waiting": handlers.waiting()}
            return found | {"blender": states[0], "bridges": states} | pins

        registered = await health.register(bus, "executor", stats)
        service.closers.append(registered.stop)
    except BaseException:  # a half-started executor leaves no Blender behind
        await service.stop()
        raise
    return service


def _alive(bridge: SupervisedBridge) -> bool:
    return bridge.alive


def _profile(bridge: SupervisedBridge) -> BlenderProfile:
    return bridge.profile


def _in_run(scenes: Scenes) -> bool:
    return scenes.open_sessions > 0


def _open_trash(work_root: Path) -> Trash:
    trash = Trash(work_root / "trash")
    for stale in stale_work_dirs(work_root, socket.gethostname()):
        trash.discard(stale)
    return trash


def _holds(lane: _LaneParts) -> str | None:
    """The scene a lane's Blender holds loaded now, if it runs."""
    held = lane.scenes.loaded
    return held[0] if held is not None and lane.bridge.alive else None


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
