"""Integration tests: UV unwrapping and projections, material node graphs and materials on
faces, on real bpy in a real bridge; and the brushed-metal request's part of issue 44
(bevel, unwrap, a shader graph with a faint scratch texture) as tool calls alone."""

from __future__ import annotations

from typing import Any

import pytest

from services.bridge.blendfiles.references import references
from services.executor.adapters.bridge_client import BridgeProcess
from tests.integration.test_bridge_artist_tools import data, refused, unbounded_numbers
from tests.support.bridges import bridge_fixtures, call, ok, script_result

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()

SHADING = {
    "uv.smart_project": ("safe_write", "checkpoint"),
    "uv.cube_project": ("safe_write", "checkpoint"),
    "uv.cylinder_project": ("safe_write", "checkpoint"),
    "uv.scale_islands": ("safe_write", "checkpoint"),
    "shader.create": ("safe_write", "checkpoint"),
    "shader.add_node": ("safe_write", "shader.remove_node"),
    "shader.remove_node": ("safe_write", "checkpoint"),
    "shader.link": ("safe_write", "checkpoint"),
    "shader.set_input": ("safe_write", "shader.set_input"),
    "shader.set_property": ("safe_write", "checkpoint"),
    "shader.set_ramp": ("safe_write", "checkpoint"),
    "material.assign_faces": ("safe_write", "checkpoint"),
}
# The brushed-metal shader: a stretched noise for the brushing, a fine voronoi through a
# colour ramp for faint scratches, both into the roughness and a bump.
BRUSHED_METAL: list[tuple[str, dict[str, Any]]] = [
    ("shader.create", {"material": "Brushed"}),
    ("shader.set_input", {"node_id": "principled", "socket": "Metallic", "value": 1.0}),
    ("shader.set_input", {"node_id": "principled", "socket": "Base Color",
                          "value": [0.8, 0.8, 0.82, 1.0]}),
    ("shader.add_node", {"node_id": "coords", "bl_idname": "ShaderNodeTexCoord"}),
    ("shader.add_node", {"node_id": "stretch", "bl_idname": "ShaderNodeMapping"}),
    ("shader.set_input", {"node_id": "stretch", "socket": "Scale", "value": [1, 40, 1]}),
    ("shader.link", {"from_node": "coords", "from_socket": "UV",
                     "to_node": "stretch", "to_socket": "Vector"}),
    ("shader.add_node", {"node_id": "brushing", "bl_idname": "ShaderNodeTexNoise"}),
    ("shader.set_input", {"node_id": "brushing", "socket": "Scale", "value": 60.0}),
    ("shader.link", {"from_node": "stretch", "from_socket": "Vector",
                     "to_node": "brushing", "to_socket": "Vector"}),
    ("shader.add_node", {"node_id": "scratches", "bl_idname": "ShaderNodeTexVoronoi"}),
    ("shader.set_property", {"node_id": "scratches", "property": "feature",
                             "value": "DISTANCE_TO_EDGE"}),
    ("shader.add_node", {"node_id": "faint", "bl_idname": "ShaderNodeValToRGB"}),
    ("shader.set_ramp", {"node_id": "faint", "stops": [
        {"position": 0.0, "color": [0.35, 0.35, 0.35, 1]},
        {"position": 0.05, "color": [0.2, 0.2, 0.2, 1]}]}),
    ("shader.link", {"from_node": "scratches", "from_socket": "Distance",
                     "to_node": "faint", "to_socket": "Fac"}),
    ("shader.add_node", {"node_id": "rough", "bl_idname": "ShaderNodeMix"}),
    ("shader.set_input", {"node_id": "rough", "socket": "Factor", "value": 0.3}),
    ("shader.link", {"from_node": "faint", "from_socket": "Color",
                     "to_node": "rough", "to_socket": "A"}),
    ("shader.link", {"from_node": "brushing", "from_socket": "Color",
                     "to_node": "rough", "to_socket": "B"}),
    ("shader.link", {"from_node": "rough", "from_socket": "Result",
                     "to_node": "principled", "to_socket": "Roughness"}),
    ("shader.add_node", {"node_id": "bump", "bl_idname": "ShaderNodeBump"}),
    ("shader.set_input", {"node_id": "bump", "socket": "Strength", "value": 0.05}),
    ("shader.link", {"from_node": "brushing", "from_socket": "Fac",
                     "to_node": "bump", "to_socket": "Height"}),
    ("shader.link", {"from_node": "bump", "from_socket": "Normal",
                     "to_node": "principled", "to_socket": "Normal"}),
]  # fmt: skip


async def brushed_metal(bridge: BridgeProcess, material: str = "Brushed") -> None:
    for tool, args in BRUSHED_METAL:
        await ok(bridge, tool, **{**args, "material": material})


