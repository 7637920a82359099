"""Sizes are real dimensions and places use real bounds, on a real Blender bridge.

The rules planner plans each request from the bridge's own summary, every operation runs
on the bridge, and what the scene then measures is read back in a second Blender (the
test process never imports bpy) from the saved file, modifiers evaluated: a 2 cm bevel
is 2 cm in the world, an array's gaps are the gaps asked for, and a thing put on top of
an imported mesh of any size touches it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from contracts.snapshot_text import snapshot_lines
from contracts.views import AssetParams
from contracts.world import world_locations
from services.executor.adapters.bridge_client import BridgeProcess
from services.planner.rules.parse import plan_request
from tests.support.artist_scene import catalog
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),
]
shared_bridge, bridge = bridge_fixtures()
CATALOG = catalog()

# Reads a saved scene in a fresh Blender: each object's evaluated vertices in the world.
MEASURE = """
import json, sys
import bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1], load_ui=False, use_scripts=False)
graph = bpy.context.evaluated_depsgraph_get()
found = {}
for ob in bpy.data.objects:
    if ob.type != "MESH":
        continue
    evaluated = ob.evaluated_get(graph)
    mesh = evaluated.to_mesh()
    found[ob.name] = {
        "verts": [list(evaluated.matrix_world @ v.co) for v in mesh.vertices],
        "scale": list(ob.scale),
    }
    evaluated.to_mesh_clear()
print("MEASURED" + json.dumps(found))
"""


async def run(bridge: BridgeProcess, text: str) -> list[tuple[str, dict[str, Any]]]:
    """Plan ``text`` against the bridge's summary, as the planner is given it, and run it."""
    planned = plan_request(text, "r", CATALOG, None, await bridge.summary("s"))
    ops = [(op.tool_name, op.args) for op in planned.operations]
    for tool, args in ops:
        result = await call(bridge, tool, **args)
        assert result.ok, f"{text!r}: {tool} {args} failed: {result.message}"
    return ops


