"""A disk that fills under a running mesh: a request hears at once that there is no room,
freeing space brings the mesh back, and nothing it acknowledged is lost (real tmpfs, real
nats-server, real bpy).

The mesh's home is a small tmpfs of its own, filled by a plain file while the mesh runs,
as a log or a download fills a real disk. Before ``store_guard``, nats-server failed the
next write with "no space left on device" and then answered no write at all: runs waited
out their timeout, and freeing space changed nothing until the mesh was restarted by hand.
Mounting needs root (CAP_SYS_ADMIN); elsewhere the test is skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from contracts import inspection
from contracts.queries import RunDetail
from services.audit import client as audit
from services.doors.cli.common import EXIT_MESH, watch
from services.doors.cli.main import main
from services.doors.cli.mesh import Mesh
from services.doors.cli.screen import Piped
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.client import SceneFiles
from services.runtime.nats.retry import poll
from services.runtime.server.store_guard import REFUSING
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import client_mesh

DISK = "48m"  # room for the mesh's store (8 MiB), its scenes and a few runs
NOTICE = 10.0  # seconds the mesh may take to see the disk full, or free again
STALL_TOLD = 30.0  # seconds until a stopped run's follower says why (it asks after 3 s)
FULL_FOR = 12.0  # seconds the disk stays full mid-run
CAUGHT_UP = 60.0  # seconds the audit views may take to apply the run once there is room
CHUNK = 1024 * 1024


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of ``DISK`` mounted for this test alone, unmounted after it."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK},mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        # Lazily: a process the mesh left behind must not keep the mount for ever.
        subprocess.run(["umount", "--lazy", str(mount)], check=False)


@pytest_asyncio.fixture
async def mesh(disk: Path) -> AsyncIterator[tuple[Mesh, Bus]]:
    """The whole mesh with its home on ``disk``, watched as ``blendmesh up`` watches it."""
    settings = Settings(home=disk / "home", prefix="bmdisk", user="ana", previews=False)
    async with client_mesh(settings, "test-disk") as running:
        watching = asyncio.ensure_future(running[0].wait())
        try:
            yield running
        finally:
            ended = watching.result() if watching.done() else None
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
        assert ended is None, f"the mesh stopped: {ended}"


def plan(tag: str, name: str) -> dict[str, Any]:
    create = {"primitive": "cube", "name": name, "location": [0, 0, 0]}
    return {
        "request_id": f"req-{tag}",
        "operations": [
            {
                "operation_id": "c1",
                "tool_name": "object.create",
                "args": create,
                "depends_on": [],
                "safety_level": "safe_write",
            }
        ],
    }


async def run(bus: Bus, tag: str, name: str) -> Any:
    request = build_request(user="ana", scene_id="kept", plan=plan(tag, name), planner="plan")
    return await MeshClient(bus).run(request, timeout=60)


def fill(path: Path) -> int:
    """Write ``path`` until the disk says it is full; the bytes written."""
    written = 0
    with path.open("wb", buffering=0) as out:
        for size in (CHUNK, 4096):  # then the last pages
            while True:
                try:
                    written += out.write(b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    return written


def cli(home: Path, plan_file: Path) -> int:
    return main(["--home", str(home), "run", "--plan", str(plan_file), "--timeout", "60"])


async def guarded(mesh: Mesh, refusing: bool) -> float:
    """Seconds until the mesh's guard says its store refuses writes (or takes them)."""
    started = time.monotonic()

    async def look() -> bool:
        return mesh.guard is not None and mesh.guard.refusing

    seen = await poll(look, lambda now: now is refusing, NOTICE, pause=0.05)
    assert seen is refusing, f"the store was not {'refusing' if refusing else 'writable'}"
    return time.monotonic() - started


