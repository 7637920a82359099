"""Integration tests: modifier.apply, NODES through modifier.add, and what the snapshot,
the checkpoint round trip and the inspection make of the artist tools, on real bpy."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from contracts.bridge import Compensation, ToolResult
from contracts.inspection import InspectedCamera, InspectedLight
from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()

# The snapshot keys of an object and of a scene that use none of the artist tools: the
# hashes of revisions stored before these tools existed must not change.
PLAIN_OBJECT_KEYS = {
    "name", "type", "parent", "location", "rotation", "scale", "data", "modifiers",
    "material_slots", "mesh",
}  # fmt: skip
CUBE_SUBDIVIDED_ONCE = 26  # 8 corners + 12 edge points + 6 face points
# A scene the tools cannot make, written by a bpy child process: a cube turned by a
# quaternion, a cube with shape keys, a child with a parent-inverse matrix, a world without
# a Background node.
UNUSUAL_SCENE = """
import sys
import bpy
import bmesh
from mathutils import Matrix

bpy.ops.wm.read_factory_settings(use_empty=True)
scene = bpy.context.scene


def cube(name):
    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=2.0)
    bm.to_mesh(mesh)
    bm.free()
    ob = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(ob)
    return ob


cube("Turned").rotation_mode = "QUATERNION"
keyed = cube("Keyed")
keyed.shape_key_add(name="Basis")
keyed.modifiers.new("Subdivision", "SUBSURF")
child = cube("Child")
child.parent = cube("Holder")
child.matrix_parent_inverse = Matrix.Translation((1.0, 0.0, 0.0))
world = bpy.data.worlds.new("Plain")
for node in list(world.node_tree.nodes):
    world.node_tree.nodes.remove(node)
