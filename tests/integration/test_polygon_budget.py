"""The polygon budget on real scenes (real nats-server, real bpy): it judges what a run
adds, an imported file is never failed for its size, and a scene may have its own budget.

The gates file allows 1,000 faces, and 5,000 for the scene ``shot``; the imported file is
a grid of 1,600 faces, over the budget before any run touches it. The runs on an
over-budget scene share one import (``over``): pytest-xdist may run them on a worker that
never ran the import test, and neither run leaves the scene's faces changed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
import pytest_asyncio

from contracts.events import GatesEvaluated
from contracts.receipts import RunResult
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.doors.core.scene_client import SceneDoor
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PREFIX = "bmpolys"
GATES = """[gates]
guardians = ["links_valid", "polygon_budget"]
polygon_budget = 1000

[gates.scene_polygon_budget]
shot = 5000
"""
GRID = """
import sys, bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.mesh.primitive_grid_add(x_subdivisions=40, y_subdivisions=40, size=10)
bpy.context.active_object.name = "Grid"
assert len(bpy.context.active_object.data.polygons) == 1600
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1])
"""


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    gates = home.parent / "gates.toml"
    gates.write_text(GATES)
    env = {"BLENDMESH_GATES_FILE": str(gates)}
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(home=home, prefix=PREFIX, user="ana", env=env, previews=False)


mesh = mesh_fixture(client="test-polygons")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def grid_blend(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A 1,600-face .blend saved by Blender in its own process (never bpy in this one)."""
    path = tmp_path_factory.mktemp("files") / "grid.blend"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", GRID, str(path), stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode(errors="replace")
    return path.read_bytes()


def op(op_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": args,
        "depends_on": [],
        "safety_level": "safe_write",
    }


async def run_ops(mesh: tuple[Mesh, Bus], scene: str, tag: str, *ops: Any) -> RunResult:
    written = {"request_id": f"req-{scene}-{tag}", "operations": list(ops)}
    request = build_request(user="ana", scene_id=scene, plan=written, planner="plan")
    return await MeshClient(mesh[1]).run(request, timeout=120)


async def imported(mesh: tuple[Mesh, Bus], scene: str, data: bytes) -> RunResult:
    door = SceneDoor(mesh[1], mesh[0].settings)
    request = await door.import_request("ana", scene, data, "grid.blend")
    return await MeshClient(mesh[1]).run(request, timeout=120)


async def budget_said(mesh: tuple[Mesh, Bus], result: RunResult) -> dict[str, Any]:
    """What the polygon_budget guardian reported on the run's revision."""
    events = await read_run(mesh[1].js, PREFIX, result.run_id)
    (verdict,) = [e for e in events if isinstance(e, GatesEvaluated)]
    (said,) = [
        g for g in json.loads(verdict.result)["guardians"] if g["guardian_id"] == "polygon_budget"
    ]
    return dict(said["output"])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def over(mesh: tuple[Mesh, Bus], grid_blend: bytes) -> str:
    """A scene whose imported grid is over the budget; the runs on it add no faces for
    good (one adds none, the other is failed and undone)."""
    result = await imported(mesh, "over", grid_blend)
    assert result.status == "completed", result
    return "over"


async def test_import_when_file_is_over_the_budget_completes_and_reports_its_faces(
    mesh: tuple[Mesh, Bus], grid_blend: bytes
) -> None:
    result = await imported(mesh, "big", grid_blend)
    assert result.status == "completed", result
    assert result.gates is not None and result.gates.success
    said = await budget_said(mesh, result)
    assert (said["faces"], said["budget"], said["passed"]) == (1600, 1000, True)


async def test_run_on_an_over_budget_scene_when_it_adds_no_faces_completes(
    mesh: tuple[Mesh, Bus], over: str
) -> None:
    moved = await run_ops(
        mesh, over, "move", op("m1", "object.transform", {"name": "Grid", "location": [0, 0, 1]})
    )
    assert moved.status == "completed", moved
    said = await budget_said(mesh, moved)
    assert (said["faces"], said["faces_before"]) == (1600, 1600)


async def test_run_on_an_over_budget_scene_when_it_adds_faces_fails_naming_the_growth(
    mesh: tuple[Mesh, Bus], over: str
) -> None:
    grown = await run_ops(
        mesh, over, "grow", op("c1", "object.create", {"primitive": "cube", "name": "Box"})
    )
    assert grown.status == "failed", grown
    assert grown.gates is not None and grown.gates.failed_gates == ["POLYGON_BUDGET"]
    (message,) = grown.gates.messages
    assert "1606 faces (the run took it from 1600), over the polygon budget of 1000" in message


async def test_scene_with_its_own_budget_when_a_run_adds_within_it_completes(
    mesh: tuple[Mesh, Bus], grid_blend: bytes
) -> None:
    assert (await imported(mesh, "shot", grid_blend)).status == "completed"
    grown = await run_ops(
        mesh, "shot", "grow", op("c1", "object.create", {"primitive": "cube", "name": "Box"})
    )
    assert grown.status == "completed", grown
    said = await budget_said(mesh, grown)
    assert (said["faces"], said["budget"], said["faces_before"]) == (1606, 5000, 1600)