async def test_shading_tools_when_listed_are_strict_bounded_and_declare_outputs(
    bridge: BridgeProcess,
) -> None:
    tools = {t["name"]: t for t in await bridge.list_tools()}
    for name, (safety, compensation) in SHADING.items():
        meta = tools[name]["_meta"]["blendmesh"]
        assert (meta["safety_level"], meta["compensation"]) == (safety, compensation), name
        assert tools[name]["inputSchema"]["additionalProperties"] is False
        assert unbounded_numbers(tools[name]["inputSchema"]) == [], name
        assert tools[name]["outputSchema"]["type"] == "object", name
    kinds = tools["shader.add_node"]["inputSchema"]["properties"]["bl_idname"]["enum"]
    assert {"ShaderNodeTexNoise", "ShaderNodeTexBrick", "ShaderNodeNormalMap"} <= set(kinds)
    assert "ShaderNodeScript" not in kinds  # OSL would run code


async def test_smart_project_when_cube_unwraps_into_the_unit_square(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    result = data(await ok(bridge, "uv.smart_project", object="Box"))
    assert result == {"object": "Box", "uv_map": "UVMap", "faces": 6, "islands": 6}
    islands = data(await ok(bridge, "uv.scale_islands", object="Box", scale=0.5))
    assert islands["islands"] == 6  # a cube's faces meet at 90 degrees: six islands
    again = data(await ok(bridge, "uv.smart_project", object="Box", uv_map="Second"))
    assert again["uv_map"] == "Second"


async def test_projections_when_applied_write_uvs_in_range(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cylinder", name="Can")
    box = data(await ok(bridge, "uv.cube_project", object="Can", size=2))
    round_ = data(await ok(bridge, "uv.cylinder_project", object="Can", axis="Z"))
    assert box["faces"] == round_["faces"] > 0


async def test_scale_islands_when_uv_map_missing_says_to_unwrap_first(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    said = await refused(bridge, "not_found", "uv.scale_islands", object="Box", scale=2,
                         uv_map="Painted")  # fmt: skip
    assert "'Painted'" in said and "unwrap it first" in said


async def test_shader_graph_when_built_holds_the_nodes_and_links_planned(
    bridge: BridgeProcess,
) -> None:
    await brushed_metal(bridge)
    noise = data(await ok(bridge, "shader.add_node", material="Brushed", node_id="more",
                          bl_idname="ShaderNodeTexBrick"))  # fmt: skip
    assert any(s.startswith("'Mortar Size'") for s in noise["inputs"]), noise
    linked = data(await ok(bridge, "shader.link", material="Brushed", from_node="more",
                           from_socket="Fac", to_node="bump", to_socket="Height"))  # fmt: skip
    assert linked == {"material": "Brushed", "from": "more.Factor", "to": "bump.Height"}


async def test_shader_link_when_shader_feeds_a_colour_refuses_and_removes_it(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "shader.create", material="M")
    await ok(bridge, "shader.add_node", material="M", node_id="noise",
             bl_idname="ShaderNodeTexNoise")  # fmt: skip
    result = await call(bridge, "shader.link", material="M", from_node="principled",
                        from_socket="BSDF", to_node="noise", to_socket="Scale")  # fmt: skip
    assert not result.ok and result.error_code == "invalid_input", result
    assert "cannot feed" in result.message


async def test_shader_set_input_when_out_of_range_or_unknown_refuses_naming_it(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "shader.create", material="M")
    said = await refused(bridge, "invalid_input", "shader.set_input", material="M",
                         node_id="principled", socket="Metallic", value=5)  # fmt: skip
    assert "Metallic" in said and "outside" in said
    said = await refused(bridge, "not_found", "shader.set_input", material="M",
                         node_id="principled", socket="Sudo", value=1)  # fmt: skip
    assert "'Sudo'" in said and "Metallic" in said
    said = await refused(bridge, "not_found", "shader.set_input", material="Other",
                         node_id="principled", socket="Metallic", value=1)  # fmt: skip
    assert "shader.create" in said


async def test_shader_add_node_when_set_input_compensated_puts_the_value_back(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "shader.create", material="M")
    before = await bridge.fingerprint()
    added = await ok(bridge, "shader.add_node", material="M", node_id="n",
                     bl_idname="ShaderNodeTexWave")  # fmt: skip
    assert added.compensation is not None
    await ok(bridge, added.compensation.tool, **added.compensation.arguments)
    assert await bridge.fingerprint() == before


async def test_image_texture_when_image_is_a_host_file_refuses_packed_only(
    bridge: BridgeProcess, tmp_path: Any
) -> None:
    await ok(bridge, "shader.create", material="M")
    await ok(bridge, "shader.add_node", material="M", node_id="img",
             bl_idname="ShaderNodeTexImage")  # fmt: skip
    said = await refused(bridge, "not_found", "shader.set_property", material="M",
                         node_id="img", property="image", value="Nowhere.png")  # fmt: skip
    assert "import it packed" in said
    said = await refused(bridge, "invalid_input", "shader.set_property", material="M",
                         node_id="img", property="filepath", value="/etc/passwd")  # fmt: skip
    assert "no property 'filepath'" in said


async def test_assign_faces_when_top_faces_get_a_second_material_uses_slot_one(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "material.assign", object="Box", material="Base")
    await ok(bridge, "shader.create", material="Top")
    result = data(await ok(bridge, "material.assign_faces", object="Box", material="Top",
                           rule="facing", axis="+Z"))  # fmt: skip
    assert (result["slot"], result["faces"]) == (1, 1)
    parts = data(await ok(bridge, "mesh.separate", object="Box", by="material"))
    assert len(parts["parts"]) == 1


async def test_brushed_metal_request_when_given_as_tool_calls_needs_no_python(
    bridge: BridgeProcess,
) -> None:
    """Issue 44's request, this side of it: bevel the edges, unwrap it, a brushed-metal
    shader with a faint scratch texture; every step a typed tool."""
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "mesh.bevel", object="Box", width=0.05, segments=2)
    await ok(bridge, "uv.smart_project", object="Box")
    await brushed_metal(bridge)
    await ok(bridge, "material.assign_faces", object="Box", material="Brushed")
    graph, _ = await script_result((SCRIPT_PRELUDE + GRAPH_OF).format(material="Brushed"))
    assert graph["slots"] == ["Brushed"] and graph["uv_maps"] == ["UVMap"]
    assert all(t.split(".")[0] != "python" for t, _ in BRUSHED_METAL)


# Read back in a Python of its own (bpy is imported only in Blender processes): the graph
# the calls made, from a fresh bridge server that replays them.
SCRIPT_PRELUDE = """
import json
import bpy
from services.bridge import registry
from services.bridge.tools import scene
from tests.integration.test_bridge_shading_tools import BRUSHED_METAL
scene.reset()
def run(tool, **args):
    result = registry.call(tool, args, bpy.app.version)
    assert result.ok, result
run("object.create", primitive="cube", name="Box")
run("mesh.bevel", object="Box", width=0.05, segments=2)
run("uv.smart_project", object="Box")
for tool, args in BRUSHED_METAL:
    run(tool, **{{**args, "material": "{material}"}})
run("material.assign_faces", object="Box", material="{material}")
"""
GRAPH_OF = """
mat = bpy.data.materials["{material}"]
def said(l):
    return f"{{l.from_node.name}}.{{l.from_socket.name}}>{{l.to_node.name}}.{{l.to_socket.name}}"
links = sorted(said(l) for l in mat.node_tree.links)
assert "rough.Result>principled.Roughness" in links, links
assert "bump.Normal>principled.Normal" in links, links
assert "principled.BSDF>output.Surface" in links, links
assert all(l.is_valid for l in mat.node_tree.links)
ramp = mat.node_tree.nodes["faint"].color_ramp
assert [round(e.position, 3) for e in ramp.elements] == [0.0, 0.05]
assert mat.node_tree.nodes["scratches"].feature == "DISTANCE_TO_EDGE"
ob = bpy.data.objects["Box"]
uvs = [tuple(d.uv) for d in ob.data.uv_layers["UVMap"].data]
assert all(-1e-6 <= c <= 1 + 1e-6 for uv in uvs for c in uv)
print("RESULT " + json.dumps({{"slots": [s.material.name for s in ob.material_slots],
                              "uv_maps": [u.name for u in ob.data.uv_layers]}}))
"""


async def test_scene_when_modelled_and_shaded_saves_with_nothing_outside_it(
    bridge: BridgeProcess, tmp_path: Any
) -> None:
    """The outside-reference rule holds for what the new tools make: the saved scene
    refers to no file, and a bridge opens it again."""
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "object.create", primitive="uv_sphere", name="Ball", location=[1, 0, 1])
    await ok(bridge, "mesh.boolean", object="Box", operation="difference", **{"with": "Ball"})
    await ok(bridge, "uv.smart_project", object="Box")
    await brushed_metal(bridge)
    await ok(bridge, "shader.add_node", material="Brushed", node_id="img",
             bl_idname="ShaderNodeTexImage")  # fmt: skip
    await ok(bridge, "material.assign_faces", object="Box", material="Brushed")
    path = tmp_path / "shaded.blend"
    await bridge.save(str(path))
    assert references(str(path)) == []
    before = await bridge.fingerprint()
    await bridge.reset()
    await bridge.load(str(path))
    assert await bridge.fingerprint() == before
