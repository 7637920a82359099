"""Previews off the critical path: a worker that renders committed revisions on its own
Blender bridge, while the executor's bridge takes the next run.

A committed run hands the worker its scene and revision (``submit``, which only links the
revision's file and returns). The worker keeps one pending revision per scene, so a scene
committed five times while a render ran is rendered once more, at its newest revision;
an older revision never replaces a newer picture. A render that fails is logged and
dropped: a preview is a convenience, never part of a run's outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from services.executor.domain.library_shelf import LibraryShelf
from services.executor.domain.ports import Discard, Exports, PreviewBridge, Previews, unlink_now

log = logging.getLogger("blendmesh.executor")

# Scenes waiting for a picture at once; beyond it the oldest waiting scene is dropped
# (its next commit asks again), so a burst of scenes cannot grow the queue without end.
MAX_PENDING = 256
# Large enough to fill the console's preview; workbench renders it in well under a second.
PREVIEW_SIZE = (960, 720)
# A revision's glTF for the console's 3D view; a larger scene gets its picture only.
MAX_MODEL_BYTES = 16 * 1024 * 1024


@dataclass
class _Pending:
    revision: int
    blend: Path  # a link to the revision's file, owned by the worker until rendered
    project: str | None = None  # whose libraries the revision may link (ADR 0060)


@dataclass
class PreviewWorker:
    """Renders the newest committed revision of each scene, one scene at a time."""

    open_bridge: Callable[[], Awaitable[PreviewBridge]]  # the worker's own, started once
    # (it stops itself when idle and starts again at the next call)
    files: Exports  # exports ``<id>.png`` beside the scene's .blend
    previews: Previews | None  # the object store the gateway reads
    work_dir: Path
    max_pending: int = MAX_PENDING
    # Deletes a rendered revision's link: the last one of a big scene's file took 50-90 ms
    # to delete, on the event loop (adapters/trash.py).
    discard: Discard = unlink_now
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _rendered: dict[str, int] = field(default_factory=dict)  # scene -> revision pictured
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _idle: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    _bridge: PreviewBridge | None = None
    _rendering: bool = False
    # Puts a shot's library revisions beside the file the preview bridge loads.
    shelf: LibraryShelf | None = None

    def submit(self, scene_id: str, revision: int, blend: Path, project: str | None = None) -> None:
        """Ask for a picture of ``revision`` of ``scene_id`` whose file is ``blend``, a
        scene of ``project``; returns at once. The file is linked, so a later commit may
        delete it."""
        if self._rendered.get(scene_id, -1) >= revision:
            return
        waiting = self._pending.get(scene_id)
        if waiting is not None and waiting.revision >= revision:
            return
        self.work_dir.mkdir(parents=True, exist_ok=True)
        link = self.work_dir / f"{scene_id}-{revision:08d}.blend"
        self.discard(link)
        try:
            os.link(blend, link)
        except OSError as exc:  # e.g. gone already: a newer commit replaced it
            log.warning("no preview for scene %s revision %d: %s", scene_id, revision, exc)
            return
        self._drop(self._pending.pop(scene_id, None))
        if len(self._pending) >= self.max_pending:
            oldest = next(iter(self._pending))
            self._drop(self._pending.pop(oldest))
            log.warning("preview of scene %s dropped: %d scenes wait", oldest, self.max_pending)
        self._pending[scene_id] = _Pending(revision, link, project)
        self._idle.clear()
        self._wake.set()
        self.start()

    def start(self) -> None:
        """Start the worker and its bridge in the background; ``submit`` does it, so no
        Blender is kept for pictures until one is asked for (ADR 0033)."""
        if self._task is None:
            self._task = asyncio.create_task(self._work(), name="preview worker")

    @property
    def rendering(self) -> bool:
        """A render is under way: its revision is loaded in the bridge between calls."""
        return self._rendering

    async def idle(self) -> None:
        """Wait until every submitted revision is rendered (or dropped)."""
        if self._pending or (self._task is not None and not self._idle.is_set()):
            await self._idle.wait()

    async def close(self, grace: float = 5.0) -> None:
        """Stop. Waiting scenes are dropped; a render under way gets ``grace`` seconds to
        end (cut short, Blender's late answer would only be noise in the log)."""
        for waiting in self._pending.values():
            self._drop(waiting)
        self._pending.clear()
        if self._task is None:
            return
        if self._rendering or not self._idle.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), grace)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _work(self) -> None:
        self._rendering = True  # starting Blender: close lets it answer first
        try:
            await self._open()
        except Exception as exc:  # noqa: BLE001 - tried again at the first render
            log.warning("the preview bridge did not start: %s", exc)
        finally:
            self._rendering = False
        while True:
            if not self._pending:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            scene_id = next(iter(self._pending))
            waiting = self._pending.pop(scene_id)
            self._rendering = True
            try:
                await self._render(scene_id, waiting)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a picture never fails anything
                log.warning("no preview for scene %s: %s", scene_id, exc)
            finally:
                self._rendering = False
                self._drop(waiting)

    async def _open(self) -> PreviewBridge:
        if self._bridge is None:
            self._bridge = await self.open_bridge()
        return self._bridge

    async def _render(self, scene_id: str, waiting: _Pending) -> None:
        bridge = await self._open()
        png_path = self.work_dir / f"{scene_id}.png"
        if self.shelf is not None:
            self.shelf.project = waiting.project
        try:
            await bridge.load(str(waiting.blend))
            await bridge.render_preview(str(png_path), *PREVIEW_SIZE)
        except TimeoutError:
            await bridge.restart()  # hung: the next scene gets a fresh one (a dead one is
            raise  # replaced by the bridge's supervisor on its next call)
        png = await asyncio.to_thread(png_path.read_bytes)
        if self.previews is not None:  # even if late for the head: it pictures its revision
            await self.previews.put_revision(scene_id, waiting.revision, png)
        if self._rendered.get(scene_id, -1) < waiting.revision:
            await asyncio.to_thread(self.files.export_preview, png, scene_id)
            if self.previews is not None:
                await self.previews.put(scene_id, png)
            self._rendered[scene_id] = waiting.revision
            while len(self._rendered) > self.max_pending:  # forgetting only costs a re-render
                del self._rendered[next(iter(self._rendered))]
        # The 3D model after the pictures, which a waiting reader asks for first; the
        # revision is still the one loaded.
        glb = await self._export(bridge, scene_id, waiting.revision)
        if glb is not None and self.previews is not None:
            await self.previews.put_model(scene_id, waiting.revision, glb)

    async def _export(self, bridge: PreviewBridge, scene_id: str, revision: int) -> bytes | None:
        """The loaded revision as GLB; None (logged) when Blender cannot, hangs (then it is
        restarted) or the file is too large: the pictures are kept all the same."""
        glb_path = self.work_dir / f"{scene_id}.glb"
        try:
            await bridge.export_gltf(str(glb_path), MAX_MODEL_BYTES)
            return await asyncio.to_thread(glb_path.read_bytes)
        except Exception as exc:  # noqa: BLE001 - a 3D view never fails anything
            if isinstance(exc, TimeoutError):
                await bridge.restart()
            log.warning("no glTF for scene %s revision %d: %s", scene_id, revision, exc)
            return None
        finally:
            glb_path.unlink(missing_ok=True)

    def _drop(self, waiting: _Pending | None) -> None:
        if waiting is not None:
            self.discard(waiting.blend)
