"""Integration tests: real bpy in a real bridge child process, driven by the async client."""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from contracts.bridge import Compensation, Empty, ToolResult
from services.executor.adapters.bridge_client import BridgeCrashed, BridgeError, BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()
# Text and curves, constraints and rigs, render settings and HDRI worlds.
OUTPUT_TOOLS = {
    "text.create", "text.set", "curve.create", "curve.set", "curve.to_mesh",
    "constraint.track_to", "constraint.damped_track", "constraint.child_of",
    "constraint.follow_path", "constraint.copy_location", "constraint.copy_rotation",
    "constraint.limit_location", "constraint.limit_rotation", "constraint.limit_scale",
    "constraint.remove", "empty.create", "armature.create", "armature.bind", "armature.pose",
    "render.set", "render.color", "world.hdri", "world.hdris",
}  # fmt: skip

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PRIMITIVES = {
    # primitive: (default name, vertex count)
    "cube": ("Cube", 8),
    "uv_sphere": ("Sphere", 482),
    "ico_sphere": ("Icosphere", 42),
    "cylinder": ("Cylinder", 64),
    "cone": ("Cone", 33),
    "plane": ("Plane", 4),
    "torus": ("Torus", 576),
    "monkey": ("Suzanne", 507),
}
MODIFIER_NAMES = {
    "BEVEL": "Bevel", "SUBSURF": "Subdivision", "ARRAY": "Array", "MIRROR": "Mirror",
    "SOLIDIFY": "Solidify", "WIREFRAME": "Wireframe", "DECIMATE": "Decimate",
    "DISPLACE": "Displace", "SMOOTH": "Smooth", "TRIANGULATE": "Triangulate", "WELD": "Weld",
    "SCREW": "Screw", "REMESH": "Remesh", "CAST": "Cast", "SIMPLE_DEFORM": "SimpleDeform",
    "WAVE": "Wave", "EDGE_SPLIT": "EdgeSplit", "WEIGHTED_NORMAL": "WeightedNormal",
    "BOOLEAN": "Boolean",
}  # fmt: skip


def data(result: ToolResult) -> dict[str, Any]:
    assert result.data is not None, result
    return result.data


async def objects(bridge: BridgeProcess) -> dict[str, dict[str, Any]]:
    snap = data(await ok(bridge, "scene.snapshot"))
    return {o["name"]: o for o in snap["objects"]}


async def apply_compensation(bridge: BridgeProcess, result: ToolResult) -> ToolResult:
    comp = result.compensation
    assert comp is not None, result
    return await ok(bridge, comp.tool, **comp.arguments)


async def build_sample_scene(bridge: BridgeProcess) -> None:
    await ok(
        bridge,
        "object.create",
        primitive="cube",
        name="Box",
        location=[1, 2, 3],
        rotation=[0, 0, 45],
    )
    await ok(bridge, "object.create", primitive="monkey", scale=[2, 2, 2])
    await ok(
        bridge, "modifier.add", object="Box", type="BEVEL", properties={"segments": 3, "width": 0.1}
    )
    await ok(
        bridge, "modifier.add", object="Suzanne", type="MIRROR", properties={"mirror_object": "Box"}
    )
    await ok(bridge, "material.assign", object="Box", base_color=[0.8, 0.1, 0.1], roughness=0.3)


@pytest.mark.clause("001-§core-concepts.3")
async def test_initialize_when_started_reports_blender_profile(
    shared_bridge: BridgeProcess,
) -> None:
    profile = shared_bridge.profile
    assert profile.version_tuple[:2] >= (4, 2)
    assert profile.background is True
    assert profile.sandbox == "bubblewrap"  # Python steps can run here
    assert "BLENDER_EEVEE" in profile.engines
    assert profile.python.startswith("3.11")