scene.world = world
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1])
"""


def data(result: ToolResult) -> dict[str, Any]:
    assert result.data is not None, result
    return result.data


async def snapshot(bridge: BridgeProcess) -> dict[str, Any]:
    return data(await ok(bridge, "scene.snapshot"))


async def objects(bridge: BridgeProcess) -> dict[str, dict[str, Any]]:
    return {o["name"]: o for o in (await snapshot(bridge))["objects"]}


async def refused(bridge: BridgeProcess, code: str, tool: str, /, **arguments: Any) -> str:
    """Call a tool that must fail with ``code`` and leave the scene as it was."""
    before = await bridge.fingerprint()
    result = await call(bridge, tool, **arguments)
    assert not result.ok and result.error_code == code, result
    assert not result.mutated, result
    assert await bridge.fingerprint() == before
    return result.message


async def compensate(bridge: BridgeProcess, result: ToolResult) -> None:
    comp = result.compensation
    assert comp is not None, result
    await ok(bridge, comp.tool, **comp.arguments)


async def load_unusual_scene(bridge: BridgeProcess, tmp_path: Path) -> None:
    path = tmp_path / "unusual.blend"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", UNUSUAL_SCENE, str(path), stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()[-3000:]
    await bridge.load(str(path))


# modifier.apply --------------------------------------------------------------------------


async def test_modifier_apply_when_subsurf_bakes_mesh_and_leaves_stack(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "modifier.add", object="Box", type="SUBSURF")
    before = await bridge.fingerprint()
    result = await ok(bridge, "modifier.apply", object="Box", modifier="Subdivision")
    assert data(result)["vertices"] == CUBE_SUBDIVIDED_ONCE
    assert result.compensation is None  # destructive: undone by checkpoint
    box = (await objects(bridge))["Box"]
    assert (box["data"], box["modifiers"]) == ("Box", [])
    assert box["mesh"]["vertices"] == CUBE_SUBDIVIDED_ONCE
    assert await bridge.fingerprint() != before


async def test_modifier_apply_when_not_first_applies_only_that_modifier(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "modifier.add", object="Box", type="ARRAY", properties={"count": 3})
    await ok(bridge, "modifier.add", object="Box", type="SUBSURF")
    await ok(bridge, "modifier.apply", object="Box", modifier="Subdivision")
    box = (await objects(bridge))["Box"]
    assert box["mesh"]["vertices"] == CUBE_SUBDIVIDED_ONCE
    assert [(m["name"], m["properties"]["show_viewport"]) for m in box["modifiers"]] == [
        ("Array", True)
    ]


async def test_modifier_apply_when_checkpoint_restored_returns_to_the_same_hash(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "modifier.add", object="Box", type="BEVEL", properties={"segments": 2})
    checkpoint = await bridge.save(str(tmp_path / "before.blend"))
    await ok(bridge, "modifier.apply", object="Box", modifier="Bevel")
    assert await bridge.load(checkpoint.path) == checkpoint.hash


async def test_modifier_apply_when_mesh_cannot_take_it_refuses_without_change(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "modifier.add", object="Box", type="SUBSURF")
    await ok(bridge, "object.duplicate", name="Box", new_name="Twin", linked=True)
    message = await refused(
        bridge, "invalid_input", "modifier.apply", object="Box", modifier="Subdivision"
    )
    assert "shared" in message and "linked=false" in message
    await ok(bridge, "object.create", primitive="plane", name="Floor")
    message = await refused(bridge, "not_found", "modifier.apply", object="Floor", modifier="Bevel")
    assert "Bevel" in message
    await refused(bridge, "not_found", "modifier.apply", object="Ghost", modifier="Bevel")
    await ok(bridge, "camera.create")
    message = await refused(
        bridge, "invalid_input", "modifier.apply", object="Camera", modifier="X"
    )
    assert "CAMERA" in message


# NODES through modifier.add ---------------------------------------------------------------


async def test_modifier_add_nodes_when_no_group_given_creates_pass_through_group(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    before = await bridge.fingerprint()
    result = await ok(bridge, "modifier.add", object="Box", type="NODES")
    assert data(result)["name"] == "GeometryNodes"
    assert data(result)["properties"]["node_group"] == "GeometryNodes_Group"
    assert result.compensation == Compensation(
        tool="gn.remove_target",
        arguments={
            "object": "Box",
            "modifier": "GeometryNodes",
            "remove_modifier": True,
            "delete_node_group": True,
        },
    )
    (group,) = (await snapshot(bridge))["node_groups"]
    assert group["links"] == [["group_input", "Socket_0", "group_output", "Socket_1", 0, False]]
    # A pass-through group changes no geometry.
    inspected = await bridge.inspect()
    assert inspected.objects[0].evaluated_vertices == 8
    assert inspected.objects[0].modifiers[0].error is None
    await compensate(bridge, result)
    assert await bridge.fingerprint() == before
    # The group went with it: its name is free for the next modifier.add.
    await ok(bridge, "modifier.add", object="Box", type="NODES")


async def test_modifier_add_nodes_when_group_named_shares_it_and_set_remove_work(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "object.create", primitive="plane", name="Floor")
    await ok(bridge, "modifier.add", object="Box", type="NODES", name="Shape")
    before = await bridge.fingerprint()
    shared = await ok(
        bridge, "modifier.add", object="Floor", type="NODES", node_group="Shape_Group"
    )
    assert shared.compensation == Compensation(
        tool="modifier.remove", arguments={"object": "Floor", "name": "GeometryNodes"}
    )
    assert len((await snapshot(bridge))["node_groups"]) == 1
    changed = await ok(
        bridge,
        "modifier.set",
        object="Floor",
        name="GeometryNodes",
        properties={"show_viewport": False},
    )
    await compensate(bridge, changed)
    removed = await ok(bridge, "modifier.remove", object="Floor", name="GeometryNodes")
    assert removed.compensation is None  # input values live outside RNA: checkpoint
    assert await bridge.fingerprint() == before


async def test_modifier_add_nodes_when_group_wrong_refuses_without_change(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    message = await refused(
        bridge, "not_found", "modifier.add", object="Box", type="NODES", node_group="Rocks"
    )
    assert "Rocks" in message
    message = await refused(
        bridge, "invalid_input", "modifier.add", object="Box", type="BEVEL", node_group="Rocks"
    )
    assert "NODES" in message
    await ok(bridge, "modifier.add", object="Box", type="NODES")
    message = await refused(
        bridge, "conflict", "modifier.add", object="Box", type="NODES", name="GeometryNodes"
    )
    assert "GeometryNodes" in message
    await ok(bridge, "object.create", primitive="plane", name="Floor")
    message = await refused(bridge, "conflict", "modifier.add", object="Floor", type="NODES")
    assert "GeometryNodes_Group" in message and "node_group" in message
    message = await refused(
        bridge,
        "invalid_input",
        "modifier.add",
        object="Floor",
        type="NODES",
        node_group="GeometryNodes_Group",
        properties={"node_group": "Other"},
    )
    assert "differ" in message


async def test_modifier_apply_when_nodes_pass_through_keeps_geometry(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "modifier.add", object="Box", type="NODES")
    await ok(bridge, "modifier.apply", object="Box", modifier="GeometryNodes")
    box = (await objects(bridge))["Box"]
    assert (box["modifiers"], box["mesh"]["vertices"]) == ([], 8)


# Snapshot, checkpoint and inspection -----------------------------------------------------


async def test_snapshot_when_no_artist_tool_used_has_no_new_entries(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "modifier.add", object="Box", type="BEVEL")
    await ok(bridge, "material.assign", object="Box", base_color=[1, 0, 0])
    snap = await snapshot(bridge)
    assert set(snap) == {"objects", "materials", "hash"}
    assert set(snap["objects"][0]) == PLAIN_OBJECT_KEYS


async def build_artist_scene(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box", location=[0, 0, 1])
    await ok(bridge, "object.create", primitive="plane", name="Floor")
    await ok(bridge, "camera.create", location=[0, -8, 3], look_at_object="Box", lens=40)
    await ok(bridge, "light.create", kind="area", location=[2, -2, 4], power=300, size=2)
    await ok(bridge, "world.set", color=[0.05, 0.05, 0.1], strength=0.5)
    await ok(bridge, "object.duplicate", name="Box", new_name="Box2", offset=[2, 0, 0])
    await ok(bridge, "object.parent", child="Box2", parent="Box")
    await ok(bridge, "object.shade", name="Box", smooth=True)
    await ok(bridge, "collection.create", name="Props")
    await ok(bridge, "collection.move", objects=["Box", "Box2"], collection="Props")
    await ok(bridge, "object.visibility", name="Floor", render=False)
    await ok(bridge, "keyframe.insert", name="Box", property="rotation", frame=1)
    await ok(bridge, "keyframe.insert", name="Box", property="rotation", frame=48, value=[0, 0, 90])
    await ok(bridge, "modifier.add", object="Floor", type="NODES")


async def test_checkpoint_when_every_artist_tool_used_round_trips_the_hash(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await build_artist_scene(bridge)
    built = await bridge.fingerprint()
    saved = await bridge.save(str(tmp_path / "artist.blend"))
    assert saved.hash == built
    await bridge.reset()
    assert await bridge.load(saved.path) == built
    snap = await snapshot(bridge)
    assert (snap["active_camera"], snap["world"]["strength"]) == ("Camera", 0.5)
    found = {o["name"]: o for o in snap["objects"]}
    assert found["Box2"]["parent"] == "Box"
    assert found["Floor"]["hidden"] == ["render"]
    assert found["Area"]["light"]["type"] == "AREA"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("camera.set", {"name": "Camera", "lens": 41}),
        ("camera.set_active", {"name": "Camera.001"}),
        ("light.set", {"name": "Area", "color": [1, 0, 0]}),
        ("world.set", {"color": [0.2, 0.2, 0.2]}),
        ("object.unparent", {"name": "Box2"}),
        ("object.shade", {"name": "Box", "smooth": False}),
        ("collection.create", {"name": "Empty"}),
        ("collection.move", {"objects": ["Box2"], "collection": "Scene Collection"}),
        ("object.visibility", {"name": "Box", "viewport": False}),
        ("keyframe.insert", {"name": "Box", "property": "location", "frame": 10}),
    ],
)
async def test_fingerprint_when_an_artist_tool_changes_the_scene_changes(
    bridge: BridgeProcess, tool: str, arguments: dict[str, Any]
) -> None:
    await build_artist_scene(bridge)
    await ok(bridge, "camera.create", name="Camera.001", make_active=False)
    before = await bridge.fingerprint()
    result = await ok(bridge, tool, **arguments)
    assert result.mutated is True
    assert await bridge.fingerprint() != before


async def test_inspect_when_cameras_and_lights_exist_describes_them(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "camera.create", name="Main", lens=35)
    await ok(bridge, "camera.create", name="Side")
    await ok(bridge, "light.create", kind="sun", power=4, color=[1, 0.9, 0.8], size=2)
    await ok(bridge, "object.create", primitive="cube", name="Box")
    scene = await bridge.inspect()
    assert scene.active_camera == "Main"
    found = {o.name: o for o in scene.objects}
    assert found["Main"].camera == InspectedCamera(lens=35.0, type="PERSP")
    assert found["Sun"].light == InspectedLight(
        kind="SUN", power=4.0, color=[1.0, 0.9, 0.8], size=2.0
    )
    assert (found["Box"].camera, found["Box"].light) == (None, None)


async def test_tools_when_scene_was_made_elsewhere_refuse_what_they_cannot_do(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await load_unusual_scene(bridge, tmp_path)
    message = await refused(
        bridge, "invalid_input", "keyframe.insert", name="Turned", property="rotation", frame=1
    )
    assert "QUATERNION" in message
    message = await refused(
        bridge, "invalid_input", "modifier.apply", object="Keyed", modifier="Subdivision"
    )
    assert "shape keys" in message
    message = await refused(bridge, "invalid_input", "world.set", strength=2)
    assert "Plain" in message and "Background" in message
    await ok(bridge, "world.set", color=[0.2, 0.3, 0.4])
    assert (await snapshot(bridge))["world"] == {
        "name": "Plain",
        "color": [0.2, 0.3, 0.4],
        "strength": None,
    }


async def test_object_unparent_when_parent_inverse_set_keeps_world_place(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await load_unusual_scene(bridge, tmp_path)
    child = (await objects(bridge))["Child"]
    assert child["parent_inverse"][0] == [1.0, 0.0, 0.0, 1.0]
    assert child["location"] == [0.0, 0.0, 0.0]
    await ok(bridge, "object.unparent", name="Child")
    child = (await objects(bridge))["Child"]
    assert "parent_inverse" not in child
    assert child["location"] == [1.0, 0.0, 0.0]
    # Parenting again with the tool keeps it there, without a parent-inverse matrix.
    await ok(bridge, "object.parent", child="Child", parent="Holder")
    child = (await objects(bridge))["Child"]
    assert ("parent_inverse" in child, child["location"]) == (False, [1.0, 0.0, 0.0])
