"""``blendmesh/scene.inspect`` on a real bpy bridge: what the guardians will read.

Scenes the tools cannot build yet (parents, Geometry Nodes groups) are written by a bpy
child process into a .blend, which the bridge then loads as it loads any revision.
"""

from __future__ import annotations

import asyncio
import math
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts.inspection import InspectedNodeGroup, InspectedObject, SceneInspection
from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()

HEADER = """
import sys
import bpy
import bmesh

bpy.ops.wm.read_factory_settings(use_empty=True)
scene = bpy.context.scene


def cube(name, size=2.0):
    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=size)
    bm.to_mesh(mesh)
    bm.free()
    ob = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(ob)
    return ob


def geometry_group(name):
    group = bpy.data.node_groups.new(name, "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    return group, group.nodes.new("NodeGroupInput"), group.nodes.new("NodeGroupOutput")
"""
FOOTER = """
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1])
"""


async def prepared(tmp_path: Path, body: str) -> Path:
    """A .blend written by a bpy child process running ``body``."""
    path = tmp_path / "prepared.blend"
    script = HEADER + textwrap.dedent(body) + FOOTER
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        str(path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()[-3000:]
    return path


_ids = iter(range(1, 1_000_000))


async def ok(bridge: BridgeProcess, tool: str, /, **arguments: Any) -> None:
    result = await bridge.call_tool(tool, arguments, mcp_call_id=f"inspect-{next(_ids)}")
    assert result.ok, result


def objects(scene: SceneInspection) -> dict[str, InspectedObject]:
    return {o.name: o for o in scene.objects}


def groups(scene: SceneInspection) -> dict[str, InspectedNodeGroup]:
    return {g.name: g for g in scene.node_groups}


async def test_inspect_when_cube_bevel_parent_and_material_describes_them(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    blend = await prepared(
        tmp_path,
        """
        base = cube("Base")
        base.location = (1.0, 2.0, 3.0)
        arm = cube("Arm", size=1.0)
        arm.parent = base
        arm.location = (0.0, 0.0, 1.5)
        arm.rotation_euler = (0.0, 0.0, 0.7853981633974483)
        arm.scale = (1.0, 2.0, 1.0)
        """,
    )
    await bridge.load(str(blend))
    await ok(bridge, "modifier.add", object="Base", type="BEVEL", properties={"segments": 3})
    await ok(bridge, "material.assign", object="Base", material="Red", base_color=[1, 0, 0])

    scene = await bridge.inspect()

    assert scene.blender_version == bridge.profile.version
    assert [o.name for o in scene.objects] == ["Arm", "Base"]
    base, arm = objects(scene)["Base"], objects(scene)["Arm"]
    assert (base.type, base.parent, base.data) == ("MESH", None, "Base")
    assert (arm.parent, arm.data) == ("Base", "Arm")
    assert base.location == [1.0, 2.0, 3.0] and base.dimensions == [2.0, 2.0, 2.0]
    assert arm.location == [0.0, 0.0, 1.5] and arm.scale == [1.0, 2.0, 1.0]
    assert arm.rotation_euler == [0.0, 0.0, round(math.pi / 4, 6)]
    assert arm.dimensions == [1.0, 2.0, 1.0]
    # Its origin in the world: the parent's location plus its own (no parent inverse here).
    assert base.world_location == [1.0, 2.0, 3.0] and arm.world_location == [1.0, 2.0, 4.5]
    assert [(m.name, m.type, m.show_viewport, m.error) for m in base.modifiers] == [
        ("Bevel", "BEVEL", True, None)
    ]
    assert base.materials == ["Red"] and arm.materials == []
    assert base.evaluated_vertices > 8 and base.evaluated_faces > 6  # the bevel's, evaluated
    assert (arm.evaluated_vertices, arm.evaluated_faces) == (8, 6)
    assert not (base.hide_viewport or base.hide_render)
    assert [(m.name, m.use_nodes, m.users) for m in scene.materials] == [("Red", True, 1)]
    assert scene.materials[0].base_color == [1.0, 0.0, 0.0, 1.0]  # linear RGBA, as set
    assert scene.node_groups == []  # a material's node tree is its own, not a group


GEOMETRY_NODES = """
holder = cube("Holder")
group, group_in, group_out = geometry_group("Unlinked")
transform = group.nodes.new("GeometryNodeTransform")
group.links.new(group_in.outputs[0], transform.inputs["Geometry"])
modifier = holder.modifiers.new("GeometryNodes", "NODES")
modifier.node_group = group
"""


async def test_inspect_when_group_output_unlinked_describes_nodes_and_links(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await bridge.load(str(await prepared(tmp_path, GEOMETRY_NODES)))

    scene = await bridge.inspect()

    holder = objects(scene)["Holder"]
    (modifier,) = holder.modifiers
    assert (modifier.type, modifier.node_group, modifier.error) == ("NODES", "Unlinked", None)
    assert (holder.evaluated_vertices, holder.evaluated_faces) == (0, 0)  # nothing reaches out
    group = groups(scene)["Unlinked"]
    assert (group.bl_idname, group.users) == ("GeometryNodeTree", 1)
    assert sorted((s.in_out, s.socket_type, s.name) for s in group.interface) == [
        ("INPUT", "NodeSocketGeometry", "Geometry"),
        ("OUTPUT", "NodeSocketGeometry", "Geometry"),
    ]
    assert [n.name for n in group.nodes] == ["Group Input", "Group Output", "Transform Geometry"]
    assert all(n.known for n in group.nodes)
    nodes = {n.name: n for n in group.nodes}
    assert [(s.type, s.is_linked) for s in nodes["Group Output"].inputs] == [("GEOMETRY", False)]
    assert [(s.type, s.is_linked) for s in nodes["Group Input"].outputs] == [("GEOMETRY", True)]
    transform = {s.identifier: s for s in nodes["Transform Geometry"].inputs}
    assert transform["Geometry"].is_linked and transform["Geometry"].default is None
    assert transform["Translation"].default == [0.0, 0.0, 0.0]
    assert transform["Scale"].default == [1.0, 1.0, 1.0]
    (link,) = group.links
    assert (link.from_node, link.from_type, link.to_node, link.to_socket) == (
        "Group Input",
        "GEOMETRY",
        "Transform Geometry",
        "Geometry",
    )
    assert link.from_socket == nodes["Group Input"].outputs[0].identifier
    assert link.valid and not link.muted


async def test_inspect_when_scene_loaded_twice_gives_identical_bytes(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    blend = await prepared(tmp_path, GEOMETRY_NODES)
    await bridge.load(str(blend))
    first = await bridge.inspect()
    await bridge.reset()
    await bridge.load(str(blend))
    second = await bridge.inspect()
    assert msgspec.json.encode(first, order="sorted") == msgspec.json.encode(second, order="sorted")


async def test_inspect_when_modifiers_cannot_evaluate_reports_why(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    # A node that reads a file would now be refused on load (outside files), so Blender's
    # own error comes from the manifold boolean given a grid, which is not manifold.
    blend = await prepared(
        tmp_path,
        """
        ob = cube("Broken")
        ob.modifiers.new("NoGroup", "NODES")
        ob.modifiers.new("NoOperand", "BOOLEAN")
        group, group_in, group_out = geometry_group("NotManifold")
        boolean = group.nodes.new("GeometryNodeMeshBoolean")
        boolean.solver = "MANIFOLD"
        grid = group.nodes.new("GeometryNodeMeshGrid")
        group.links.new(grid.outputs[0], boolean.inputs[0])
        group.links.new(group_in.outputs[0], boolean.inputs[1])
        group.links.new(boolean.outputs[0], group_out.inputs[0])
        ob.modifiers.new("NotManifold", "NODES").node_group = group
        mismatch, m_in, m_out = geometry_group("Mismatch")
        math_node = mismatch.nodes.new("ShaderNodeMath")
        mismatch.links.new(m_in.outputs[0], math_node.inputs[0])
        mismatch.links.new(m_in.outputs[0], m_out.inputs[0])
        ob.modifiers.new("Mismatch", "NODES").node_group = mismatch
        empty = bpy.data.node_groups.new("Empty", "GeometryNodeTree")
        empty.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
        ob.modifiers.new("NoOutput", "NODES").node_group = empty
        ob.modifiers.new("Bevel", "BEVEL")
        """,
    )
    await bridge.load(str(blend))

    scene = await bridge.inspect()

    errors = {m.name: m.error for m in objects(scene)["Broken"].modifiers}
    assert errors["NoGroup"] == "no node group: the modifier is skipped"
    assert errors["NoOperand"] == "no operand object: the modifier is skipped"
    assert errors["NoOutput"] == "node group 'Empty' has no Group Output node"
    # Blender's own Geometry Nodes log, as NodesModifier.node_warnings reports it.
    assert errors["NotManifold"] == "An input was not manifold"
    assert errors["Mismatch"] is None and errors["Bevel"] is None
    links = {(k.from_node, k.to_node): k for k in groups(scene)["Mismatch"].links}
    assert not links[("Group Input", "Math")].valid  # a geometry cannot become a number
    assert links[("Group Input", "Group Output")].valid
    (math_node,) = [n for n in groups(scene)["Mismatch"].nodes if n.name == "Math"]
    math_inputs = {s.identifier: s for s in math_node.inputs}
    assert math_inputs["Value_001"].default == 0.5 and math_inputs["Value_002"].enabled is False
