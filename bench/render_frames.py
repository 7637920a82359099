"""Frames per second of one render job with one executor, then two, from one run.

    .venv/bin/python bench/render_frames.py [--frames 32] [--size 160x120] [--samples 64]

The mesh runs every other service in this process; each executor is a process of its own
(``python -m services.executor``, previews off), as the Procfile deploys them. A scene
with a cube is made once. Each measurement first renders a small job until every
executor has rendered a frame (its Blender started and the revision loaded), then times
one job of ``--frames`` frames from its request to its ``render_ended``
(docs/renders.md). Prints frames per second for one and two executors and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts import subjects
from contracts.render_events import FrameRendered, RenderEnded
from contracts.renders import parse_size, spec_of
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.renders import RenderQuota, request_render
from services.executor.client import SceneFiles
from services.runtime.nats.access import ADMIN, CLIENT, RENDER_WORKERS
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

PREFIX = "benchrender"
USER = "bench"
BLENDMESH = str(Path(sys.executable).parent / "blendmesh")
READY_WITHIN = 180.0  # seconds for an executor process to bind the render queue
JOB_WITHIN = 1800.0  # seconds a measured job may take


def executor(mesh: Mesh, home: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
    env.update(
        {
            "NATS_URL": mesh.url,
            "BLENDMESH_NATS_CREDENTIALS": str(mesh.settings.credentials_path),
            "BLENDMESH_PREFIX": PREFIX,
            "BLENDMESH_HOME": str(home),
            "BLENDMESH_PREVIEWS": "0",
        }
    )
    return subprocess.Popen(
        [sys.executable, "-m", "services.executor"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


async def takers(admin: Bus, count: int) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        try:
            info = await admin.js.consumer_info(subjects.render_queue_name(PREFIX), RENDER_WORKERS)
            if info.num_waiting >= count:
                return
        except Exception:  # noqa: BLE001 - not created yet
            pass
        await asyncio.sleep(0.2)
    raise SystemExit(f"fewer than {count} executors took frames within {READY_WITHIN:.0f} s")


async def job(client: MeshClient, frames: int, size: str, samples: int) -> tuple[float, set[str]]:
    """Seconds from request to end of one job, and the executors that rendered it."""
    width, height = parse_size(size)
    spec = spec_of(1, frames, "cycles", samples, width, height)
    files = SceneFiles(client.bus.js, PREFIX)
    started = time.perf_counter()
    asked = await request_render(client, files, RenderQuota(), USER, "bench", None, spec)
    deadline = time.monotonic() + JOB_WITHIN
    while time.monotonic() < deadline:
        events = await read_run(client.bus.js, PREFIX, asked.run_id)
        end = next((e for e in events if isinstance(e, RenderEnded)), None)
        if end is not None:
            if end.status != "completed":
                raise SystemExit(f"the job ended {end.status}: {end.message}")
            seconds = time.perf_counter() - started
            return seconds, {e.executor for e in events if isinstance(e, FrameRendered)}
        await asyncio.sleep(0.05)
    raise SystemExit(f"the job did not end within {JOB_WITHIN:.0f} s")


async def warmed(client: MeshClient, count: int, size: str) -> None:
    """Until every one of ``count`` executors has rendered a frame of the scene."""
    seen: set[str] = set()
    for _ in range(20):
        _, by = await job(client, 2 * count, size, 1)
        seen |= by
        if len(seen) >= count:
            return
    raise SystemExit(f"only {len(seen)} of {count} executors rendered a frame")


async def main(frames: int, size: str, samples: int) -> None:
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as tmp:
        home = Path(tmp)
        settings = Settings(home=home / "mesh", prefix=PREFIX, user=USER, previews=False)
        mesh = Mesh(settings, services=("planner", "policy", "guardians", "audit"))
        await mesh.start()
        procs: list[subprocess.Popen[bytes]] = []
        admin = await Bus.open(mesh.url, PREFIX, "bench-admin", mesh.login(ADMIN))
        bus = await Bus.open(mesh.url, PREFIX, "bench-client", mesh.login(CLIENT))
        try:
            procs.append(executor(mesh, home / "a"))
            await takers(admin, 1)
            env = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
            env.update({"NATS_URL": mesh.url, "BLENDMESH_PREFIX": PREFIX, "BLENDMESH_USER": USER,
                        "BLENDMESH_NATS_CREDENTIALS": str(settings.credentials_path)})  # fmt: skip
            # In a thread: the mesh's services share this event loop.
            made = await asyncio.to_thread(
                subprocess.run,
                [BLENDMESH, "--home", str(home / "client"), "run", "--scene", "bench",
                 "add a cube named Box"],
                env=env, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            if made.returncode != 0:
                raise SystemExit(f"the scene was not made: {made.stderr}")
            client = MeshClient(bus)
            rates: dict[int, float] = {}
            for count in (1, 2):
                if count == 2:
                    procs.append(executor(mesh, home / "b"))
                    await takers(admin, 2)
                await warmed(client, count, size)
                seconds, by = await job(client, frames, size, samples)
                rates[count] = frames / seconds
                print(
                    f"{count} executor{'s' if count > 1 else ''}: {frames} frames of {size} at "
                    f"{samples} samples in {seconds:.2f} s = {rates[count]:.2f} frames/s "
                    f"({len(by)} executors rendered)",
                    flush=True,
                )
            print(f"two executors / one: {rates[2] / rates[1]:.2f}x", flush=True)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGINT)
            for proc in procs:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            await bus.close()
            await admin.close()
            await mesh.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Frames Cycles takes about a second over: at 64x64 and 4 samples a frame renders in
    # tens of milliseconds, and the figure measures storing and logging it instead.
    parser.add_argument("--frames", type=int, default=32)
    parser.add_argument("--size", default="160x120")
    parser.add_argument("--samples", type=int, default=64)
    args = parser.parse_args()
    asyncio.run(main(args.frames, args.size, args.samples))