async def measured(bridge: BridgeProcess, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "measured.blend"
    await bridge.save(str(path))
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", MEASURE, str(path), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(child.communicate(), timeout=120)
    assert child.returncode == 0, out.decode()[-2000:]
    line = next(x for x in out.decode().splitlines() if x.startswith("MEASURED"))
    found: dict[str, Any] = json.loads(line.removeprefix("MEASURED"))
    return found


def spread(values: list[float]) -> float:
    return max(values) - min(values)


async def test_bevel_of_2_cm_on_a_sized_box_is_2_cm_in_the_world(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    made = await run(bridge, "add a cube named Pedestal 1 m wide, 1 m deep and 0.4 m tall")
    assert made[0][1]["dimensions"] == [1, 1, 0.4] and "scale" not in made[0][1]
    await run(bridge, "bevel the edges of Pedestal by 2 cm")
    pedestal = (await measured(bridge, tmp_path))["Pedestal"]
    assert pedestal["scale"] == [1, 1, 1]
    verts = pedestal["verts"]
    top = max(v[2] for v in verts)
    side = max(v[0] for v in verts)
    # The top face is inset by the bevel's width on each side, the side face too: 2 cm
    # both across and up (a scaled unit cube would give 1 cm across and 8 mm up).
    assert spread([v[0] for v in verts if abs(v[2] - top) < 1e-5]) == pytest.approx(0.96, 1e-4)
    assert spread([v[2] for v in verts if abs(v[0] - side) < 1e-5]) == pytest.approx(0.36, 1e-4)


async def test_array_of_5_with_half_metre_gaps_has_half_metre_gaps(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await run(bridge, "add a cube named Plank 0.2 by 1 by 0.02 m")
    await run(bridge, "array Plank 5 times along x with 0.5 m gaps")
    xs = sorted({round(v[0], 4) for v in (await measured(bridge, tmp_path))["Plank"]["verts"]})
    # Five planks 0.2 m wide: each plank's two faces, then 0.5 m of air to the next one.
    assert xs == pytest.approx([-0.1 + 0.7 * i + d for i in range(5) for d in (0, 0.2)], 1e-4)


def box_obj(name: str, low: tuple[float, float, float], high: tuple[float, float, float]) -> str:
    """A closed box as OBJ text. OBJ is y-up: Blender imports (x, y, z) as (x, -z, y)."""
    (x0, y0, z0), (x1, y1, z1) = low, high
    corners = [(x, y, z) for x in (x0, x1) for y in (y0, y1) for z in (z0, z1)]
    faces = ["1 2 4 3", "5 7 8 6", "1 5 6 2", "3 4 8 7", "1 3 7 5", "2 6 8 4"]
    return "\n".join(
        [f"o {name}", *(f"v {x} {y} {z}" for x, y, z in corners), *(f"f {f}" for f in faces)]
    )


async def test_on_top_of_an_imported_mesh_of_any_size_touches_it(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    # 3 m wide, 0.4 m tall, its origin at the world's origin, not in its middle.
    path = tmp_path / "plinth.obj"
    path.write_text(box_obj("Plinth", (2, 0, -0.5), (5, 0.4, 0.5)))
    imported = await bridge.import_asset(AssetParams(path=str(path), format="obj", collection="In"))
    assert imported.objects == ["Plinth"]
    made = await run(bridge, "add a sphere with radius 0.5 on top of Plinth")
    assert made[0][1]["location"] == [3.5, 0, 0.9]
    shapes = await measured(bridge, tmp_path)
    sphere, plinth = shapes["Sphere"]["verts"], shapes["Plinth"]["verts"]
    assert min(v[2] for v in sphere) == pytest.approx(max(v[2] for v in plinth), abs=1e-4)
    summary = {o.name: o for o in (await bridge.summary("s")).objects}
    # The OBJ importer turns the object 90 degrees about x (y-up to z-up): its dimensions
    # are along its own axes, as Blender's N panel shows them; its bounds are the world's.
    assert summary["Plinth"].dimensions == pytest.approx([3, 0.4, 1])
    low, high = summary["Plinth"].world_bounds or [[], []]
    assert low == pytest.approx([2, -0.5, 0]) and high == pytest.approx([5, 0.5, 0.4])


async def test_a_child_in_the_summary_has_its_world_height(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Base", location=[0, 0, 1])
    await ok(bridge, "object.create", primitive="cube", name="Cap", location=[0, 0, 2.5])
    await ok(bridge, "object.parent", child="Cap", parent="Base")
    await ok(bridge, "object.transform", name="Base", location=[0, 0, 3])
    cap = {o.name: o for o in (await bridge.summary("s")).objects}["Cap"]
    assert cap.location == [0, 0, 1.5]  # in its parent's space
    assert cap.world_location == [0, 0, 4.5] and cap.world_bounds == [[-1, -1, 3.5], [1, 1, 5.5]]


@pytest.mark.parametrize(
    ("primitive", "dimensions", "said"),
    [
        ("plane", [1, 1, 1], "flat along z"),
        ("cube", [0, 1, 1], "x size of a cube must be above 0"),
        ("cube", [1e9, 1, 1], "1000000000"),
        ("cube", [1, 1], "dimensions"),
    ],
)
async def test_create_when_dimensions_cannot_be_built_refuses_and_makes_nothing(
    bridge: BridgeProcess, primitive: str, dimensions: list[float], said: str
) -> None:
    result = await call(bridge, "object.create", primitive=primitive, dimensions=dimensions)
    assert result.error_code == "invalid_input" and said in (result.message or "")
    assert (await ok(bridge, "scene.snapshot")).data["objects"] == []


async def test_a_question_about_a_child_answers_its_world_height(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Bottle", location=[1, 0, 0.6])
    await ok(bridge, "object.create", primitive="cube", name="Cap", location=[1, 0, 1.3])
    await ok(bridge, "object.transform", name="Bottle", rotation=[0, 0, 30], scale=[2, 2, 0.5])
    await ok(bridge, "object.parent", child="Cap", parent="Bottle")
    await ok(bridge, "object.transform", name="Bottle", location=[1, 0, 0.1])
    [(tool, _)] = await run(bridge, "where is the cap?")
    snapshot = (await ok(bridge, tool)).data
    measured = {o.name: o.world_location for o in (await bridge.summary("s")).objects}
    # From the snapshot's transforms alone, as Blender composes them with the parent inverse.
    assert world_locations(snapshot["objects"]) == {
        name: pytest.approx(at, abs=1e-3) for name, at in measured.items()
    }
    assert measured["Cap"] == pytest.approx([1, 0, 0.8], abs=1e-3)
    [cap] = [line for line in snapshot_lines("s", snapshot) if line.startswith("  Cap ")]
    assert cap.startswith("  Cap [MESH] at (1, 0, 0.8) (world; ") and "in Bottle's space" in cap
