"""The embedded mesh with its audit projection in a child process (BLENDMESH_AUDIT_APART,
ADR 0070): started and stopped with the mesh, answering as the in-process one does, and
a child that cannot start or dies is named, as a service task would be."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from services.audit.client import query_run
from services.doors.cli.mesh import Mesh
from services.doors.cli.mesh_apart import ChildService, child_env
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service.host import Bus, ServiceFailed
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.timeout(240)

PREFIX = "bmapart"


def settings(tmp_path: Path, **changes: object) -> Settings:
    return Settings(
        home=tmp_path / "home", prefix=PREFIX, user="ana", previews=False, audit_apart=True
    ).with_(**changes)


def children(mesh: Mesh) -> list[ChildService]:
    return [s for s, _ in mesh._running if isinstance(s, ChildService)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_mesh_when_audit_apart_runs_it_in_a_child_that_answers_and_stops_with_it(
    tmp_path: Path,
) -> None:
    mesh = Mesh(settings(tmp_path))
    await mesh.start()
    try:
        [audit] = children(mesh)
        assert audit.name == "audit" and audit.proc.pid != os.getpid()
        bus = await Bus.open(mesh.url, PREFIX, "test", mesh.login("client"))
        try:
            request = build_request(user="ana", scene_id="s", prompt="add a cube named Box")
            result = await MeshClient(bus).run(request, timeout=120)
            assert result.status == "completed", result.message
            detail = None
            for _ in range(100):  # the child projects the run a moment after it ends
                detail = await query_run(bus.nc, PREFIX, result.run_id)
                if detail.run.state == "completed":
                    break
                await asyncio.sleep(0.1)
            assert detail is not None and detail.run.state == "completed"
        finally:
            await bus.close()
        pid = audit.proc.pid
    finally:
        await mesh.stop()
    assert not alive(pid)  # stopped with the mesh, and reaped


async def test_mesh_when_the_audit_child_dies_wait_names_it(tmp_path: Path) -> None:
    async with Mesh(settings(tmp_path)) as mesh:
        [audit] = children(mesh)
        os.kill(audit.proc.pid, signal.SIGKILL)
        said = await asyncio.wait_for(mesh.wait(), 30)
    assert said.startswith("audit died: its process exited with code -9"), said


async def test_mesh_when_the_audit_child_cannot_start_names_it_and_its_log(
    tmp_path: Path,
) -> None:
    # A setting the child refuses: it exits before it ever answers.
    broken = settings(tmp_path, env={"BLENDMESH_PLANNER": "no-such-planner"})
    mesh = Mesh(broken, services=("audit",))
    with pytest.raises(ServiceFailed) as failed:
        await mesh.start()
    said = str(failed.value)
    assert said.startswith("audit could not start: it exited with code 1"), said
    assert "no-such-planner" in said and "audit.log" in said
    assert not (tmp_path / "home" / "mesh.json").exists()  # the mesh let go of its home


def test_child_env_when_the_mesh_has_a_metrics_port_and_nats_url_takes_neither() -> None:
    base = {
        "NATS_URL": "nats://elsewhere:4222",
        "BLENDMESH_METRICS_PORT": "9100",
        "BLENDMESH_NATS_CREDENTIALS": "/somewhere/else.json",
        "HOME": "/home/ana",
    }
    s = Settings(home=Path("/srv/mesh"), prefix="p", ack_wait=7.5, max_deliver=3)
    env = child_env(s, "nats://127.0.0.1:5000", base)
    assert env["NATS_URL"] == "nats://127.0.0.1:5000"
    assert "BLENDMESH_METRICS_PORT" not in env
    assert env["BLENDMESH_NATS_CREDENTIALS"] == str(s.credentials_path)
    assert env["BLENDMESH_ACK_WAIT"] == "7.5" and env["BLENDMESH_MAX_DELIVER"] == "3"
    assert Settings.from_env(env).ack_wait == 7.5  # what the child reads back
    assert env["HOME"] == "/home/ana"
