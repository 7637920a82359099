"""The geometry budget on a real bridge: what a call would make is bounded before Blender
makes it, whatever property produces it (services/bridge/budget/bounded.py).

An ARRAY's ``count`` is capped at 1000, but ``fit_length`` over a small offset, or three
ARRAYs at their cap, multiply past any cap; the bridge estimates the result from RNA and
refuses it with invalid_input (ARGS_INVALID) naming the property, the estimate and the
limit, before anything is evaluated.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from contracts.events import OperationRolledBack
from contracts.python_steps import code_sha256
from services.executor.adapters.bridge_client import BridgeCrashed, BridgeProcess
from services.executor.adapters.supervisor import SupervisedBridge
from tests.support.bridges import bridge_fixtures, call, ok, script_result
from tests.support.runner_contract import Recorder, approved, runner

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()
CUBE_VERTICES = 8
FIT_200000 = {"fit_type": "FIT_LENGTH", "fit_length": 200000}
# Two ARRAYs at their cap fit these limits; a third does not.
RAISED = {
    "BLENDMESH_MAX_OBJECT_COPIES": "2000000",
    "BLENDMESH_MAX_OBJECT_VERTICES": "100000000",
    "BLENDMESH_MAX_SCENE_VERTICES": "100000000",
    "BLENDMESH_MAX_SCENE_COPIES": "2000000",
}


def peak_rss(process: BridgeProcess) -> int:
    """The bridge's peak resident memory so far, in bytes (VmHWM)."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def raised() -> AsyncIterator[BridgeProcess]:
    process = BridgeProcess(env={**os.environ, **RAISED})
    await process.start()
    yield process
    await process.close()


async def cube_with_array(bridge: BridgeProcess, **properties: Any) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "modifier.add", object="Box", type="ARRAY", name="A1", properties=properties)


