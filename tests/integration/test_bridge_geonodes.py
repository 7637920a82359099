"""Integration tests: the gn.* tools and the node catalog, on real bpy in a real bridge."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from contracts.bridge import ToolResult
from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()

T = {"object": "Plane", "modifier": "GeometryNodes"}
GN_TOOLS = {
    "gn.ensure_target",
    "gn.remove_target",
    "gn.ensure_group_io",
    "gn.set_group_io",
    "gn.remove_group_io",
    "gn.add_node",
    "gn.remove_node",
    "gn.restore_node",
    "gn.set_input",
    "gn.set_property",
    "gn.link",
    "gn.unlink",
    "gn.cleanup_unused",
}
# Distribute Points on Faces, RANDOM, density 23.3 on the 2 x 2 plane, seed 7: measured once.
SCATTER_POINTS = 94
CUBE_VERTICES = 8
PLANE_VERTICES = 4


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


async def undone(bridge: BridgeProcess, tool: str, /, **arguments: Any) -> ToolResult:
    """Call a tool that changes the scene, then its compensation: the scene is back."""
    before = await bridge.fingerprint()
    result = await ok(bridge, tool, **arguments)
    assert result.mutated and await bridge.fingerprint() != before
    await compensate(bridge, result)
    assert await bridge.fingerprint() == before
    return result


async def plane_with_target(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="plane", name="Plane")
    await ok(bridge, "gn.ensure_target", **T, allow_create_modifier=True)


async def group(bridge: BridgeProcess, name: str = "GeometryNodes_Group") -> dict[str, Any]:
    snap = (await ok(bridge, "scene.snapshot")).data
    assert snap is not None
    return next(g for g in snap["node_groups"] if g["name"] == name)


async def nodes(bridge: BridgeProcess) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in (await group(bridge))["nodes"]}


async def links(bridge: BridgeProcess) -> list[tuple[str, str, str, str]]:
    return [tuple(k[:4]) for k in (await group(bridge))["links"]]


async def value(bridge: BridgeProcess, node: str, socket: str) -> Any:
    inputs = (await nodes(bridge))[node]["inputs"]
    return next(default for ident, _, default in inputs if ident == socket)


async def add(bridge: BridgeProcess, node_id: str, bl_idname: str) -> None:
    await ok(bridge, "gn.add_node", **T, node_id=node_id, bl_idname=bl_idname)


async def link(bridge: BridgeProcess, a: str, out: str, b: str, into: str) -> ToolResult:
    ends = {"from_node": a, "from_socket": out, "to_node": b, "to_socket": into}
    return await ok(bridge, "gn.link", **T, **ends)


async def build_scatter(bridge: BridgeProcess) -> None:
    await plane_with_target(bridge)
    await add(bridge, "scatter", "GeometryNodeDistributePointsOnFaces")
    await add(bridge, "pebble", "GeometryNodeMeshCube")
    await add(bridge, "instances", "GeometryNodeInstanceOnPoints")
    await add(bridge, "realize", "GeometryNodeRealizeInstances")
    await add(bridge, "join", "GeometryNodeJoinGeometry")
    await ok(
        bridge,
        "gn.set_property",
        **T,
        node_id="scatter",
        property="distribute_method",
        value="RANDOM",
    )
    await ok(bridge, "gn.set_input", **T, node_id="scatter", socket="Density", value=23.3)
    await ok(bridge, "gn.set_input", **T, node_id="scatter", socket="Seed", value=7)
    await ok(bridge, "gn.set_input", **T, node_id="pebble", socket="Size", value=[0.1, 0.1, 0.1])
    await link(bridge, "group_input", "Geometry", "scatter", "Mesh")
    await link(bridge, "scatter", "Points", "instances", "Points")
    await link(bridge, "pebble", "Mesh", "instances", "Instance")
    await link(bridge, "instances", "Instances", "realize", "Geometry")
    await link(bridge, "group_input", "Geometry", "join", "Geometry")
    await link(bridge, "realize", "Geometry", "join", "Geometry")
    await link(bridge, "join", "Geometry", "group_output", "Geometry")


async def evaluated_vertices(bridge: BridgeProcess, name: str = "Plane") -> int:
    inspection = await bridge.inspect()
    (ob,) = [o for o in inspection.objects if o.name == name]
    assert all(m.error is None for m in ob.modifiers), ob.modifiers
    return ob.evaluated_vertices


# The tool list


async def test_tools_list_when_started_declares_gn_tools_and_their_inverses(
    bridge: BridgeProcess,
) -> None:
    tools = {t["name"]: t for t in await bridge.list_tools()}
    assert set(tools) >= GN_TOOLS
    for name in GN_TOOLS:
        meta = tools[name]["_meta"]["blendmesh"]
        expected = "destructive" if name == "gn.remove_target" else "safe_write"
        assert meta["safety_level"] == expected, name
        assert meta["compensation"] in set(tools) | {"checkpoint"}, name
        assert tools[name]["inputSchema"]["additionalProperties"] is False
        assert tools[name]["inputSchema"]["required"][:2] == ["object", "modifier"]


# gn.ensure_target


async def test_ensure_target_when_allowed_creates_modifier_and_linked_group(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="plane", name="Plane")
    result = await undone(bridge, "gn.ensure_target", **T, allow_create_modifier=True)
    assert result.data == {
        "object": "Plane",
        "modifier": "GeometryNodes",
        "node_group": "GeometryNodes_Group",
        "created_modifier": True,
        "created_node_group": True,
    }
    await ok(bridge, "gn.ensure_target", **T, allow_create_modifier=True)
    made = await group(bridge)
    assert [(s[0], s[1], s[2]) for s in made["interface"]] == [
        ("OUTPUT", "Geometry", "NodeSocketGeometry"),
        ("INPUT", "Geometry", "NodeSocketGeometry"),
    ]
    by_name = {n["name"]: n["bl_idname"] for n in made["nodes"]}
    assert by_name == {"group_input": "NodeGroupInput", "group_output": "NodeGroupOutput"}
    assert [k[0:4:2] for k in made["links"]] == [["group_input", "group_output"]]
    assert await evaluated_vertices(bridge) == PLANE_VERTICES


async def test_ensure_target_when_modifier_missing_and_not_allowed_says_how(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="plane", name="Plane")
    message = await refused(bridge, "not_found", "gn.ensure_target", **T)
    assert "allow_create_modifier" in message
    await refused(bridge, "not_found", "gn.ensure_target", object="Nope", modifier="GN")


async def test_ensure_target_when_target_exists_changes_nothing_and_undoes_to_nothing(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    before = await bridge.fingerprint()
    result = await ok(bridge, "gn.ensure_target", **T, node_group="GeometryNodes_Group")
    assert not result.mutated and await bridge.fingerprint() == before
    await compensate(bridge, result)
    assert await bridge.fingerprint() == before


async def test_ensure_target_when_modifier_has_another_group_or_type_is_a_conflict(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    message = await refused(bridge, "conflict", "gn.ensure_target", **T, node_group="Other")
    assert "GeometryNodes_Group" in message
    await ok(bridge, "modifier.add", object="Plane", type="BEVEL", name="Bevel")
    await refused(bridge, "conflict", "gn.ensure_target", object="Plane", modifier="Bevel")


async def test_ensure_target_when_group_named_uses_that_name(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="plane", name="Plane")
    result = await undone(
        bridge, "gn.ensure_target", **T, node_group="GN_Scatter", allow_create_modifier=True
    )
    assert result.data is not None and result.data["node_group"] == "GN_Scatter"


# gn.ensure_group_io


async def test_ensure_group_io_when_duplicated_and_misnamed_leaves_one_of_each(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    await add(bridge, "blur", "GeometryNodeSubdivisionSurface")
    await link(bridge, "blur", "Mesh", "group_output", "Geometry")
    extra = {
        "nodes": [
            {"node_id": "Group Input.001", "bl_idname": "NodeGroupInput", "location": [0, 300]},
            {"node_id": "Group Output.001", "bl_idname": "NodeGroupOutput"},
        ],
        "links": [
            {
                "from_node": "Group Input.001",
                "from_socket": "Socket_0",
                "to_node": "blur",
                "to_socket": "Mesh",
            },
        ],
        "rename": [{"node_id": "group_input", "name": "Group Input"}],
    }
    await ok(bridge, "gn.restore_node", **T, **extra)
    result = await undone(bridge, "gn.ensure_group_io", **T)
    assert result.data == {
        "removed": ["Group Input.001", "Group Output.001"],
        "renamed": ["Group Input"],
        "created": [],
    }
    await ok(bridge, "gn.ensure_group_io", **T)
    found = await nodes(bridge)
    assert sorted(found) == ["blur", "group_input", "group_output"]
    assert ("group_input", "Socket_0", "blur", "Mesh") in await links(bridge)
    again = await ok(bridge, "gn.ensure_group_io", **T)
    assert not again.mutated


async def test_ensure_group_io_when_missing_creates_and_when_name_taken_refuses(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    await ok(bridge, "gn.remove_node", **T, node_id="group_output")
    result = await undone(bridge, "gn.ensure_group_io", **T)
    assert result.data is not None and result.data["created"] == ["group_output"]
    await ok(bridge, "gn.remove_node", **T, node_id="group_input")
    await add(bridge, "group_input", "ShaderNodeMath")
    message = await refused(bridge, "conflict", "gn.ensure_group_io", **T)
    assert "ShaderNodeMath" in message


# gn.add_node, gn.remove_node, gn.restore_node


@pytest.mark.clause("001-§idempotence.3")
async def test_add_node_when_new_names_it_by_id_and_lists_its_sockets(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    result = await undone(
        bridge,
        "gn.add_node",
        **T,
        node_id="n1",
        bl_idname="GeometryNodeSubdivisionSurface",
        location=[100, 200],
    )
    assert result.data is not None and "'Level' (INT)" in result.data["inputs"]
    await add(bridge, "n1", "GeometryNodeSubdivisionSurface")
    made = (await nodes(bridge))["n1"]
    assert made["label"] == "n1" and made["location"] == [0.0, 0.0]


async def test_add_node_when_id_taken_or_type_unknown_refuses(bridge: BridgeProcess) -> None:
    await plane_with_target(bridge)
    await add(bridge, "n1", "ShaderNodeMath")
    args = {**T, "node_id": "n1", "bl_idname": "ShaderNodeMath"}
    await refused(bridge, "conflict", "gn.add_node", **args)
    message = await refused(
        bridge,
        "invalid_input",
        "gn.add_node",
        **{**args, "node_id": "n2", "bl_idname": "GeometryNodeNoSuchThing"},
    )
    assert "unknown node type 'GeometryNodeNoSuchThing'" in message
    # A shader-only node is no Geometry Node either.
    await refused(
        bridge,
        "invalid_input",
        "gn.add_node",
        **{**args, "node_id": "n2", "bl_idname": "ShaderNodeBsdfPrincipled"},
    )
    await refused(
        bridge,
        "invalid_input",
        "gn.add_node",
        **{**args, "node_id": "n2", "bl_idname": "NodeGroupInput"},
    )


async def test_add_node_when_id_too_long_or_has_control_character_refuses(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    for bad in ("n" * 64, "a\nb"):
        await refused(
            bridge, "invalid_input", "gn.add_node", **T, node_id=bad, bl_idname="ShaderNodeMath"
        )


async def test_gn_tools_when_arguments_are_hostile_refuse_before_changing_anything(
    bridge: BridgeProcess,
) -> None:
    """What a model could send first: a location far away, wrong types, and a restore call
    (a tool any plan may name) carrying more nodes than any compensation records."""
    await plane_with_target(bridge)
    math = {**T, "node_id": "n1", "bl_idname": "ShaderNodeMath"}
    await refused(bridge, "invalid_input", "gn.add_node", **math, location=[1e30, 0])
    await refused(bridge, "invalid_input", "gn.add_node", **{**math, "node_id": 7})
    await refused(bridge, "invalid_input", "gn.add_node", **math, location="here")
    many = [{"node_id": f"n{i}", "bl_idname": "ShaderNodeMath"} for i in range(1001)]
    await refused(bridge, "invalid_input", "gn.restore_node", **T, nodes=many)
    wide = {"node_id": "n1", "bl_idname": "ShaderNodeMath",
            "inputs": {f"s{i}": 0 for i in range(257)}}  # fmt: skip
    await refused(bridge, "invalid_input", "gn.restore_node", **T, nodes=[wide])


async def test_remove_node_when_linked_into_join_restores_node_links_and_order(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    for node_id, bl_idname in (
        ("a", "GeometryNodeMeshCube"),
        ("b", "GeometryNodeMeshCone"),
        ("c", "GeometryNodeMeshGrid"),
        ("join", "GeometryNodeJoinGeometry"),
    ):
        await add(bridge, node_id, bl_idname)
    await ok(bridge, "gn.set_input", **T, node_id="b", socket="Vertices", value=5)
    for source in ("a", "b", "c"):
        await link(bridge, source, "Mesh", "join", "Geometry")
    await link(bridge, "join", "Geometry", "group_output", "Geometry")
    ranks = [k[4] for k in (await group(bridge))["links"] if k[2] == "join"]
    assert sorted(ranks) == [0, 1, 2]
    result = await undone(bridge, "gn.remove_node", **T, node_id="b")
    assert result.compensation is not None and result.compensation.tool == "gn.restore_node"
    assert await value(bridge, "b", "Vertices") == 5
    await undone(bridge, "gn.remove_node", **T, node_id="join")


async def test_remove_node_when_missing_refuses_and_when_unrecordable_has_no_inverse(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    message = await refused(bridge, "not_found", "gn.remove_node", **T, node_id="ghost")
    assert "group_input" in message
    await add(bridge, "ramp", "ShaderNodeValToRGB")
    result = await ok(bridge, "gn.remove_node", **T, node_id="ramp")
    assert result.compensation is None  # a Color Ramp's stops: the checkpoint restores it


async def test_restore_node_when_node_exists_refuses_as_conflict(bridge: BridgeProcess) -> None:
    await plane_with_target(bridge)
    result = await call(
        bridge,
        "gn.restore_node",
        **T,
        nodes=[{"node_id": "group_input", "bl_idname": "ShaderNodeMath"}],
    )
    assert not result.ok and result.error_code == "conflict"


# gn.set_input


async def test_set_input_when_values_fit_sets_them_and_undoes(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Rock")
    await plane_with_target(bridge)
    await add(bridge, "sub", "GeometryNodeSubdivisionSurface")
    await add(bridge, "info", "GeometryNodeObjectInfo")
    await add(bridge, "cube", "GeometryNodeMeshCube")
    await add(bridge, "math", "ShaderNodeMath")
    await add(bridge, "col", "FunctionNodeCombineColor")
    cases = [
        ("sub", "Level", 3),
        ("sub", "Edge Crease", 0.25),
        ("sub", "Limit Surface", False),
        ("sub", "UV Smooth", "Keep Corners"),
        ("info", "Object", "Rock"),
        ("info", "As Instance", True),
        ("cube", "Size", [1, 2, 3]),
        ("math", "Value_001", -4.5),
        ("col", "Red", 0.5),
    ]
    for node_id, socket, wanted in cases:
        await undone(bridge, "gn.set_input", **T, node_id=node_id, socket=socket, value=wanted)
        await ok(bridge, "gn.set_input", **T, node_id=node_id, socket=socket, value=wanted)
    assert await value(bridge, "sub", "Level") == 3
    assert await value(bridge, "info", "Object") == "Rock"
    assert await value(bridge, "cube", "Size") == [1.0, 2.0, 3.0]
    assert await value(bridge, "math", "Value_001") == -4.5


@pytest.mark.parametrize(
    ("node_id", "socket", "wrong", "says"),
    [
        ("sub", "Edge Crease", 5.0, "outside [0, 1]"),
        ("sub", "Level", 2.5, "expected an integer"),
        ("sub", "Level", 7, "at most 6"),
        ("sub", "Limit Surface", 1, "expected a boolean"),
        ("sub", "Mesh", 1, "link a node into it"),
        ("cube", "Size", [1, 2], "list of 3 values"),
        ("info", "Object", "Ghost", "does not exist"),
        ("sub", "Nope", 1, "'Level' (INT)"),
        ("sub", "Level", "two", "expected a number"),
        ("sub", "UV Smooth", "Sharp", "'Keep Corners'"),
    ],
)
async def test_set_input_when_value_does_not_fit_refuses_naming_why(
    bridge: BridgeProcess, node_id: str, socket: str, wrong: Any, says: str
) -> None:
    await plane_with_target(bridge)
    await add(bridge, "sub", "GeometryNodeSubdivisionSurface")
    await add(bridge, "info", "GeometryNodeObjectInfo")
    await add(bridge, "cube", "GeometryNodeMeshCube")
    result = await call(bridge, "gn.set_input", **T, node_id=node_id, socket=socket, value=wrong)
    assert not result.ok and not result.mutated
    assert result.error_code in ("invalid_input", "not_found")
    assert says in result.message, result.message


async def test_set_input_when_color_takes_four_floats(bridge: BridgeProcess) -> None:
    await plane_with_target(bridge)
    await add(bridge, "mix", "ShaderNodeMix")
    await ok(bridge, "gn.set_property", **T, node_id="mix", property="data_type", value="RGBA")
    await undone(bridge, "gn.set_input", **T, node_id="mix", socket="A", value=[1, 0, 0, 1])
    await refused(
        bridge, "invalid_input", "gn.set_input", **T, node_id="mix", socket="A", value=[1, 0, 0]
    )


# gn.set_property


async def test_set_property_when_enum_item_valid_sets_it_and_undoes(bridge: BridgeProcess) -> None:
    await plane_with_target(bridge)
    await add(bridge, "scatter", "GeometryNodeDistributePointsOnFaces")
    await add(bridge, "cmp", "FunctionNodeCompare")
    result = await undone(
        bridge,
        "gn.set_property",
        **T,
        node_id="scatter",
        property="distribute_method",
        value="POISSON",
    )
    assert result.data is not None and "'Distance Min' (VALUE)" in result.data["inputs"]
    await undone(bridge, "gn.set_property", **T, node_id="cmp", property="data_type", value="INT")
    await undone(bridge, "gn.set_property", **T, node_id="cmp", property="operation", value="EQUAL")


@pytest.mark.parametrize(
    ("prop", "wrong", "says"),
    [
        ("data_type", "NOPE", "expected one of"),
        ("data_type", "GEOMETRY", "'FLOAT', 'INT', 'VECTOR', 'RGBA', 'STRING'"),  # declared only
        ("location", [1, 2], "no settable property 'location'"),
        ("operation", 3, "expected one of"),
    ],
)
async def test_set_property_when_value_not_accepted_refuses_naming_items(
    bridge: BridgeProcess, prop: str, wrong: Any, says: str
) -> None:
    await plane_with_target(bridge)
    await add(bridge, "cmp", "FunctionNodeCompare")
    message = await refused(
        bridge, "invalid_input", "gn.set_property", **T, node_id="cmp", property=prop, value=wrong
    )
    assert says in message


# gn.link and gn.unlink


@pytest.mark.clause("001-§idempotence.1")
async def test_link_when_compatible_links_and_undoes_and_again_is_a_no_op(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    await add(bridge, "sub", "GeometryNodeSubdivisionSurface")
    ends = {
        "from_node": "group_input",
        "from_socket": "Geometry",
        "to_node": "sub",
        "to_socket": "Mesh",
    }
    result = await undone(bridge, "gn.link", **T, **ends)
    assert result.compensation is not None and result.compensation.tool == "gn.unlink"
    await ok(bridge, "gn.link", **T, **ends)
    before = await bridge.fingerprint()
    again = await ok(bridge, "gn.link", **T, **ends)
    assert not again.mutated and await bridge.fingerprint() == before


async def test_link_when_input_taken_replaces_it_and_undo_puts_it_back(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    await add(bridge, "sub", "GeometryNodeSubdivisionSurface")
    await link(bridge, "group_input", "Geometry", "sub", "Mesh")
    result = await undone(
        bridge,
        "gn.link",
        **T,
        from_node="sub",
        from_socket="Mesh",
        to_node="group_output",
        to_socket="Geometry",
    )
    assert result.data is not None and result.data["replaced"]["from_node"] == "group_input"
    await link(bridge, "sub", "Mesh", "group_output", "Geometry")
    assert ("group_input", "Socket_0", "group_output", "Socket_1") not in await links(bridge)


@pytest.mark.parametrize(
    ("ends", "says"),
    [
        (("cube", "Mesh", "math", "Value"), "GEOMETRY"),
        (("pos", "Position", "grid", "Size X"), "single value"),
        (("sub", "Mesh", "group_input", "Geometry"), "is an output"),
        (("group_output", "Geometry", "sub", "Mesh"), "is an input"),
        (("sub", "Mesh", "sub", "Mesh"), "cycle"),
        (("math", "Value", "math", "Value_002"), "unavailable"),
        (("sub", "Nope", "group_output", "Geometry"), "has no output socket 'Nope'"),
    ],
)
async def test_link_when_blender_would_refuse_it_refuses_and_changes_nothing(
    bridge: BridgeProcess, ends: tuple[str, str, str, str], says: str
) -> None:
    await plane_with_target(bridge)
    for node_id, bl_idname in (
        ("cube", "GeometryNodeMeshCube"),
        ("math", "ShaderNodeMath"),
        ("pos", "GeometryNodeInputPosition"),
        ("grid", "GeometryNodeMeshGrid"),
        ("sub", "GeometryNodeSubdivisionSurface"),
    ):
        await add(bridge, node_id, bl_idname)
    await link(bridge, "group_input", "Geometry", "sub", "Mesh")
    names = dict(zip(("from_node", "from_socket", "to_node", "to_socket"), ends, strict=True))
    before = await bridge.fingerprint()
    result = await call(bridge, "gn.link", **T, **names)
    assert not result.ok and not result.mutated, result
    assert says in result.message, result.message
    assert await bridge.fingerprint() == before


async def test_link_when_types_incompatible_names_both_socket_types(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    await add(bridge, "cube", "GeometryNodeMeshCube")
    await add(bridge, "math", "ShaderNodeMath")
    await link(bridge, "group_input", "Geometry", "group_output", "Geometry")
    message = await refused(
        bridge,
        "invalid_input",
        "gn.link",
        **T,
        from_node="cube",
        from_socket="Mesh",
        to_node="math",
        to_socket="Value",
    )
    assert "(GEOMETRY)" in message and "(VALUE)" in message


async def test_unlink_when_linked_removes_it_and_undoes_in_order(bridge: BridgeProcess) -> None:
    await plane_with_target(bridge)
    for node_id in ("a", "b", "c"):
        await add(bridge, node_id, "GeometryNodeMeshCube")
    await add(bridge, "join", "GeometryNodeJoinGeometry")
    for source in ("a", "b", "c"):
        await link(bridge, source, "Mesh", "join", "Geometry")
    middle = {"from_node": "b", "from_socket": "Mesh", "to_node": "join", "to_socket": "Geometry"}
    result = await undone(bridge, "gn.unlink", **T, **middle)
    assert result.compensation is not None and result.compensation.tool == "gn.restore_node"
    last = {**middle, "from_node": "c"}
    result = await undone(bridge, "gn.unlink", **T, **last)
    assert result.compensation is not None and result.compensation.tool == "gn.link"
    await undone(
        bridge,
        "gn.unlink",
        **T,
        from_node="group_input",
        from_socket="Geometry",
        to_node="group_output",
        to_socket="Geometry",
    )


async def test_unlink_when_not_linked_refuses(bridge: BridgeProcess) -> None:
    await plane_with_target(bridge)
    await add(bridge, "sub", "GeometryNodeSubdivisionSurface")
    await refused(
        bridge,
        "not_found",
        "gn.unlink",
        **T,
        from_node="sub",
        from_socket="Mesh",
        to_node="group_output",
        to_socket="Geometry",
    )


# gn.set_group_io


async def test_set_group_io_when_new_adds_socket_and_undo_removes_it(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    socket = {"in_out": "INPUT", "name": "Density", "socket_type": "NodeSocketFloat"}
    await undone(bridge, "gn.set_group_io", **T, **socket)
    await ok(bridge, "gn.set_group_io", **T, **socket)
    interface = (await group(bridge))["interface"]
    assert ["INPUT", "Density", "NodeSocketFloat", 0.0] in interface
    before = await bridge.fingerprint()
    again = await ok(bridge, "gn.set_group_io", **T, **socket)
    assert not again.mutated and await bridge.fingerprint() == before
    message = await refused(
        bridge, "conflict", "gn.set_group_io", **T, **{**socket, "socket_type": "NodeSocketInt"}
    )
    assert "NodeSocketFloat" in message
    await refused(
        bridge,
        "invalid_input",
        "gn.set_group_io",
        **T,
        **{**socket, "socket_type": "NodeSocketShader"},
    )


# gn.cleanup_unused


async def test_cleanup_unused_when_nodes_dangle_removes_them_and_undo_restores(
    bridge: BridgeProcess,
) -> None:
    await plane_with_target(bridge)
    await add(bridge, "sub", "GeometryNodeSubdivisionSurface")
    await add(bridge, "math", "ShaderNodeMath")
    await add(bridge, "math2", "ShaderNodeMath")
    await add(bridge, "level", "FunctionNodeInputInt")
    await ok(bridge, "gn.set_property", **T, node_id="level", property="integer", value=2)
    await link(bridge, "group_input", "Geometry", "sub", "Mesh")
    await link(bridge, "level", "Integer", "sub", "Level")
    await link(bridge, "sub", "Mesh", "group_output", "Geometry")
    await link(bridge, "math", "Value", "math2", "Value")
    await ok(bridge, "gn.set_input", **T, node_id="math", socket="Value", value=3.0)
    result = await undone(bridge, "gn.cleanup_unused", **T)
    assert result.data == {"removed": ["math", "math2"]}
    await ok(bridge, "gn.cleanup_unused", **T)
    assert sorted(await nodes(bridge)) == ["group_input", "group_output", "level", "sub"]
    again = await ok(bridge, "gn.cleanup_unused", **T)
    assert not again.mutated and again.data == {"removed": []}


async def test_gn_tools_when_target_missing_say_what_to_call(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="plane", name="Plane")
    message = await refused(
        bridge, "not_found", "gn.add_node", **T, node_id="n", bl_idname="ShaderNodeMath"
    )
    assert "gn.ensure_target" in message


# A scatter set-up, evaluated


@pytest.mark.clause("001-§execute.2")
async def test_scatter_when_built_with_gn_tools_evaluates_to_seeded_instances(
    bridge: BridgeProcess,
) -> None:
    await build_scatter(bridge)
    expected = SCATTER_POINTS * CUBE_VERTICES + PLANE_VERTICES
    assert await evaluated_vertices(bridge) == expected
    # Another seed scatters differently, so the count above is the seed's doing.
    await ok(bridge, "gn.set_input", **T, node_id="scatter", socket="Seed", value=8)
    assert await evaluated_vertices(bridge) != expected


@pytest.mark.clause("001-§execute.2")
async def test_scatter_when_built_twice_on_fresh_scenes_fingerprints_equal(
    bridge: BridgeProcess,
) -> None:
    await build_scatter(bridge)
    first = await bridge.fingerprint()
    await bridge.reset()
    await build_scatter(bridge)
    assert await bridge.fingerprint() == first
    await ok(bridge, "gn.set_input", **T, node_id="pebble", socket="Size", value=[0.2, 0.1, 0.1])
    assert await bridge.fingerprint() != first


async def test_scatter_when_saved_and_loaded_fingerprints_equal(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await build_scatter(bridge)
    for name, socket_type in (("Count", "NodeSocketInt"), ("Dense", "NodeSocketBool")):
        await ok(bridge, "gn.set_group_io", **T, in_out="INPUT", name=name, socket_type=socket_type)
    for source in ("a", "b", "c"):
        await add(bridge, source, "GeometryNodeMeshCube")
        await link(bridge, source, "Mesh", "join", "Geometry")
    await ok(bridge, "gn.unlink", **T, from_node="b", from_socket="Mesh", to_node="join",
             to_socket="Geometry")  # fmt: skip
    await link(bridge, "b", "Mesh", "join", "Geometry")
    saved = await bridge.save(str(tmp_path / "scatter.blend"))
    assert saved.hash == await bridge.fingerprint()
    await bridge.reset()
    assert await bridge.load(saved.path) == saved.hash


async def test_scatter_when_every_step_compensated_in_reverse_is_the_plane_again(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="plane", name="Plane")
    start = await bridge.fingerprint()
    cube = {"node_id": "pebble", "bl_idname": "GeometryNodeMeshCube"}
    steps = [
        ("gn.ensure_target", {"allow_create_modifier": True}),
        ("gn.ensure_group_io", {}),
        ("gn.add_node", {"node_id": "scatter", "bl_idname": "GeometryNodeDistributePointsOnFaces"}),
        ("gn.add_node", cube),
        ("gn.add_node", {"node_id": "instances", "bl_idname": "GeometryNodeInstanceOnPoints"}),
        ("gn.add_node", {"node_id": "join", "bl_idname": "GeometryNodeJoinGeometry"}),
        ("gn.set_input", {"node_id": "scatter", "socket": "Seed", "value": 7}),
        (
            "gn.set_property",
            {"node_id": "scatter", "property": "distribute_method", "value": "POISSON"},
        ),
        ("gn.set_group_io", {"in_out": "INPUT", "name": "Count", "socket_type": "NodeSocketInt"}),
        (
            "gn.link",
            {
                "from_node": "group_input",
                "from_socket": "Geometry",
                "to_node": "scatter",
                "to_socket": "Mesh",
            },
        ),
        (
            "gn.link",
            {
                "from_node": "scatter",
                "from_socket": "Points",
                "to_node": "instances",
                "to_socket": "Points",
            },
        ),
        (
            "gn.link",
            {
                "from_node": "instances",
                "from_socket": "Instances",
                "to_node": "join",
                "to_socket": "Geometry",
            },
        ),
        (
            "gn.link",
            {
                "from_node": "group_input",
                "from_socket": "Geometry",
                "to_node": "join",
                "to_socket": "Geometry",
            },
        ),
        (
            "gn.link",
            {
                "from_node": "join",
                "from_socket": "Geometry",
                "to_node": "group_output",
                "to_socket": "Geometry",
            },
        ),
        ("gn.cleanup_unused", {}),
    ]
    done = [await ok(bridge, tool, **T, **args) for tool, args in steps]
    assert "pebble" not in await nodes(bridge)  # nothing used it
    for result in reversed(done):
        await compensate(bridge, result)
    assert await bridge.fingerprint() == start


# The node catalog


async def test_node_catalog_when_built_describes_nodes_fast_and_leaves_scene(
    bridge: BridgeProcess,
) -> None:
    fresh = BridgeProcess()
    await fresh.start()
    try:
        await fresh.call_tool("object.create", {"primitive": "plane", "name": "Plane"}, "c1")
        before = await fresh.fingerprint()
        started = time.perf_counter()
        catalog = await fresh.node_catalog()
        elapsed = time.perf_counter() - started
        assert await fresh.fingerprint() == before
        assert await fresh.node_catalog() == catalog  # cached
    finally:
        await fresh.close()
    assert elapsed < 2.0
    assert catalog.blender_version == fresh.profile.version
    assert len(catalog.nodes) > 250
    subdivision = catalog.nodes["GeometryNodeSubdivisionSurface"]
    level = subdivision.find_input("Level")
    assert level is not None and level.type == "INT" and level.bl_idname == "NodeSocketInt"
    assert level.default == 1
    distribute = catalog.nodes["GeometryNodeDistributePointsOnFaces"]
    method = distribute.find_property("distribute_method")
    assert method is not None and method.type == "ENUM"
    assert method.enum_items == ["RANDOM", "POISSON"]
    distance = distribute.find_input("Distance Min")
    assert distance is not None and not distance.enabled  # until distribute_method is POISSON
    compare = catalog.nodes["FunctionNodeCompare"].find_property("data_type")
    assert compare is not None and compare.enum_items == [
        "FLOAT",
        "INT",
        "VECTOR",
        "RGBA",
        "STRING",
    ]
    join = catalog.nodes["GeometryNodeJoinGeometry"].find_input("Geometry")
    assert join is not None and join.multi_input
    assert {"NodeGroupInput", "NodeGroupOutput", "ShaderNodeMath"} <= set(catalog.nodes)
    assert "ShaderNodeBsdfPrincipled" not in catalog.nodes
    uv_smooth = subdivision.find_input("UV Smooth")
    assert uv_smooth is not None and uv_smooth.type == "MENU"
    assert "Keep Corners" in uv_smooth.enum_items and uv_smooth.default == "Keep Boundaries"
    factor = catalog.nodes["GeometryNodeSubdivisionSurface"].find_input("Edge Crease")
    assert factor is not None and (factor.min, factor.max) == (0.0, 1.0)
