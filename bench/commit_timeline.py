"""When each step of a big scene's one-operation commit starts and ends, run by run.

    .venv/bin/python bench/commit_timeline.py [--runs 3] [--grid 700] [--props 2000]

Builds bench/big_scene.py's scene, imports it into one warm embedded mesh and moves one
prop ``--runs`` times after two warm-up edits. For each run it prints, in milliseconds from
the run's request, every call the executor makes on its ports (the bridge, with the CPU
its Blender spent on the call, the scene
store, the summaries, the exported copy and its trash, the revision's notes; "blocking"
marks a call that blocks the thread it runs on) and every stall of the event loop over 4
ms, so what waits on what can be read off one run. The previews' Blender is left out: it
renders off the run's path.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import big_scene

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.scene_client import SceneDoor
from services.executor.adapters.exports import SceneExports
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.scene_summaries import KvSceneSummaries
from services.executor.adapters.supervisor import SupervisedBridge
from services.executor.adapters.trash import Trash
from services.executor.domain.revision_notes import RevisionNotes
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

MIB = 1 << 20
STALL = 0.004  # a loop stall worth a line
MAX_RUNS = 50
Span = tuple[str, float, float]


class Timeline:
    """Spans since ``start``, recorded by wrapping the adapters' methods in place."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.spans: list[Span] = []
        self._cpu: dict[int, int] = {}  # Blender pid -> its CPU ns when its last call ended

    def start(self) -> None:
        self.started, self.spans = time.perf_counter(), []

    def _mark(self, name: str, began: float) -> None:
        now = time.perf_counter()
        self.spans.append((name, (began - self.started) * 1e3, (now - self.started) * 1e3))

    def wrap_async(self, cls: type, name: str) -> None:
        original = getattr(cls, name)

        @functools.wraps(original)
        async def timed(owner: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(owner, "_nice", 0) > 0:  # the previews' Blender
                return await original(owner, *args, **kwargs)
            began = time.perf_counter()
            try:
                return await original(owner, *args, **kwargs)
            finally:
                self._mark(f"{cls.__name__}.{name}{self._blender_cpu(owner)}", began)

        setattr(cls, name, timed)

    def _blender_cpu(self, owner: Any) -> str:
        """For a bridge call, the CPU its Blender spent since its previous call ended: a
        Blender answers one request at a time and idles between them, so that is the
        CPU of this call, whatever part of its wall time it waited for a core."""
        pid = getattr(owner, "pid", None)
        if not isinstance(owner, SupervisedBridge) or pid is None:
            return ""
        spent = cpu_ns(pid)
        last = self._cpu.get(pid)
        self._cpu[pid] = spent
        return "" if last is None else f" [Blender CPU {(spent - last) / 1e6:.1f}]"

    def wrap_thread(self, cls: type, name: str) -> None:
        original: Callable[..., Any] = getattr(cls, name)

        @functools.wraps(original)
        def timed(owner: Any, *args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(owner, *args, **kwargs)
            finally:
                self._mark(f"{cls.__name__}.{name} (blocking)", began)

        setattr(cls, name, timed)

    async def watch_loop(self) -> None:
        while True:
            began = time.perf_counter()
            await asyncio.sleep(0.001)
            late = time.perf_counter() - began - 0.001
            if late > STALL:
                self._mark(f"event loop stalled {late * 1e3:.1f} ms", began)

    def lines(self) -> list[str]:
        ordered = sorted(self.spans, key=lambda span: span[1])
        return [f"  {a:7.1f} -> {b:7.1f}  ({b - a:6.1f})  {name}" for name, a, b in ordered]


def cpu_ns(pid: int) -> int:
    """Nanoseconds on a CPU of every thread of ``pid`` (the scheduler's own count, exact
    where /proc/PID/stat counts in ticks of 10 ms)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return total


def installed() -> Timeline:
    timeline = Timeline()
    for name in ("fingerprint", "call_tool", "save", "verify", "inspect", "summary"):
        timeline.wrap_async(SupervisedBridge, name)
    for name in ("commit", "put_inspection"):
        timeline.wrap_async(JetStreamSceneStore, name)
    timeline.wrap_async(KvSceneSummaries, "put")
    timeline.wrap_async(RevisionNotes, "write")
    for name in ("stage", "publish"):
        timeline.wrap_thread(SceneExports, name)
    for name in ("discard", "keep"):
        timeline.wrap_thread(Trash, name)
    return timeline


async def timelines(scene: Path, runs: int) -> None:
    data = await asyncio.to_thread(scene.read_bytes)
    timeline = installed()
    with tempfile.TemporaryDirectory(prefix="blendmesh-timeline-") as home:
        settings = Settings(
            home=Path(home), prefix="bench", user="bench", max_upload_bytes=1024 * MIB
        )
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            client = MeshClient(bus)
            door = SceneDoor(bus, settings)
            request = await door.import_request("bench", "big", data, scene.name, pre_approved=True)
            result = await client.run(request)
            assert result.status == "completed", result.message
            for i in range(2):  # warm: the digest cache and the inspection parts are kept
                await big_scene.edit(client, bus, i)
            watching = asyncio.ensure_future(timeline.watch_loop())
            try:
                for i in range(runs):
                    timeline.start()
                    seconds, _ = await big_scene.edit(client, bus, 10 + i)
                    print(f"run {i + 1}: {seconds * 1e3:.0f} ms")
                    print("\n".join(timeline.lines()))
            finally:
                watching.cancel()
            await bus.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--grid", type=int, default=700, help="subdivisions of each grid")
    parser.add_argument("--props", type=int, default=2000, help="small objects")
    args = parser.parse_args()
    if not 1 <= args.runs <= MAX_RUNS:
        parser.error(f"--runs must be 1 to {MAX_RUNS}")
    with tempfile.TemporaryDirectory(prefix="blendmesh-timeline-scene-") as work:
        scene = Path(work) / "big.blend"
        big_scene.build(scene, args.grid, args.props)
        asyncio.run(timelines(scene, args.runs))


if __name__ == "__main__":
    main()
