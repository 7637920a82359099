"""The modelling, UV and shading tools fed what a hostile caller tries first: paths where
names go, code-running node types, too many names, parts, UV maps or nodes, and images
that refer to files on the mesh's host. Each is refused, naming what was wrong, and the
scene does not change (tests/security/test_tool_inputs_hostile.py holds every tool to
unknown, wrongly typed and huge arguments)."""

from __future__ import annotations

import pytest

from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok, script_result

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(180)]

shared_bridge, bridge = bridge_fixtures()


async def refused(bridge: BridgeProcess, code: str, tool: str, /, **arguments: object) -> str:
    before = await bridge.fingerprint()
    result = await call(bridge, tool, **arguments)
    assert not result.ok and result.error_code == code, result
    assert not result.mutated and await bridge.fingerprint() == before, result
    return result.message


async def test_shader_tools_when_given_paths_or_code_nodes_refuse(bridge: BridgeProcess) -> None:
    await ok(bridge, "shader.create", material="M")
    await ok(bridge, "shader.add_node", material="M", node_id="img",
             bl_idname="ShaderNodeTexImage")  # fmt: skip
    said = await refused(bridge, "not_found", "shader.set_property", material="M",
                         node_id="img", property="image", value="../../../etc/passwd")  # fmt: skip
    assert "import it packed" in said
    for attribute in ("filepath", "__class__", "bl_rna"):
        said = await refused(bridge, "invalid_input", "shader.set_property", material="M",
                             node_id="img", property=attribute, value="x")  # fmt: skip
        assert "no property" in said or "does not match" in said or "pattern" in said
    said = await refused(bridge, "invalid_input", "shader.add_node", material="M",
                         node_id="osl", bl_idname="ShaderNodeScript")  # fmt: skip
    assert "bl_idname" in said
    said = await refused(bridge, "invalid_input", "shader.add_node", material="M",
                         node_id="../x", bl_idname="ShaderNodeTexNoise")  # fmt: skip
    assert "node_id" in said
    said = await refused(bridge, "invalid_input", "shader.set_input", material="M",
                         node_id="principled", socket="Roughness", value="rm -rf /")  # fmt: skip
    assert "Roughness" in said


async def test_image_texture_when_image_refers_to_a_host_file_is_refused() -> None:
    """No tool makes such an image (a scene that refers to files is refused when loaded),
    so the refusal is shown on a bridge server's own Python, as the executor calls it."""
    script = """
import json, bpy
from services.bridge import registry
from services.bridge.tools import scene
scene.reset()
image = bpy.data.images.new("Outside", 4, 4)
image.source = "FILE"
image.filepath = "/etc/hostname"
def run(tool, **args):
    return registry.call(tool, args, bpy.app.version)
run("shader.create", material="M")
run("shader.add_node", material="M", node_id="img", bl_idname="ShaderNodeTexImage")
said = run("shader.set_property", material="M", node_id="img", property="image", value="Outside")
node = bpy.data.materials["M"].node_tree.nodes["img"]
print("RESULT " + json.dumps({"ok": said.ok, "code": said.error_code, "message": said.message,
                              "set": node.image is not None}))
"""
    answer, _ = await script_result(script)
    assert answer["ok"] is False and answer["code"] == "invalid_input"
    assert "outside the scene" in answer["message"] and "/etc" not in answer["message"]
    assert answer["set"] is False


async def test_modelling_when_counts_are_over_their_limits_refuses(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    many = [f"O{i}" for i in range(65)]
    said = await refused(bridge, "invalid_input", "mesh.join", object="Box", objects=many)
    assert "objects" in said
    said = await refused(bridge, "invalid_input", "mesh.bevel", object="Box", width=0.1,
                         segments=10_000)  # fmt: skip
    assert "segments" in said
    for n in range(7):  # a cube from object.create has one UV map: 8 in all
        await ok(bridge, "uv.cube_project", object="Box", uv_map=f"Map{n}")
    said = await refused(bridge, "invalid_input", "uv.cube_project", object="Box", uv_map="Ninth")
    assert "8 UV maps" in said


async def test_separate_when_parts_exceed_the_limit_refuses_before_making_any(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box", dimensions=[0.1, 0.1, 0.1])
    await ok(bridge, "modifier.add", object="Box", type="ARRAY",
             properties={"count": 300, "use_merge_vertices": False})  # fmt: skip
    await ok(bridge, "modifier.apply", object="Box", modifier="Array")
    said = await refused(bridge, "invalid_input", "mesh.separate", object="Box", by="loose_parts")
    assert "over 256" in said


async def test_boolean_when_the_other_is_a_camera_or_itself_refuses(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "camera.create", name="Cam")
    said = await refused(bridge, "invalid_input", "mesh.boolean", object="Box",
                         operation="union", **{"with": "Cam"})  # fmt: skip
    assert "MESH" in said and "CAMERA" in said
    said = await refused(bridge, "not_found", "mesh.boolean", object="Box",
                         operation="union", **{"with": "../Box"})  # fmt: skip
    assert "'../Box'" in said