async def test_fit_length_200000_when_added_is_refused_quickly_naming_fit_length(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    peak = peak_rss(bridge)
    started = time.perf_counter()
    result = await call(
        bridge, "modifier.add", object="Box", type="ARRAY", name="Row", properties=FIT_200000
    )
    took = time.perf_counter() - started
    assert (result.ok, result.error_code, result.mutated) == (False, "invalid_input", True)
    assert "object 'Box' would have 100,001 copies and instances" in result.message
    assert "over the 50,000 an object may have (BLENDMESH_MAX_OBJECT_COPIES)" in result.message
    assert "modifier 'Row' (ARRAY) fit_type FIT_LENGTH: fit_length 200000" in result.message
    # Refused from RNA alone: nothing evaluated, so no 100,000 copies in memory.
    assert took < 2.0
    assert peak_rss(bridge) - peak < 50 * 1024 * 1024


async def test_fit_length_2e9_when_added_is_refused_naming_its_vertices(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    properties = {"fit_type": "FIT_LENGTH", "fit_length": 2e9}
    result = await call(bridge, "modifier.add", object="Box", type="ARRAY", properties=properties)
    assert result.error_code == "invalid_input" and result.mutated
    assert "object 'Box' would have 8,000,000,008 vertices" in result.message
    assert "(BLENDMESH_MAX_OBJECT_VERTICES)" in result.message
    assert "fit_length 2e+09 over an offset of 2 (1,000,000,001 copies)" in result.message


async def test_two_arrays_at_their_cap_when_stacked_are_refused_naming_both(
    bridge: BridgeProcess,
) -> None:
    await cube_with_array(bridge, count=1000)
    result = await call(
        bridge, "modifier.add", object="Box", type="ARRAY", name="A2", properties={"count": 1000}
    )
    assert result.error_code == "invalid_input" and result.mutated
    assert "object 'Box' would have 8,000,000 vertices" in result.message
    assert "modifier 'A1' (ARRAY) count 1,000" in result.message
    assert "modifier 'A2' (ARRAY) count 1,000" in result.message


async def test_three_arrays_at_their_cap_when_limits_are_raised_the_third_is_refused(
    raised: BridgeProcess,
) -> None:
    await raised.reset()
    await cube_with_array(raised, count=1000)
    second = {"object": "Box", "type": "ARRAY", "properties": {"count": 1000}}
    await ok(raised, "modifier.add", **second, name="A2")  # 10^6 copies: within these limits
    result = await call(raised, "modifier.add", **second, name="A3")
    assert result.error_code == "invalid_input", result
    assert "would have 8,000,000,000 vertices, over the 100,000,000" in result.message
    assert "modifier 'A3' (ARRAY) count 1,000" in result.message


async def test_modest_arrays_when_added_are_accepted_and_blender_makes_what_was_estimated(
    bridge: BridgeProcess,
) -> None:
    await cube_with_array(bridge, fit_type="FIT_LENGTH", fit_length=20)  # 11 copies
    await ok(bridge, "modifier.add", object="Box", type="ARRAY", name="A2", properties={"count": 3})
    await ok(bridge, "modifier.add", object="Box", type="SUBSURF", properties={"levels": 2})
    (box,) = (await bridge.inspect()).objects
    # 33 cubes, each subdivided twice: 8 + 12 + 6 = 26 vertices, then 26 + 48 + 24 = 98.
    assert box.evaluated_vertices == 33 * 98


async def test_modifier_set_when_over_budget_is_refused_before_anything_is_set(
    bridge: BridgeProcess,
) -> None:
    await cube_with_array(bridge, count=10)
    before = await bridge.fingerprint()
    result = await call(bridge, "modifier.set", object="Box", name="A1", properties=FIT_200000)
    assert (result.error_code, result.mutated) == ("invalid_input", False)
    assert "fit_length 200000" in result.message and "100,001 copies" in result.message
    assert await bridge.fingerprint() == await bridge.fingerprint_full() == before


async def test_offset_object_when_moved_close_is_refused_for_the_copies_it_would_make(
    bridge: BridgeProcess,
) -> None:
    # The count follows another object's transform: moving it is what would make them.
    await ok(bridge, "object.create", primitive="cube", name="Anchor", location=[4, 0, 0])
    await cube_with_array(
        bridge,
        fit_type="FIT_LENGTH",
        fit_length=40,
        use_relative_offset=False,
        use_object_offset=True,
        offset_object="Anchor",
    )
    result = await call(bridge, "object.transform", name="Anchor", location=[0.0001, 0, 0])
    assert result.error_code == "invalid_input" and result.mutated
    assert "object 'Box' would have 3,200,008 vertices" in result.message
    assert "fit_length 40 over an offset of 0.0001 (400,001 copies)" in result.message


async def test_scene_when_over_its_limit_is_refused_naming_the_largest() -> None:
    tight = BridgeProcess(env={**os.environ, "BLENDMESH_MAX_SCENE_VERTICES": "20"})
    await tight.start()
    try:
        await ok(tight, "object.create", primitive="cube", name="A")
        await ok(tight, "object.create", primitive="cube", name="B")
        result = await call(tight, "object.duplicate", name="B", new_name="C")
    finally:
        await tight.close()
    assert result.error_code == "invalid_input" and result.mutated
    assert "the scene would have 24 vertices, over the 20" in result.message
    assert "(BLENDMESH_MAX_SCENE_VERTICES); the most: 'A' 8, 'B' 8, 'C' 8" in result.message


async def test_geometry_nodes_when_instancing_past_the_budget_is_refused_as_measured(
    bridge: BridgeProcess,
) -> None:
    target = {"object": "Plane", "modifier": "GeometryNodes"}
    await ok(bridge, "object.create", primitive="plane", name="Plane")
    await ok(bridge, "gn.ensure_target", **target, allow_create_modifier=True)
    await ok(bridge, "gn.ensure_group_io", **target)
    for node_id, bl_idname in (
        ("points", "GeometryNodePoints"),
        ("pebble", "GeometryNodeMeshCube"),
        ("instances", "GeometryNodeInstanceOnPoints"),
    ):
        await ok(bridge, "gn.add_node", **target, node_id=node_id, bl_idname=bl_idname)
    await ok(bridge, "gn.set_input", **target, node_id="points", socket="Count", value=100000)
    for ends in (
        ("points", "Points", "instances", "Points"),
        ("pebble", "Mesh", "instances", "Instance"),
    ):
        await ok(bridge, "gn.link", **target, **dict(zip(LINK_KEYS, ends, strict=True)))
    ends = dict(zip(LINK_KEYS, ("instances", "Instances", "group_output", "Geometry"), strict=True))
    result = await call(bridge, "gn.link", **target, **ends)
    assert result.error_code == "invalid_input" and result.mutated
    assert "object 'Plane' would have 100,000 copies and instances" in result.message
    assert "its evaluated geometry" in result.message


LINK_KEYS = ("from_node", "from_socket", "to_node", "to_socket")


async def test_safe_python_step_when_setting_fit_length_past_the_budget_is_refused(
    bridge: BridgeProcess,
) -> None:
    await cube_with_array(bridge, count=2)
    code = (
        "import bpy\nm = bpy.data.objects['Box'].modifiers['A1']\n"
        "m.set('fit_type', 'FIT_LENGTH')\nm.set('fit_length', 200000.0)"
    )
    result = await call(bridge, "python.safe", code=code, code_sha256=code_sha256(code))
    assert result.error_code == "invalid_input" and result.mutated, result
    assert "object 'Box' would have 100,001 copies" in result.message


async def test_scene_over_a_lower_budget_when_loaded_stays_editable_but_cannot_grow(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await cube_with_array(bridge, count=100)  # 800 vertices
    saved = await bridge.save(str(tmp_path / "rows.blend"))
    small = BridgeProcess(env={**os.environ, "BLENDMESH_MAX_OBJECT_VERTICES": "500"})
    await small.start()
    try:
        await small.load(saved.path)
        await ok(small, "object.transform", name="Box", location=[1, 0, 0])
        more = {"count": 101}
        grown = await call(small, "modifier.set", object="Box", name="A1", properties=more)
        assert grown.error_code == "invalid_input" and not grown.mutated
        assert "808 vertices, over the 500" in grown.message
        await ok(small, "modifier.set", object="Box", name="A1", properties={"count": 50})
    finally:
        await small.close()


async def test_bridge_when_a_limit_is_not_a_number_refuses_to_start_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    process = BridgeProcess(env={**os.environ, "BLENDMESH_MAX_SCENE_COPIES": "lots"})
    with pytest.raises(BridgeCrashed):
        await process.start()
    await process.close()
    assert "BLENDMESH_MAX_SCENE_COPIES='lots' is not a whole number" in caplog.text


async def test_run_when_an_operation_is_over_budget_fails_args_invalid_and_restores_scene(
    tmp_path: Path,
) -> None:
    real = SupervisedBridge(call_timeout=30)
    await real.start()
    try:
        rec = Recorder()
        plan = approved(
            ("op01", "object.create", {"primitive": "cube", "name": "Box"}),
            ("op02", "modifier.add", {"object": "Box", "type": "ARRAY", "properties": FIT_200000}),
        )
        executed = await runner(real, tmp_path).run(plan, rec)
    finally:
        await real.close()
    assert executed.failure is not None and executed.failure.error_code == "ARGS_INVALID"
    assert "fit_length 200000" in executed.failure.retry_hint
    assert executed.failure.minimal_repair_plan[0].operation_id == "op02"
    failed = executed.receipts[1]
    assert failed.status == "rolled_back"
    assert rec.of(OperationRolledBack)[0].method == "checkpoint"
    assert executed.scene_hash == failed.scene_hash_before == executed.receipts[0].scene_hash_after


ESTIMATES = """
import json
import bpy
from services.bridge import tools, touched
from services.bridge.budget.estimate import Estimator
from services.bridge.tools import scene
scene.reset()
def tool(tool_name, /, **args):
    result = touched.call(tool_name, args, tuple(bpy.app.version))
    assert result.ok, result
stacks = {
    "array_fit": [("ARRAY", {"fit_type": "FIT_LENGTH", "fit_length": 9.5})],
    "array_constant": [("ARRAY", {"count": 4, "use_relative_offset": False,
                                  "use_constant_offset": True})],
    "subsurf": [("SUBSURF", {"levels": 3})],
    "mirror": [("MIRROR", {"use_axis": [True, True, False], "use_mirror_merge": False})],
    "array_subsurf": [("ARRAY", {"count": 3}), ("SUBSURF", {"levels": 2})],
    "solidify": [("SOLIDIFY", {})],
    "bevel": [("BEVEL", {"segments": 4, "limit_method": "NONE"})],
    "screw": [("SCREW", {"steps": 12, "iterations": 2})],
    "wireframe": [("WIREFRAME", {})],
    "triangulate_split": [("TRIANGULATE", {}), ("EDGE_SPLIT", {"split_angle": 0.0})],
    "remesh": [("REMESH", {"mode": "VOXEL", "voxel_size": 0.1})],
    "boolean": [("BOOLEAN", {"object": "Other"})],
}
tool("object.create", primitive="uv_sphere", name="Other", location=[0.5, 0, 0])
for name, stack in stacks.items():
    tool("object.create", primitive="monkey" if name == "bevel" else "cube", name=name)
    for i, (kind, props) in enumerate(stack):
        tool("modifier.add", object=name, type=kind, name=f"m{i}", properties=props)
depsgraph = bpy.context.evaluated_depsgraph_get()
found = {}
for name in stacks:
    estimate = Estimator().of(bpy.data.objects[name])
    made = len(bpy.data.objects[name].evaluated_get(depsgraph).data.vertices)
    found[name] = [estimate.vertices, made]
print("RESULT", json.dumps(found))
"""


async def test_estimate_when_compared_with_what_blender_makes_is_never_below_it() -> None:
    found, _ = await script_result(ESTIMATES)
    for name, (estimate, made) in found.items():
        assert made > CUBE_VERTICES, (name, made)
        assert estimate >= made, (name, estimate, made)
    exact = ("array_fit", "array_constant", "subsurf", "mirror", "array_subsurf", "solidify")
    assert {n: found[n][0] for n in exact} == {n: found[n][1] for n in exact}, json.dumps(found)


KEPT = """
import json
import bpy
from services.bridge.budget import bounded
from services.bridge import tools, touched
from services.bridge.budget.estimate import Estimator
from services.bridge.tools import scene
scene.reset()
checks = {}
def tool(tool_name, /, **args):
    result = touched.call(tool_name, args, tuple(bpy.app.version))
    assert result.ok, result
    kept = bounded.ESTIMATES.current()
    fresh = Estimator()
    afresh = {o.name: [fresh.of(o).vertices, fresh.of(o).copies] for o in bpy.context.scene.objects}
    same = {n: [e.vertices, e.copies] for n, e in kept.objects.items()} == afresh
    totals = [kept.vertices, kept.copies] == [sum(c[i] for c in afresh.values()) for i in (0, 1)]
    checks[f"{len(checks):02} {tool_name}"] = same and totals
row = {"fit_type": "FIT_LENGTH", "fit_length": 40, "use_relative_offset": False,
       "use_object_offset": True, "offset_object": "Anchor"}
tool("object.create", primitive="cube", name="Box")
tool("object.create", primitive="cube", name="Anchor", location=[4, 0, 0])
tool("modifier.add", object="Box", type="ARRAY", name="Row", properties=row)
tool("object.transform", name="Anchor", location=[2, 0, 0])
tool("object.create", primitive="cube", name="Cutter")
tool("modifier.add", object="Box", type="BOOLEAN", properties={"object": "Cutter"})
tool("modifier.add", object="Cutter", type="SUBSURF", properties={"levels": 2})
tool("object.duplicate", name="Box", new_name="Box2")
tool("object.rename", name="Anchor", new_name="Pin")
tool("object.transform", name="Pin", location=[1, 0, 0])
tool("object.parent", child="Pin", parent="Box2")
tool("object.transform", name="Box2", location=[0.5, 0, 0])
tool("collection.create", name="Group")
tool("collection.move", objects=["Box2"], collection="Group")
tool("modifier.set", object="Box", name="Row", properties={"fit_length": 10})
tool("modifier.apply", object="Cutter", modifier="Subdivision")
tool("object.delete", name="Cutter")
print("RESULT", json.dumps(checks))
"""


async def test_estimates_when_kept_across_calls_equal_estimates_made_afresh() -> None:
    # Each object's estimate is cached and dropped with the digests; after every call the
    # kept ones must be what estimating the whole scene again gives.
    checks, _ = await script_result(KEPT)
    assert len(checks) == 17
    assert all(checks.values()), checks


BROKEN = """
import json
import bpy
from services.bridge.budget import estimate_modifiers
from services.bridge import tools, touched
from services.bridge.tools import scene
scene.reset()
def tool(tool_name, /, **args):
    result = touched.call(tool_name, args, tuple(bpy.app.version))
    return [result.ok, result.error_code, result.mutated, result.message]
def broken(*args):
    raise RuntimeError("boom")
found = {"create": tool("object.create", primitive="cube", name="Box")}
array = estimate_modifiers.RULES["ARRAY"]
estimate_modifiers.RULES["ARRAY"] = broken
found["after"] = tool("modifier.add", object="Box", type="ARRAY")
found["before"] = tool("object.create", primitive="cube", name="Late")
found["late"] = "Late" in bpy.data.objects
estimate_modifiers.RULES["ARRAY"] = array
found["again"] = tool("object.create", primitive="cube", name="Late")
print("RESULT", json.dumps(found))
"""


async def test_budget_when_the_estimate_fails_refuses_the_call_and_recovers() -> None:
    found, _ = await script_result(BROKEN)
    checked = "the geometry budget could not be checked (RuntimeError: boom)"
    assert found["after"] == [False, "internal_error", True, checked]
    # Before a call, nothing has run yet: it is refused without changing the scene.
    assert found["before"] == [False, "internal_error", False, checked]
    assert found["late"] is False
    assert found["again"][:3] == [True, None, True]