async def test_disk_when_filled_refuses_runs_at_once_and_freed_runs_them_losing_nothing(
    mesh: tuple[Mesh, Bus],
    disk: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    running, bus = mesh
    before = [await run(bus, f"before-{n}", f"Kept{n}") for n in range(2)]
    assert [r.status for r in before] == ["completed", "completed"], before

    filler = disk / "filler"
    assert await asyncio.to_thread(fill, filler) > 0
    noticed = await guarded(running, refusing=True)
    assert running.guard is not None and running.guard.limits == REFUSING

    plan_file = tmp_path / "plan.json"  # beside the full disk, as a person's file would be
    plan_file.write_text(json.dumps(plan("when-full", "Lost")))
    monkeypatch.setenv("NATS_URL", running.url)
    monkeypatch.setenv("BLENDMESH_PREFIX", running.settings.prefix)
    monkeypatch.setenv("BLENDMESH_USER", "ana")
    started = time.monotonic()
    code = await asyncio.to_thread(cli, running.settings.home, plan_file)
    refused_in = time.monotonic() - started
    said = capsys.readouterr().err
    assert code == EXIT_MESH, said
    assert "Traceback" not in said and "JetStream's store is full" in said, said
    assert refused_in < 5, refused_in

    await asyncio.to_thread(os.unlink, filler)  # space freed
    back_in = await guarded(running, refusing=False)
    started = time.monotonic()
    after = await run(bus, "after", "Later")
    ran_in = time.monotonic() - started
    assert after.status == "completed", after

    client = MeshClient(bus)
    for result in before:  # acknowledged before the disk filled, and still there
        kept = await client.result(result.run_id)
        assert kept is not None and kept.status == "completed", kept
    found = await SceneFiles(bus.js, bus.prefix).revision_inspection("kept")
    assert found is not None and found[0] == 3, found  # the refused request made none
    assert {o.name for o in inspection.decode(found[1]).objects} == {"Kept0", "Kept1", "Later"}
    print(
        f"full noticed in {noticed:.2f} s, run refused in {refused_in:.2f} s, "
        f"room noticed in {back_in:.2f} s, next run in {ran_in:.2f} s"
    )


async def audited(bus: Bus, run_id: str) -> RunDetail | None:
    """The run's audit views once they have caught up with the log; None until then."""
    try:
        return await audit.query_run(bus.nc, bus.prefix, run_id)
    except audit.AuditError as exc:
        if "behind the event log" not in str(exc):
            raise
        return None


def creates(tag: str, count: int) -> dict[str, Any]:
    """A plan of ``count`` cubes named ``<tag><n>``: long enough to be under way when the
    disk fills."""
    return {
        "request_id": f"req-{tag}",
        "operations": [
            {
                "operation_id": f"c{n}",
                "tool_name": "object.create",
                "args": {"primitive": "cube", "name": f"{tag}{n}", "location": [n, 0, 0]},
                "depends_on": [],
                "safety_level": "safe_write",
            }
            for n in range(count)
        ],
    }


async def test_disk_when_filled_mid_run_resumes_the_run_once_freed_applying_each_operation_once(
    mesh: tuple[Mesh, Bus], disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The disk fills while a run is under way: the run stops where its events could no
    longer be stored, its follower is told why, and it goes on once space is freed, each
    operation applied once."""
    running, bus = mesh
    count = 480  # 300 stopped at 246 in here: its events go out in batches, the run is quick
    request = build_request(
        user="ana", scene_id="busy", plan=creates("Cube", count), planner="plan"
    )
    # Followed as `blendmesh run` follows it: what it tells the person goes to stderr.
    followed = MeshClient(bus, watch(bus, Piped(stderr=True)))
    following = asyncio.ensure_future(followed.run(request, timeout=120))
    client = MeshClient(bus)

    async def under_way() -> int:
        view = await client.view(request.run_id)
        return 0 if view is None else len(view.result.receipts)

    started = await poll(under_way, lambda done: done > 0, NOTICE, pause=0.02)
    assert started < count, "the run ended before the disk could fill"
    filler = disk / "filler"
    await asyncio.to_thread(fill, filler)
    await guarded(running, refusing=True)
    await asyncio.sleep(1)
    stopped_at = await under_way()
    assert not following.done() and stopped_at < count, stopped_at
    said = ""

    async def told() -> str:
        nonlocal said
        said += capsys.readouterr().err
        return said

    full_since = time.monotonic()
    await poll(told, lambda text: "disk is full" in text, STALL_TOLD, pause=0.2)
    told_in = time.monotonic() - full_since
    assert f"run {request.run_id} waits after run.op_" in said, said
    assert "the executor says its writes are refused" in said, said
    assert "Free disk space where the mesh keeps its home" in said, said
    # Full for longer than five deliveries' backoff (0.25 + 0.5 + 1 + 2 s): a service that
    # spent a delivery on each try would have dead-lettered what only waits for room.
    await asyncio.sleep(max(0.0, FULL_FOR - (time.monotonic() - full_since)))
    await asyncio.to_thread(os.unlink, filler)
    await guarded(running, refusing=False)

    result = await following
    assert result.status == "completed", result.message
    assert len(result.receipts) == count
    found = await SceneFiles(bus.js, bus.prefix).revision_inspection("busy")
    assert found is not None
    names = sorted(o.name for o in inspection.decode(found[1]).objects)
    assert names == sorted(f"Cube{n}" for n in range(count))  # none twice (no "Cube7.001")
    # The audit's database shares the disk: it waited for room too, and lost nothing.
    detail = await poll(lambda: audited(bus, request.run_id), lambda d: d is not None, CAUGHT_UP)
    assert detail is not None, f"the audit views did not catch up within {CAUGHT_UP:g} s"
    assert len(detail.actions) == count and {a.state for a in detail.actions} == {"completed"}
    print(
        f"stopped at {stopped_at} of {count} operations, told why in {told_in:.1f} s; "
        "all applied once after freeing"
    )
