"""The ``flows`` fixture: each test of this folder runs on the in-memory bus (fast) and
on the real mesh (marked integration, so the fast subset leaves it out).

The real mesh is started once per module, on the first test that asks for it, and lives
on the module's event loop: the modules here mark their tests
``pytest.mark.asyncio(loop_scope="module")``, and give each test its own scene names
and request ids, since the runs of a module share its log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from services.doors.cli.mesh import Mesh
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.flow_buses import APPROVER, USER, Flows, MemoryFlows, MeshFlows
from tests.support.memory_mesh import MemoryMesh, memory_mesh
from tests.support.meshes import client_mesh
from tests.support.signing import register


@pytest_asyncio.fixture(loop_scope="module")
async def memory(tmp_path: Path) -> AsyncIterator[MemoryMesh]:
    built = await memory_mesh(tmp_path, approvers=frozenset({APPROVER}))
    try:
        yield built
    finally:
        await built.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def nats_mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Mesh, Bus]]:
    home = tmp_path_factory.mktemp("home")
    register(home, APPROVER, approver=True)  # the policy asks who may approve ana's runs
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU (test_run_flow.py checks the preview).
    settings = Settings(home=home, prefix="bmflows", user=USER, previews=False)
    async with client_mesh(settings, "test-flows") as running:
        yield running


@pytest.fixture(params=["memory", pytest.param("nats", marks=pytest.mark.integration)])
def flows(request: pytest.FixtureRequest, tmp_path: Path) -> Flows:
    if request.param == "memory":
        built: MemoryMesh = request.getfixturevalue("memory")
        return MemoryFlows(built, Settings(home=tmp_path / "home").scenes_dir)
    mesh, bus = request.getfixturevalue("nats_mesh")
    return MeshFlows(mesh, bus)