@pytest.mark.clause(
    "001-§core-concepts.1", "001-§core-concepts.5", "001-§safety-modes.1", "001-§idempotence.1"
)
@pytest.mark.clause("002-§tool-registry.2", "002-§tool-registry.3", "000-§adoption.1")
async def test_tools_list_when_started_every_tool_has_metadata(bridge: BridgeProcess) -> None:
    tools = await bridge.list_tools()
    names = [t["name"] for t in tools]
    assert names == sorted(names)
    assert set(names) == {
        "scene.snapshot", "object.create", "object.transform", "object.rename", "object.delete",
        "modifier.add", "modifier.set", "modifier.remove", "material.assign",
        "gn.ensure_target", "gn.remove_target", "gn.ensure_group_io", "gn.set_group_io",
        "gn.remove_group_io", "gn.add_node", "gn.remove_node", "gn.restore_node", "gn.set_input",
        "gn.set_property", "gn.link", "gn.unlink", "gn.cleanup_unused",
        "camera.create", "camera.set", "camera.set_active", "light.create", "light.set",
        "world.set", "object.duplicate", "object.parent", "object.unparent", "object.shade",
        "collection.create", "collection.move", "object.visibility", "modifier.apply",
        "keyframe.insert", "python.safe", "python.trusted", "object.inspect",
        *OUTPUT_TOOLS,
        # modelling, UV and shading (issue 44)
        "mesh.extrude", "mesh.inset", "mesh.bevel", "mesh.solidify", "mesh.mirror",
        "mesh.boolean", "mesh.merge_by_distance", "mesh.recalculate_normals",
        "mesh.shade_auto_smooth", "mesh.join", "mesh.separate", "mesh.origin_set",
        "mesh.apply_transform", "uv.smart_project", "uv.cube_project", "uv.cylinder_project",
        "uv.scale_islands", "shader.create", "shader.add_node", "shader.remove_node",
        "shader.link", "shader.set_input", "shader.set_property", "shader.set_ramp",
        "material.assign_faces",
    }  # fmt: skip
    for entry in tools:
        meta = entry["_meta"]["blendmesh"]
        # The registry does not check schemas when Blender starts; each must be valid, and
        # every tool says what a successful answer holds.
        jsonschema.Draft202012Validator.check_schema(entry["inputSchema"])
        jsonschema.Draft202012Validator.check_schema(entry["outputSchema"])
        assert entry["outputSchema"]["type"] == "object"
        assert entry["inputSchema"]["type"] == "object"
        assert entry["inputSchema"]["additionalProperties"] is False
        assert meta["safety_level"] in {"read_only", "safe_write", "destructive"}
        assert meta["compensation"] in set(names) | {"checkpoint", "none"}
        assert meta["min_blender_version"] == [4, 2, 0]
        assert entry["annotations"]["readOnlyHint"] == (meta["safety_level"] == "read_only")
    by_name = {t["name"]: t for t in tools}
    assert by_name["object.delete"]["annotations"]["destructiveHint"] is True
    assert by_name["object.create"]["_meta"]["blendmesh"]["compensation"] == "object.delete"


@pytest.mark.parametrize("primitive", sorted(PRIMITIVES))
async def test_object_create_when_each_primitive_appears_in_snapshot_at_location(
    bridge: BridgeProcess, primitive: str
) -> None:
    name, vertices = PRIMITIVES[primitive]
    result = await ok(
        bridge, "object.create", primitive=primitive, location=[1.5, -2, 3], rotation=[90, 0, 0]
    )
    assert data(result)["name"] == name
    assert result.mutated is True
    assert result.compensation == Compensation(tool="object.delete", arguments={"name": name})
    obj = (await objects(bridge))[name]
    assert obj["location"] == [1.5, -2.0, 3.0]
    assert obj["rotation"][0] == pytest.approx(math.pi / 2, abs=1e-6)
    assert obj["data"] == name
    assert obj["mesh"]["vertices"] == vertices


