"""An idle mesh keeps no Blender (ADR 0033), on a full mesh (real nats-server, real bpy):
after BLENDMESH_BRIDGE_IDLE seconds without a run both Blender processes (the runs' and
the previews') are stopped, health calls the executor's Blender idle, not down, and the
mesh stays ready; the next run starts Blender again and commits the next revision."""

from __future__ import annotations

import asyncio
import os

import pytest
import pytest_asyncio

from contracts.health import MeshStatus
from services.doors.cli.mesh import Mesh
from services.doors.cli.status import service_rows
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service import health
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.bridges import bridge_pids
from tests.support.meshes import mesh_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]

PREFIX = "bmidle"
SCENE = "idlescene"
IDLE = 2.0  # seconds; a run holds its Blender between calls, and its gaps are far shorter
WAIT = 2.0


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix=PREFIX, user="ana", bridge_idle=IDLE)


mesh = mesh_fixture()


async def _run(bus: Bus, prompt: str) -> None:
    request = build_request(user="ana", scene_id=SCENE, prompt=prompt)
    result = await MeshClient(bus).run(request, timeout=120)
    assert result.status == "completed" and result.scene_hash, result


async def _idle_snapshot(bus: Bus, within: float = 60) -> MeshStatus:
    """The snapshot once the executor says its Blender idles and no bridge process is
    left in this process (the mesh's services run in it)."""
    async with asyncio.timeout(within):
        while True:
            if bridge_pids(os.getpid()):  # seen at once; a snapshot waits WAIT seconds
                await asyncio.sleep(0.1)
                continue
            status = await health.snapshot(bus.nc, bus.js, PREFIX, WAIT)
            executor = next(s for s in status.services if s.role == "executor")
            blender = executor.instances[0].blender if executor.instances else None
            if blender is not None and blender.idle and not bridge_pids(os.getpid()):
                return status
            await asyncio.sleep(0.2)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def idled(mesh: tuple[Mesh, Bus]) -> MeshStatus:
    await _run(mesh[1], "add a cube named Box")
    return await _idle_snapshot(mesh[1])


async def test_health_when_blender_stopped_for_idling_says_idle_and_the_mesh_stays_ready(
    idled: MeshStatus,
) -> None:
    assert idled.ready and idled.reasons == []
    executor = next(s for s in idled.services if s.role == "executor")
    instance = executor.instances[0]
    assert instance.healthy and instance.problems == []
    assert instance.blender is not None and not instance.blender.up
    assert instance.blender.scene is None  # a stopped Blender holds no scene
    assert instance.blender.restarts == 0  # stopped on purpose: no crash, no restart
    [row] = service_rows(executor)
    assert row["healthy"] == "yes" and "idle" in row["detail"] and "DOWN" not in row["detail"]


async def test_run_when_blender_stopped_for_idling_starts_it_and_commits(
    mesh: tuple[Mesh, Bus], idled: MeshStatus
) -> None:
    assert bridge_pids(os.getpid()) == []
    await _run(mesh[1], "add a sphere named Ball")
    status = await health.snapshot(mesh[1].nc, mesh[1].js, PREFIX, WAIT)
    executor = next(s for s in status.services if s.role == "executor")
    blender = executor.instances[0].blender
    assert blender is not None and blender.up and not blender.idle
    # Revision 1, stored, was loaded into the new Blender, and the run wrote revision 2.
    assert (blender.scene, blender.revision) == (SCENE, 2)
    # ... and once unused again, it is stopped again.
    await _idle_snapshot(mesh[1])
