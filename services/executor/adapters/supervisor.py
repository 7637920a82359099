"""Keeps one bridge process for the executor, restarting it after a crash or hang.

A bridge that exits by itself is replaced at once, not at the next call, so a crash never
leaves the next run without Blender. Restarts have a budget: a bridge that keeps dying
(more than ``RESTART_LIMIT`` starts within ``RESTART_WINDOW`` seconds, failed starts
included) is given up, and ``gone()`` says why: an executor without Blender is dead.

A Blender holds ~280 MB doing nothing, so one unused for ``idle`` seconds is stopped on
purpose (``parked``, ADR 0033); the next call starts it again and pays the start. A parked
bridge is not a crash: it is not replaced, not counted against the budget, and health
reports it as idle.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from contracts.bridge import (
    BlenderProfile,
    GltfExport,
    HashScheme,
    Preview,
    SavedScene,
    ToolResult,
)
from contracts.errors import BlendmeshError
from contracts.exports import ExportParams, SceneExported
from contracts.inspection import SceneInspection
from contracts.nodes import NodeCatalog
from contracts.renders import FrameImage, FrameParams
from contracts.scenes import SceneSummary
from contracts.views import AssetImported, AssetParams, ViewParams
from services.executor.adapters.bridge_client import BridgeProcess
from services.runtime.service import metrics

log = logging.getLogger("blendmesh.executor")

RESTART_LIMIT = 5  # new bridges started ...
RESTART_WINDOW = 60.0  # ... within this many seconds, at most
RESTART_PAUSE = 0.5  # seconds between a start that failed and the next

_T = TypeVar("_T")


class BridgeGone(BlendmeshError, RuntimeError):
    """The bridge kept dying, past its restart budget: no Blender is left to run a call."""


class SupervisedBridge:
    """The ``Bridge`` port over a ``BridgeProcess`` that can be replaced.

    A bridge that exits by itself is replaced as soon as it is gone, and one found dead
    before a call is replaced first, so one crash never leaves the executor unable to
    serve the next run.
    """

    def __init__(
        self,
        call_timeout: float,
        nice: int = 0,
        restart_limit: int = RESTART_LIMIT,
        restart_window: float = RESTART_WINDOW,
        role: metrics.BridgeRole = "run",
        idle: float | None = None,
    ) -> None:
        self._call_timeout = call_timeout
        self._role = role  # which Blender its restarts are counted as
        self._nice = nice
        self._proc = BridgeProcess(call_timeout=call_timeout, nice=nice)
        self._generation = 1  # the process serving now; each new one holds a new scene
        self._profile: BlenderProfile | None = None
        self.restarts = 0
        self._limit = restart_limit
        self._window = restart_window
        self._starts: collections.deque[float] = collections.deque()  # when each restart began
        self._lock = asyncio.Lock()  # one restart at a time: the watcher's or a caller's
        self._fresh = False  # started since the last call: as good as a restarted one
        self._watch: asyncio.Task[None] | None = None
        self._closed = False
        self._gone: BridgeGone | None = None
        self._given_up = asyncio.Event()
        self._idle = idle  # seconds unused before it is parked; None: never
        self._parked = False  # stopped on purpose; the next call starts it again
        self._running = asyncio.Event()  # clear while parked: the watcher has none to watch
        self._busy = 0  # calls under way: a bridge is never parked under one
        self._used = 0.0  # loop time the last call ended
        # Called with the file before each load: the run bridge's puts a shot's library
        # revisions beside it (services/executor/domain/library_shelf.py).
        self.before_load: Callable[[str], Awaitable[object]] | None = None
        self._idler: asyncio.Task[None] | None = None
        self._kept: Callable[[], bool] = lambda: False

    @property
    def profile(self) -> BlenderProfile:
        """What the bridge's Blender can do, as the first handshake said: a restart runs the
        same Blender, and a failed restart must not make every plan look unsupported."""
        if self._profile is None:
            raise RuntimeError("the bridge has not been started")
        return self._profile

    @property
    def generation(self) -> int:
        """Which process serves now, counted from 1. A caller holding unsaved work in the
        bridge compares it before and after: a change means the work is gone, even when
        the watcher replaced the process between two calls and the next call succeeds."""
        return self._generation

    @property
    def alive(self) -> bool:
        """Whether its Blender runs now; a dead one is started again at once."""
        return self._proc.alive and not self._parked

    @property
    def parked(self) -> bool:
        """Stopped on purpose after ``idle`` seconds unused; the next call starts it."""
        return self._parked

    def keep_while(self, kept: Callable[[], bool]) -> None:
        """Never park the bridge while ``kept()`` is true: e.g. while a run holds a scene in
        it between calls, which a stop would lose."""
        self._kept = kept

    async def start(self) -> list[dict[str, Any]]:
        """Start the bridge; returns its MCP tool descriptors."""
        init = await self._proc.start()
        self._profile = init.blender_profile
        tools = await self._proc.list_tools()
        self._running.set()
        self._used = asyncio.get_running_loop().time()
        self._watch = asyncio.create_task(self._replace_when_exited(), name="bridge watch")
        if self._idle is not None:
            self._idler = asyncio.create_task(self._park_when_idle(), name="bridge idle")
        return tools

    def start_parked(self, profile: BlenderProfile) -> None:
        """Stand by without a Blender, as if parked: the first call starts one (a pool's
        spare bridge, ADR 0070). ``profile`` is another bridge's of the same Blender, so
        its catalog and capability gate hold before this one ever ran."""
        self._profile = profile
        self._parked = True
        self._used = asyncio.get_running_loop().time()
        self._watch = asyncio.create_task(self._replace_when_exited(), name="bridge watch")
        if self._idle is not None:
            self._idler = asyncio.create_task(self._park_when_idle(), name="bridge idle")

    @property
    def pid(self) -> int | None:
        """Its Blender's process id while one runs; for tests that kill it."""
        return self._proc.pid if self.alive else None

    async def gone(self) -> BaseException:
        """Wait until the bridge is given up (it kept dying past its restart budget) and
        return why."""
        await self._given_up.wait()
        assert self._gone is not None
        return self._gone

    async def restart(self) -> None:
        """Replace the bridge after a call that killed or lost it. One started since that
        call and not used yet (the watcher's) is kept: it is as fresh as another."""
        async with self._lock:
            if self._parked:
                return  # stopped on purpose meanwhile: the next call starts it
            if not (self._fresh and self._proc.alive):
                await self._replace("a call failed")

    async def _replace(self, why: str) -> None:
        """Start a new bridge in place of the current one, again while starts fail, within
        the restart budget; past it, give the bridge up. Called holding the lock."""
        if self._gone is not None:
            raise self._gone
        await self._proc.close()
        while True:
            self._spend(why)
            proc = BridgeProcess(call_timeout=self._call_timeout, nice=self._nice)
            self._proc = proc
            self._generation += 1
            try:
                await proc.start()
            except Exception as exc:  # noqa: BLE001 - e.g. Blender died while starting
                why = f"the last start failed: {exc}"
                log.warning("the Blender bridge did not start (%s); trying again", exc)
                await proc.close()
                await asyncio.sleep(RESTART_PAUSE)
                continue
            self.restarts += 1
            metrics.bridge_restarted(self._role)
            self._fresh = True
            self._parked = False
            self._used = asyncio.get_running_loop().time()  # a new one gets a full idle period
            self._running.set()
            log.warning("restarted the Blender bridge (%d restarts)", self.restarts)
            return

    def _spend(self, why: str) -> None:
        """Count one start against the budget, or give the bridge up when none is left."""
        now = asyncio.get_running_loop().time()
        while self._starts and now - self._starts[0] > self._window:
            self._starts.popleft()
        if len(self._starts) >= self._limit:
            self._gone = BridgeGone(
                f"the Blender bridge kept dying: {len(self._starts)} starts within "
                f"{self._window:g} s did not keep it running ({why}); see the executor's log"
            )
            log.error("%s", self._gone)
            self._given_up.set()
            raise self._gone
        self._starts.append(now)

    async def _replace_when_exited(self) -> None:
        """Watch the bridge: one that exits by itself is replaced at once."""
        while True:
            await self._running.wait()  # a parked bridge exited on purpose
            async with self._lock:  # never a bridge that is being started
                if self._closed or self._gone is not None:
                    return
                proc = self._proc
            code = await proc.exited()
            async with self._lock:
                if self._closed or self._proc is not proc or self._parked:
                    continue  # closed, replaced by a caller meanwhile, or parked
                log.warning("the Blender bridge exited by itself (code %s); starting another", code)
                with contextlib.suppress(BridgeGone):  # gone() says so
                    await self._replace(f"the last one exited with code {code}")

    async def _park_when_idle(self) -> None:
        """Stop the bridge once no call has used it for ``idle`` seconds."""
        assert self._idle is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._running.wait()
            await asyncio.sleep(max(self._used + self._idle - loop.time(), 0.0) + 0.01)
            async with self._lock:  # never one being started or replaced
                if self._closed or self._gone is not None:
                    return
                if self._busy or self._kept():
                    self._used = loop.time()  # in use: its idle period starts after
                if self._parked or loop.time() - self._used < self._idle:
                    continue  # used meanwhile: wait out its new idle period
                self._parked = True  # set first: a caller now waits for the lock
                self._running.clear()
                await self._proc.close()
                log.info("stopped the idle Blender bridge after %g s unused", self._idle)

    async def _wake(self) -> None:
        """Start a parked bridge again: wanted, so neither a restart nor a crash. A start
        that fails falls to the restart budget. Called holding the lock."""
        proc = BridgeProcess(call_timeout=self._call_timeout, nice=self._nice)
        self._proc = proc
        self._generation += 1
        try:
            await proc.start()
        except Exception as exc:  # noqa: BLE001 - e.g. Blender died while starting
            log.warning("the Blender bridge did not start again after idling (%s)", exc)
            await self._replace(f"it did not start after idling: {exc}")
            return
        self._parked = False
        self._used = asyncio.get_running_loop().time()
        self._running.set()
        log.info("started the idle Blender bridge again for a call")

    async def _live(self) -> BridgeProcess:
        if self._gone is not None:
            raise self._gone
        if self._parked or not self._proc.alive:
            async with self._lock:
                if self._parked:
                    await self._wake()
                elif not self._proc.alive:
                    await self._replace("it was found dead before a call")
        self._fresh = False
        return self._proc

    async def _use(self, call: Callable[[BridgeProcess], Awaitable[_T]]) -> _T:
        """One call on a running bridge, started first if parked; counted as use, so an
        idle period begins when the last call ends."""
        proc = await self._live()
        self._busy += 1  # no await since _live: the idler cannot park it in between
        try:
            return await call(proc)
        finally:
            self._busy -= 1
            self._used = asyncio.get_running_loop().time()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> ToolResult:
        return await self._use(lambda p: p.call_tool(name, arguments, mcp_call_id, timeout))

    async def reset(self) -> str:
        return await self._use(lambda p: p.reset())

    async def load(self, path: str) -> str:
        if self.before_load is not None:
            await self.before_load(path)  # a shot's libraries, put beside it (ADR 0060)
        return await self._use(lambda p: p.load(path))

    async def save(self, path: str, compress: bool = False, checked: bool = True) -> SavedScene:
        return await self._use(lambda p: p.save(path, compress=compress, checked=checked))

    async def verify(self) -> str:
        return await self._use(lambda p: p.verify())

    async def summary(self, scene_id: str) -> SceneSummary:
        return await self._use(lambda p: p.summary(scene_id))

    async def fingerprint(self) -> str:
        return await self._use(lambda p: p.fingerprint())

    async def fingerprint_full(self, scheme: HashScheme = "digests") -> str:
        return await self._use(lambda p: p.fingerprint_full(scheme))

    async def render_preview(self, path: str, width: int = 320, height: int = 240) -> Preview:
        return await self._use(lambda p: p.render_preview(path, width, height))

    async def export_gltf(self, path: str, max_bytes: int) -> GltfExport:
        return await self._use(lambda p: p.export_gltf(path, max_bytes))

    async def inspect(self) -> SceneInspection:
        return await self._use(lambda p: p.inspect())

    async def render_view(self, view: ViewParams) -> Preview:
        return await self._use(lambda p: p.render_view(view))

    async def import_asset(self, asset: AssetParams) -> AssetImported:
        return await self._use(lambda p: p.import_asset(asset))

    async def export_scene(self, want: ExportParams) -> SceneExported:
        return await self._use(lambda p: p.export_scene(want))

    async def render_frame(self, want: FrameParams, timeout: float | None = None) -> FrameImage:
        return await self._use(lambda p: p.render_frame(want, timeout))

    async def node_catalog(self) -> NodeCatalog:
        return await self._use(lambda p: p.node_catalog())

    async def close(self) -> None:
        self._closed = True
        for task in (self._watch, self._idler):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._watch = self._idler = None
        await self._proc.close()