@pytest.mark.clause("001-§error-codes.6")
async def test_object_create_when_name_exists_returns_conflict_and_unchanged_hash(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    before = await bridge.fingerprint()
    result = await call(bridge, "object.create", primitive="uv_sphere", name="Box")
    assert (result.ok, result.error_code, result.mutated) == (False, "conflict", False)
    assert "Box" in result.message
    assert await bridge.fingerprint() == before


@pytest.mark.clause("001-§error-codes.5")
async def test_object_transform_when_object_missing_returns_not_found_and_unchanged_hash(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube")
    before = await bridge.fingerprint()
    result = await call(bridge, "object.transform", name="Ghost", location=[1, 1, 1])
    assert (result.error_code, result.mutated) == ("not_found", False)
    assert "Ghost" in result.message
    assert await bridge.fingerprint() == before


async def test_object_transform_when_relative_adds_and_multiplies_and_compensation_restores(
    bridge: BridgeProcess,
) -> None:
    await ok(
        bridge,
        "object.create",
        primitive="cube",
        location=[1, 2, 3],
        rotation=[10, 0, 0],
        scale=[1, 2, 3],
    )
    before = await bridge.fingerprint()
    result = await ok(
        bridge,
        "object.transform",
        name="Cube",
        mode="relative",
        location=[1, 1, 1],
        rotation=[20, 0, 0],
        scale=[2, 2, 2],
    )
    assert data(result)["location"] == pytest.approx([2, 3, 4])
    assert data(result)["rotation"] == pytest.approx([30, 0, 0], abs=1e-4)
    assert data(result)["scale"] == pytest.approx([2, 4, 6])
    assert await bridge.fingerprint() != before
    await apply_compensation(bridge, result)
    assert await bridge.fingerprint() == before


async def test_object_rename_when_free_renames_and_compensation_restores(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube")
    before = await bridge.fingerprint()
    result = await ok(bridge, "object.rename", name="Cube", new_name="Box")
    obj = (await objects(bridge))["Box"]
    assert obj["data"] == "Box"
    await apply_compensation(bridge, result)
    assert await bridge.fingerprint() == before


@pytest.mark.clause("001-§error-codes.6")
async def test_object_rename_when_target_exists_returns_conflict(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube")
    await ok(bridge, "object.create", primitive="plane")
    before = await bridge.fingerprint()
    result = await call(bridge, "object.rename", name="Cube", new_name="Plane")
    assert (result.error_code, result.mutated) == ("conflict", False)
    missing = await call(bridge, "object.rename", name="Nope", new_name="Other")
    assert missing.error_code == "not_found"
    assert await bridge.fingerprint() == before


async def test_object_delete_when_exists_removes_object(bridge: BridgeProcess) -> None:
    empty = await bridge.fingerprint()
    await ok(bridge, "object.create", primitive="torus")
    result = await ok(bridge, "object.delete", name="Torus")
    assert data(result)["removed_data"] is True
    assert result.compensation is None
    assert await objects(bridge) == {}
    assert await bridge.fingerprint() == empty
    again = await call(bridge, "object.delete", name="Torus")
    assert (again.error_code, again.mutated) == ("not_found", False)


async def test_modifier_add_set_remove_when_compensated_restore_hash(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    h0 = await bridge.fingerprint()
    added = await ok(bridge, "modifier.add", object="Box", type="BEVEL", properties={"segments": 3})
    assert data(added)["name"] == "Bevel"
    assert added.compensation == Compensation(
        tool="modifier.remove", arguments={"object": "Box", "name": "Bevel"}
    )
    h1 = await bridge.fingerprint()
    changed = await ok(
        bridge,
        "modifier.set",
        object="Box",
        name="Bevel",
        properties={"width": 0.25, "segments": 5},
    )
    assert changed.compensation is not None
    assert changed.compensation.arguments["properties"] == {
        "width": pytest.approx(0.1),
        "segments": 3,
    }
    mods = (await objects(bridge))["Box"]["modifiers"]
    assert mods[0]["properties"]["segments"] == 5
    await apply_compensation(bridge, changed)
    assert await bridge.fingerprint() == h1
    removed = await ok(bridge, "modifier.remove", object="Box", name="Bevel")
    assert await bridge.fingerprint() == h0
    await apply_compensation(bridge, removed)
    assert await bridge.fingerprint() == h1
    await apply_compensation(bridge, added)
    assert await bridge.fingerprint() == h0


@pytest.mark.parametrize("mod_type", sorted(MODIFIER_NAMES))
async def test_modifier_remove_when_each_type_compensation_recreates_it(
    bridge: BridgeProcess, mod_type: str
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    added = await ok(bridge, "modifier.add", object="Box", type=mod_type)
    assert data(added)["name"] == MODIFIER_NAMES[mod_type]
    before = await bridge.fingerprint()
    removed = await ok(bridge, "modifier.remove", object="Box", name=MODIFIER_NAMES[mod_type])
    await apply_compensation(bridge, removed)
    assert await bridge.fingerprint() == before


@pytest.mark.clause("001-§idempotence.4")
async def test_modifier_add_when_property_value_bad_returns_invalid_input_mutated(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    before = await bridge.fingerprint()
    checkpoint = await bridge.save(str(tmp_path / "checkpoint.blend"))
    result = await call(
        bridge, "modifier.add", object="Box", type="BEVEL", properties={"segments": "lots"}
    )
    assert (result.ok, result.error_code, result.mutated) == (False, "invalid_input", True)
    assert "segments" in result.message
    # The partial modifier is left for the executor's checkpoint restore.
    assert await bridge.fingerprint() != before
    assert await bridge.load(checkpoint.path) == before


async def test_modifier_add_when_property_unknown_lists_writable_properties(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    result = await call(
        bridge, "modifier.add", object="Box", type="SUBSURF", properties={"wobble": 1}
    )
    assert (result.error_code, result.mutated) == ("invalid_input", True)
    assert "wobble" in result.message and "levels" in result.message


async def test_modifier_add_when_pointer_named_resolves_or_not_found(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "object.create", primitive="plane", name="Axis")
    added = await ok(
        bridge, "modifier.add", object="Box", type="MIRROR", properties={"mirror_object": "Axis"}
    )
    assert data(added)["properties"]["mirror_object"] == "Axis"
    missing = await call(
        bridge, "modifier.add", object="Box", type="BOOLEAN", properties={"object": "Nope"}
    )
    assert (missing.error_code, missing.mutated) == ("not_found", True)
    conflict = await call(bridge, "modifier.add", object="Box", type="MIRROR")
    assert (conflict.error_code, conflict.mutated) == ("conflict", False)


async def test_modifier_add_when_pointer_not_a_name_is_invalid_naming_the_type(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    wrong = await call(
        bridge, "modifier.add", object="Box", type="MIRROR", properties={"mirror_object": 5}
    )
    assert (wrong.error_code, wrong.mutated) == ("invalid_input", True)
    assert "mirror_object" in wrong.message and "name of a Object or null" in wrong.message


async def test_modifier_set_when_any_value_invalid_mutates_nothing(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "modifier.add", object="Box", type="SUBSURF")
    before = await bridge.fingerprint()
    for props in ({"levels": 2, "subdivision_type": "NOPE"}, {"levels": 1000}, {"levels": 2.5}):
        result = await call(
            bridge, "modifier.set", object="Box", name="Subdivision", properties=props
        )
        assert (result.error_code, result.mutated) == ("invalid_input", False), props
    assert await bridge.fingerprint() == before


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("object.create", {"primitive": "cube", "colour": "red"}),
        ("object.create", {"primitive": "cube", "location": [1, 2]}),
        ("object.create", {"primitive": "cube", "location": ["1", 2, 3]}),
        ("object.create", {"primitive": "cube", "location": [float("inf"), 0, 0]}),
        ("object.create", {"primitive": "teapot"}),
        ("object.create", {"primitive": "cube", "name": ""}),
        ("object.transform", {"name": "Cube"}),
        ("object.transform", {"name": "Cube", "scale": [1, 1, float("nan")]}),
        ("modifier.set", {"object": "Cube", "name": "Bevel", "properties": {}}),
        ("material.assign", {"object": "Cube", "metallic": 2}),
    ],
)
@pytest.mark.clause(
    "001-§validate-input.1", "001-§validate-input.3", "001-§error-codes.1", "001-§error-codes.2"
)
async def test_tool_call_when_arguments_invalid_returns_invalid_input_not_mutated(
    bridge: BridgeProcess, tool: str, arguments: dict[str, Any]
) -> None:
    await ok(bridge, "object.create", primitive="cube")
    before = await bridge.fingerprint()
    result = await bridge.call_tool(tool, arguments, mcp_call_id="bad-args")
    assert (result.ok, result.error_code, result.mutated) == (
        False,
        "invalid_input",
        False,
    )
    assert await bridge.fingerprint() == before


@pytest.mark.clause("001-§error-codes.5")
async def test_tool_call_when_tool_unknown_returns_not_found_result(bridge: BridgeProcess) -> None:
    result = await call(bridge, "object.explode")
    assert (result.ok, result.error_code, result.mutated) == (False, "not_found", False)


async def test_material_assign_when_color_given_snapshot_shows_it(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    result = await ok(
        bridge,
        "material.assign",
        object="Box",
        base_color=[0.2, 0.4, 0.6],
        metallic=1,
        roughness=0.1,
    )
    assert data(result)["material"] == "Box_Material"
    snap = data(await ok(bridge, "scene.snapshot"))
    assert snap["objects"][0]["material_slots"] == ["Box_Material"]
    (material,) = snap["materials"]
    assert material["base_color"] == pytest.approx([0.2, 0.4, 0.6, 1.0])
    assert (material["metallic"], material["roughness"]) == (pytest.approx(1.0), pytest.approx(0.1))
    before = await bridge.fingerprint()
    await ok(
        bridge,
        "material.assign",
        object="Box",
        base_color=[0.2, 0.4, 0.6],
        metallic=1,
        roughness=0.1,
    )
    assert await bridge.fingerprint() == before


async def test_save_when_loaded_in_fresh_process_gives_same_hash(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await build_sample_scene(bridge)
    expected = await bridge.fingerprint()
    # Saving makes Blender print to stdout; the protocol must survive it.
    saved = await bridge.save(str(tmp_path / "nested" / "scene.blend"))
    assert saved.hash == expected and saved.bytes > 0
    assert (await bridge.save(str(tmp_path / "z.blend"), compress=True)).hash == expected
    fresh = BridgeProcess()
    try:
        await fresh.start()
        assert await fresh.load(saved.path) == expected
        assert await fresh.load(str(tmp_path / "z.blend")) == expected
    finally:
        await fresh.close()
    assert await bridge.fingerprint() == expected


async def test_fingerprint_when_same_build_in_two_processes_is_equal(bridge: BridgeProcess) -> None:
    await build_sample_scene(bridge)
    first = await bridge.fingerprint()
    other = BridgeProcess()
    try:
        await other.start()
        await build_sample_scene(other)
        assert await other.fingerprint() == first
    finally:
        await other.close()


async def test_fingerprint_when_twenty_objects_stays_fast(bridge: BridgeProcess) -> None:
    for i in range(20):
        await ok(bridge, "object.create", primitive="uv_sphere", name=f"S{i}", location=[i, 0, 0])
        await ok(bridge, "modifier.add", object=f"S{i}", type="SUBSURF")
    started = time.perf_counter()
    for _ in range(10):
        await bridge.fingerprint()
    # Includes the round trip; the in-bridge cost is a fraction of this.
    assert (time.perf_counter() - started) / 10 < 0.05


async def test_load_when_file_missing_raises_server_error(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    with pytest.raises(BridgeError) as info:
        await bridge.load(str(tmp_path / "missing.blend"))
    assert info.value.code == -32000
    assert "missing.blend" in str(info.value)
    assert bridge.alive


@pytest.mark.clause("001-§parse.2")
async def test_request_when_method_unknown_raises_method_not_found(bridge: BridgeProcess) -> None:
    with pytest.raises(BridgeError) as info:
        await bridge.request("blendmesh/teleport", Empty)
    assert info.value.code == -32601
    assert bridge.alive


@pytest.mark.clause("001-§parse.1", "001-§parse.2")
async def test_protocol_when_garbage_and_bad_requests_sent_bridge_survives() -> None:
    lines = [
        "this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "no/such"}),
        json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
        json.dumps({"jsonrpc": "1.0", "id": 3, "method": "ping"}),
        json.dumps(
            {"jsonrpc": "2.0", "id": 4, "method": "blendmesh/scene.load", "params": {"path": 5}}
        ),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "x", "arguments": []},
            }
        ),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"}),
    ]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.bridge",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=PROJECT_ROOT,
    )
    # Stdin EOF after the last line must end the bridge cleanly.
    stdout, stderr = await asyncio.wait_for(
        proc.communicate(("\n".join(lines) + "\n").encode()), 60
    )
    assert proc.returncode == 0, stderr.decode()
    responses = [json.loads(line) for line in stdout.decode().splitlines()]
    codes = [r.get("error", {}).get("code") for r in responses]
    assert codes == [-32700, -32601, -32600, -32600, -32602, -32602, None]
    assert responses[-1] == {"jsonrpc": "2.0", "id": 6, "result": {}}


@pytest.mark.clause("001-§timeouts.1", "001-§error-codes.7")
async def test_call_when_timeout_exceeded_kills_bridge() -> None:
    doomed = BridgeProcess()
    await doomed.start()
    try:
        for i in range(10):
            await ok(doomed, "object.create", primitive="monkey", name=f"M{i}")
        with pytest.raises(asyncio.TimeoutError):
            await doomed.call_tool("scene.snapshot", {}, mcp_call_id="slow", timeout=0.0001)
        assert not doomed.alive
        with pytest.raises(BridgeCrashed):
            await doomed.fingerprint()
    finally:
        await doomed.close()
        await doomed.close()
    assert not doomed.alive
