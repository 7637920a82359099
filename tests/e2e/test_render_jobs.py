"""Render jobs across executor processes (docs/renders.md): a job's frames spread over two
executors, each stored once; one executor SIGKILLed mid-job and the job still completes;
a job cancelled stops rendering. Real nats-server, real executors with real bpy, the
`blendmesh` command as a person runs it."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import pytest_asyncio

from contracts import subjects
from contracts.events import AnyEvent
from contracts.render_events import FrameRendered, RenderCancelRequested, RenderEnded
from contracts.render_fold import fold_job
from services.doors.cli.mesh import Mesh
from services.runtime.nats.access import ADMIN, RENDER_WORKERS, login_for
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import BLENDMESH, command_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(400),
]

PREFIX = "bmrender"
USER = "renderer"
ACK_WAIT = 4  # seconds: a dead executor's frame comes back this soon
TINY = ["--size", "32x32", "--samples", "1", "--engine", "cycles"]


class Farm:
    """A mesh without executors in this process, executor processes beside it."""

    def __init__(self, mesh: Mesh, bus: Bus, home: Path) -> None:
        self.mesh = mesh
        self.bus = bus
        self.home = home
        self.executors: list[subprocess.Popen[bytes]] = []

    def env(self) -> dict[str, str]:
        return command_env(
            {
                "NATS_URL": self.mesh.url,
                "BLENDMESH_NATS_CREDENTIALS": str(self.mesh.settings.credentials_path),
                "BLENDMESH_PREFIX": PREFIX,
                "BLENDMESH_USER": USER,
                "BLENDMESH_PREVIEWS": "0",
                "BLENDMESH_ACK_WAIT": str(ACK_WAIT),
            }
        )

    def start_executor(self, name: str) -> subprocess.Popen[bytes]:
        env = self.env() | {"BLENDMESH_HOME": str(self.home / name)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.executor"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its Blenders die with it when it is killed
        )
        self.executors.append(proc)
        return proc

    def blendmesh(
        self, *args: str, timeout: float = 300, user: str = USER
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BLENDMESH, "--home", str(self.home / "client"), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env() | {"BLENDMESH_USER": user},
            stdin=subprocess.DEVNULL,
        )

    async def workers_waiting(self, count: int) -> None:
        """Until ``count`` executors pull frames from the render queue."""
        admin = await Bus.open(
            self.mesh.url, PREFIX, "probe", login_for(self.mesh.settings.credentials_path, ADMIN)
        )
        try:
            for _ in range(900):
                try:
                    info = await admin.js.consumer_info(
                        subjects.render_queue_name(PREFIX), RENDER_WORKERS
                    )
                    if info.num_waiting >= count:
                        return
                except Exception:  # noqa: BLE001 - not created yet
                    pass
                await asyncio.sleep(0.2)
            raise AssertionError(f"fewer than {count} executors take frames")
        finally:
            await admin.close()

    async def events(self, job_id: str) -> list[AnyEvent]:
        return await read_run(self.bus.js, PREFIX, job_id)

    async def frames_done(self, job_id: str, at_least: int, timeout: float = 240) -> None:
        for _ in range(int(timeout * 5)):
            done = {e.frame for e in await self.events(job_id) if isinstance(e, FrameRendered)}
            if len(done) >= at_least:
                return
            await asyncio.sleep(0.2)
        raise AssertionError(f"job {job_id} did not reach {at_least} frames")

    async def ended(self, job_id: str, timeout: float = 240) -> RenderEnded:
        for _ in range(int(timeout * 5)):
            found = [e for e in await self.events(job_id) if isinstance(e, RenderEnded)]
            if found:
                return found[0]
            await asyncio.sleep(0.2)
        raise AssertionError(f"job {job_id} did not end")

    def stop(self) -> None:
        for proc in self.executors:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        for proc in self.executors:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@contextmanager
def killed_on_exit(farm: Farm) -> Iterator[Farm]:
    try:
        yield farm
    finally:
        farm.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def farm(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Farm]:
    home = tmp_path_factory.mktemp("farm")
    settings = Settings(home=home / "mesh", prefix=PREFIX, user=USER, previews=False)
    mesh = Mesh(settings, services=("planner", "policy", "guardians", "audit"))
    await mesh.start()
    bus = await Bus.open(mesh.url, PREFIX, "test-admin", mesh.login(ADMIN))
    try:
        with killed_on_exit(Farm(mesh, bus, home)) as running:
            running.start_executor("a")
            running.start_executor("b")
            await running.workers_waiting(2)
            made = await asyncio.to_thread(
                running.blendmesh, "run", "--json", "--scene", "shot", "add a cube named Box"
            )
            assert json.loads(made.stdout)["status"] == "completed", made.stderr
            yield running
    finally:
        await bus.close()
        await mesh.stop()


def job_id_of(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def rendered_once(events: list[AnyEvent]) -> collections.Counter[int]:
    counts = collections.Counter(e.frame for e in events if isinstance(e, FrameRendered))
    assert all(n == 1 for n in counts.values()), counts
    return counts


async def test_render_when_two_executors_take_frames_stores_every_frame_once(farm: Farm) -> None:
    done = await asyncio.to_thread(
        farm.blendmesh, "render", "shot", "--frames", "1-24", *TINY, "--json"
    )
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert job["status"] == "completed"
    assert [f["frame"] for f in job["frames"]] == list(range(1, 25))
    events = await farm.events(job["job_id"])
    assert sorted(rendered_once(events)) == list(range(1, 25))
    by = {e.executor for e in events if isinstance(e, FrameRendered)}
    assert len(by) == 2, f"one executor rendered every frame: {by}"
    ends = [e for e in events if isinstance(e, RenderEnded)]
    assert [(e.status, e.frames) for e in ends] == [("completed", 24)]
    # A frame downloads as the PNG its hash names.
    out = farm.home / "frame7.png"
    got = await asyncio.to_thread(
        farm.blendmesh, "render", "frame", job["job_id"], "7", "-o", str(out)
    )
    assert got.returncode == 0, got.stderr
    import hashlib

    seventh = next(f for f in job["frames"] if f["frame"] == 7)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == seventh["sha256"]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["shot", "--frames", "1-999999999"], "past Blender's last frame"),
        (["shot", "--frames", "-3"], "0 or more"),
        (["shot", "--frames", "9-2"], "backwards"),
        (["shot", "--size", "100000x100000"], "width 100000"),
        (["shot", "--samples", "0"], "samples 0"),
        (["shot", "--engine", "octane"], "engine 'octane' is unknown"),
        (["shot", "--revision", "99"], "not 99"),
        (["../../etc", "--frames", "1"], "scene id"),
        (["show", "../../etc/passwd"], "no render job"),
        (["frame", "render-x", "nope"], "no render job"),
    ],
)
async def test_render_cli_when_input_is_hostile_exits_2_naming_the_limit(
    farm: Farm, args: list[str], said: str
) -> None:
    refused = await asyncio.to_thread(farm.blendmesh, "render", *args)
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert said in refused.stderr


async def test_render_cli_when_another_user_names_the_job_or_scene_it_is_unknown(
    farm: Farm,
) -> None:
    job_id = job_id_of(
        await asyncio.to_thread(
            farm.blendmesh, "render", "shot", "--frames", "1", *TINY, "--no-wait"
        )
    )
    for args in (["show", job_id], ["cancel", job_id], ["frame", job_id, "1"], ["shot"]):
        refused = await asyncio.to_thread(farm.blendmesh, "render", *args, user="intruder")
        assert refused.returncode == 2, (args, refused.stderr)
        assert "no render job" in refused.stderr or "no scene shot" in refused.stderr
    await farm.ended(job_id)


async def test_render_when_cancelled_renders_no_more_frames(farm: Farm) -> None:
    job_id = job_id_of(
        await asyncio.to_thread(
            farm.blendmesh, "render", "shot", "--frames", "1-400", *TINY, "--no-wait"
        )
    )
    await farm.frames_done(job_id, 2)
    cancelled = await asyncio.to_thread(farm.blendmesh, "render", "cancel", job_id, "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["status"] == "cancelled"
    end = await farm.ended(job_id)
    assert end.status == "cancelled"
    await asyncio.sleep(ACK_WAIT)  # what was in hand is stored by now, and nothing more
    events = await farm.events(job_id)
    rendered_once(events)
    cancel_at = next(i for i, e in enumerate(events) if isinstance(e, RenderCancelRequested))
    after = [e for e in events[cancel_at:] if isinstance(e, FrameRendered)]
    assert len(after) <= 2, f"{len(after)} frames rendered after the cancel"
    job = fold_job(events)
    assert job is not None and job.status == "cancelled" and len(job.frames) < 100
    again = await asyncio.to_thread(farm.blendmesh, "render", "cancel", job_id)
    assert again.returncode != 0 and "cancelled already" in again.stderr


async def test_render_when_an_executor_is_killed_mid_job_completes_every_frame_once(
    farm: Farm,
) -> None:
    job_id = job_id_of(
        await asyncio.to_thread(
            farm.blendmesh, "render", "shot", "--frames", "1-24", *TINY, "--no-wait"
        )
    )
    await farm.frames_done(job_id, 4)
    victim = farm.executors[0]
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    end = await farm.ended(job_id)
    assert end.status == "completed", end
    events = await farm.events(job_id)
    assert sorted(rendered_once(events)) == list(range(1, 25))
    job = fold_job(events)
    assert job is not None and job.status == "completed" and len(job.frames) == 24
