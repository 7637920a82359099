"""Text and curves, constraints and rigs, render settings and HDRI worlds on real bpy in a
real bridge process: each tool does what it says, answers what its outputSchema says,
changes the scene hash, is undone by its compensation, and refuses what it cannot do
without changing the scene. Text and curves are held to the geometry budget."""

from __future__ import annotations

import os
from typing import Any

import jsonschema
import pytest

from contracts.exports import ExportParams
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess
from tests.support.bridges import SERVER_PRELUDE, bridge_fixtures, call, ok, script_result

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),
]

shared_bridge, bridge = bridge_fixtures()

# tool: (safety level, idempotence class, compensation), as the planner is told.
OUTPUT_TOOLS = {
    "text.create": ("safe_write", "non_idempotent", "object.delete"),
    "text.set": ("safe_write", "idempotent", "checkpoint"),
    "curve.create": ("safe_write", "non_idempotent", "object.delete"),
    "curve.set": ("safe_write", "idempotent", "checkpoint"),
    "curve.to_mesh": ("destructive", "non_idempotent", "checkpoint"),
    "constraint.track_to": ("safe_write", "non_idempotent", "constraint.remove"),
    "constraint.damped_track": ("safe_write", "non_idempotent", "constraint.remove"),
    "constraint.child_of": ("safe_write", "non_idempotent", "constraint.remove"),
    "constraint.follow_path": ("safe_write", "non_idempotent", "constraint.remove"),
    "constraint.copy_location": ("safe_write", "non_idempotent", "constraint.remove"),
    "constraint.copy_rotation": ("safe_write", "non_idempotent", "constraint.remove"),
    "constraint.limit_location": ("safe_write", "non_idempotent", "constraint.remove"),
    "constraint.limit_rotation": ("safe_write", "non_idempotent", "constraint.remove"),
    "constraint.limit_scale": ("safe_write", "non_idempotent", "constraint.remove"),
    "constraint.remove": ("destructive", "non_idempotent", "checkpoint"),
    "empty.create": ("safe_write", "non_idempotent", "object.delete"),
    "armature.create": ("safe_write", "non_idempotent", "object.delete"),
    "armature.bind": ("safe_write", "non_idempotent", "checkpoint"),
    "armature.pose": ("safe_write", "idempotent", "checkpoint"),
    "render.set": ("safe_write", "idempotent", "checkpoint"),
    "render.color": ("safe_write", "idempotent", "checkpoint"),
    "world.hdri": ("safe_write", "idempotent", "checkpoint"),
    "world.hdris": ("read_only", "idempotent", "none"),
}
TIGHT = {"BLENDMESH_MAX_OBJECT_VERTICES": "2000"}


async def answered(bridge: BridgeProcess, tool: str, /, **arguments: Any) -> dict[str, Any]:
    """Call ``tool``, which must succeed, change the scene hash unless it reads, and answer
    what its outputSchema says."""
    schemas = {t["name"]: t["outputSchema"] for t in await bridge.list_tools() if t["name"] == tool}
    before = await bridge.fingerprint()
    result = await ok(bridge, tool, **arguments)
    assert result.data is not None
    jsonschema.validate(result.data, schemas[tool])
    if OUTPUT_TOOLS[tool][0] != "read_only":
        after = await bridge.fingerprint()
        assert after != before, f"{tool} left the scene hash as it was"
        # The cached hash (digests of what the call declared it touches) is the full one.
        assert after == await bridge.fingerprint_full(), f"{tool} touched more than it said"
    return result.data


async def refused(bridge: BridgeProcess, code: str, tool: str, /, **arguments: Any) -> str:
    before = await bridge.fingerprint()
    result = await call(bridge, tool, **arguments)
    assert not result.ok and result.error_code == code, result
    assert not result.mutated and await bridge.fingerprint() == before, result
    return result.message


async def test_tools_list_when_started_declares_each_tool_with_an_output_schema(
    bridge: BridgeProcess,
) -> None:
    listed = {t["name"]: t for t in await bridge.list_tools()}
    for name, (safety, idempotence, compensation) in OUTPUT_TOOLS.items():
        meta = listed[name]["_meta"]["blendmesh"]
        assert (meta["safety_level"], meta["idempotence_class"], meta["compensation"]) == (
            safety,
            idempotence,
            compensation,
        ), name
        jsonschema.Draft202012Validator.check_schema(listed[name]["outputSchema"])
        assert listed[name]["outputSchema"]["additionalProperties"] is False, name


async def test_text_when_created_and_set_answers_its_shape_and_is_undone(
    bridge: BridgeProcess,
) -> None:
    made = await answered(bridge, "text.create", body="Hello", extrude=0.2, bevel_depth=0.02)
    assert made["name"] == "Text" and made["font"] == "Bfont Regular"
    changed = await answered(bridge, "text.set", name="Text", body="Hi there", align="center")
    assert changed["body"] == "Hi there" and changed["align"] == "center"
    result = await call(bridge, "text.create", body="Again", name="Other")
    assert result.compensation is not None
    await ok(bridge, result.compensation.tool, **result.compensation.arguments)
    await answered(bridge, "text.create", body="Again", name="Other")  # no Other.001 left


async def test_text_when_font_is_not_packed_or_missing_refuses_naming_it(
    bridge: BridgeProcess,
) -> None:
    missing = await refused(bridge, "not_found", "text.create", body="x", font="Comic Sans")
    assert "Comic Sans" in missing and "import a font file" in missing
    await ok(bridge, "object.create", primitive="cube", name="Box")
    not_text = await refused(bridge, "invalid_input", "text.set", name="Box", body="x")
    assert "FONT" in not_text
    too_long = await refused(bridge, "invalid_input", "text.create", body="x" * 1025)
    assert "body" in too_long


async def test_text_when_extruded_past_the_budget_is_refused_and_undone() -> None:
    process = BridgeProcess(env={**os.environ, **TIGHT})
    await process.start()
    try:
        result = await call(
            process, "text.create", body="W" * 200, extrude=1, bevel_depth=0.1, bevel_resolution=8
        )
        assert not result.ok and result.error_code == "invalid_input", result
        assert "BLENDMESH_MAX_OBJECT_VERTICES" in result.message
        assert result.mutated  # the executor restores its checkpoint, as reset does here
        await process.reset()
        small = await ok(process, "text.create", body="Hi", name="Small")
        assert small.ok
    finally:
        await process.close()


async def test_curves_when_created_bevelled_and_made_a_mesh_keep_their_place(
    bridge: BridgeProcess,
) -> None:
    ring = await answered(bridge, "curve.create", kind="circle", radius=2, location=[1, 2, 3])
    assert ring["points"] == 4 and ring["cyclic"] is True
    line = await answered(bridge, "curve.create", kind="bezier", points=[[0, 0, 0], [1, 1, 0]])
    assert line["points"] == 2 and line["spline"] == "bezier"
    path = await answered(bridge, "curve.create", kind="path", name="Route", cyclic=True)
    assert path["spline"] == "nurbs" and path["cyclic"] is True
    await answered(bridge, "curve.set", name="BezierCircle", bevel_depth=0.1, resolution=8)
    meshed = await answered(bridge, "curve.to_mesh", name="BezierCircle")
    assert meshed["vertices"] > 32 and meshed["faces"] > 32
    snap = {o["name"]: o for o in (await ok(bridge, "scene.snapshot")).data["objects"]}  # type: ignore[index]
    assert snap["BezierCircle"]["type"] == "MESH"
    assert snap["BezierCircle"]["location"] == [1.0, 2.0, 3.0]


async def test_curves_when_arguments_do_not_fit_the_kind_refuse(bridge: BridgeProcess) -> None:
    said = await refused(
        bridge, "invalid_input", "curve.create", kind="circle", points=[[0, 0, 0]] * 2
    )
    assert "points" in said
    said = await refused(bridge, "invalid_input", "curve.create", kind="bezier", radius=2)
    assert "radius" in said
    await ok(bridge, "object.create", primitive="cube", name="Box")
    said = await refused(bridge, "invalid_input", "curve.to_mesh", name="Box")
    assert "MESH" in said
    many = [[i, 0, 0] for i in range(65)]
    await refused(bridge, "invalid_input", "curve.create", kind="path", points=many)


async def test_constraints_when_added_follow_their_target_and_are_removed_by_name(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await answered(bridge, "empty.create", name="Target", location=[0, 5, 0], display="cube")
    await ok(bridge, "curve.create", kind="path", name="Route")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("constraint.track_to", {"target": "Target"}),
        ("constraint.damped_track", {"target": "Target", "track_axis": "-z"}),
        ("constraint.child_of", {"target": "Target"}),
        ("constraint.follow_path", {"target": "Route", "offset": 0.5, "follow_curve": True}),
        ("constraint.copy_location", {"target": "Target", "axes": ["x", "z"]}),
        ("constraint.copy_rotation", {"target": "Target"}),
        ("constraint.limit_location", {"z": [0, 3]}),
        ("constraint.limit_rotation", {"x": [-45, 45]}),
        ("constraint.limit_scale", {"y": [0.5, 2]}),
    ]
    names = []
    for tool, args in calls:
        made = await answered(bridge, tool, object="Box", **args)
        assert made["type"] == tool.removeprefix("constraint.")
        names.append(made["constraint"])
    assert made["constraints"] == names
    result = await call(bridge, "constraint.track_to", object="Box", target="Target", name="Aim")
    assert result.compensation is not None
    await ok(bridge, result.compensation.tool, **result.compensation.arguments)
    gone = await answered(bridge, "constraint.remove", object="Box", name="Track To")
    assert "Track To" not in gone["constraints"] and "Aim" not in gone["constraints"]


async def test_constraints_when_target_is_wrong_refuse_before_adding(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "empty.create", name="Target")
    said = await refused(bridge, "invalid_input", "constraint.track_to", object="Box", target="Box")
    assert "itself" in said
    said = await refused(
        bridge, "invalid_input", "constraint.follow_path", object="Box", target="Target"
    )
    assert "CURVE" in said
    said = await refused(
        bridge, "invalid_input", "constraint.limit_location", object="Box", x=[3, 1]
    )
    assert "swap" in said
    said = await refused(
        bridge, "invalid_input", "constraint.track_to", object="Box", target="Target", up_axis="z"
    )
    assert "same axis" in said
    said = await refused(bridge, "not_found", "constraint.remove", object="Box", name="Nope")
    assert "Nope" in said
    await ok(bridge, "constraint.copy_location", object="Box", target="Target", name="Follow")
    said = await refused(
        bridge, "conflict", "constraint.copy_rotation", object="Box", target="Target", name="Follow"
    )
    assert "Follow" in said


async def test_armature_when_created_and_bound_weights_the_mesh_by_bone(
    bridge: BridgeProcess,
) -> None:
    bones = [
        {"name": "Root", "head": [0, 0, 0], "tail": [0, 0, 1]},
        {"name": "Tip", "head": [0, 0, 1], "tail": [0, 0, 2], "parent": "Root", "connected": True},
    ]
    made = await answered(bridge, "armature.create", name="Rig", bones=bones)
    assert made["bones"] == ["Root", "Tip"]
    await ok(bridge, "object.create", primitive="cube", name="Body", location=[0, 0, 1])
    bound = await answered(bridge, "armature.bind", object="Body", armature="Rig")
    assert bound["groups"] == ["Root", "Tip"] and bound["weighted_vertices"] == 8
    # Back in object mode: a later call edits the scene as usual.
    await ok(bridge, "object.transform", name="Rig", location=[1, 0, 0])
    before = await ok(bridge, "object.inspect", name="Body")
    posed = await answered(bridge, "armature.pose", armature="Rig", bone="Tip", rotation=[45, 0, 0])
    assert posed["rotation"] == [45.0, 0.0, 0.0]
    after = await ok(bridge, "object.inspect", name="Body")
    assert before.data is not None and after.data is not None
    assert after.data["world_bounds"] != before.data["world_bounds"]  # the mesh follows
    said = await refused(
        bridge, "not_found", "armature.pose", armature="Rig", bone="Nope", rotation=[1, 0, 0]
    )
    assert "'Nope'" in said and "Tip" in said


async def test_armature_when_bones_are_wrong_refuses_naming_the_bone(bridge: BridgeProcess) -> None:
    same = {"name": "A", "head": [0, 0, 0], "tail": [0, 0, 0]}
    said = await refused(bridge, "invalid_input", "armature.create", bones=[same])
    assert "'A'" in said and "length" in said
    orphan = {"name": "B", "head": [0, 0, 0], "tail": [0, 0, 1], "parent": "Z"}
    said = await refused(bridge, "invalid_input", "armature.create", bones=[orphan])
    assert "'Z'" in said
    many = [{"name": f"b{i}", "head": [0, 0, i], "tail": [0, 0, i + 1]} for i in range(65)]
    await refused(bridge, "invalid_input", "armature.create", bones=many)
    await ok(bridge, "object.create", primitive="cube", name="Box")
    said = await refused(bridge, "invalid_input", "armature.bind", object="Box", armature="Box")
    assert "ARMATURE" in said


async def test_render_and_color_when_set_answer_the_scene_settings(bridge: BridgeProcess) -> None:
    render = await answered(
        bridge, "render.set", engine="cycles", samples=64, resolution=[1280, 720], fps=30
    )
    assert render["engine"] == "cycles" and render["samples"] == 64
    assert render["resolution"] == [1280, 720] and render["fps"] == 30
    frames = await answered(bridge, "render.set", frame_start=300, frame_end=400)
    assert (frames["frame_start"], frames["frame_end"]) == (300, 400)
    said = await refused(bridge, "invalid_input", "render.set", frame_start=500)
    assert "frame_start 500" in said
    color = await answered(bridge, "render.color", view_transform="AgX", look="Punchy")
    assert color["look"] == "Punchy"
    filmic = await answered(bridge, "render.color", view_transform="Filmic", look="High Contrast")
    assert filmic["view_transform"] == "Filmic"
    said = await refused(
        bridge, "invalid_input", "render.color", view_transform="Standard", look="Punchy"
    )
    assert "Standard" in said and "Punchy" in said


async def test_hdri_when_named_is_packed_and_listed_and_a_path_is_refused(
    bridge: BridgeProcess,
) -> None:
    listed = await answered(bridge, "world.hdris")
    assert {"forest", "studio", "city"} <= set(listed["hdris"]) and listed["current"] is None
    shown = await answered(bridge, "world.hdri", hdri="forest", strength=2, rotation=90)
    assert shown["hdri"] == "forest" and shown["bytes"] > 100_000
    assert (await answered(bridge, "world.hdris"))["current"] == "forest"
    for hostile in ("../../etc/passwd", "/etc/passwd", "forest.exr", "FOREST", "forest/../city"):
        said = await refused(bridge, "invalid_input", "world.hdri", hdri=hostile)
        assert "hdri" in said
    said = await refused(bridge, "not_found", "world.hdri", hdri="moon")
    assert "forest" in said and "/" not in said  # names, never the folder they are in


async def test_hdri_when_saved_keeps_no_path_of_this_host(
    bridge: BridgeProcess, tmp_path: Any
) -> None:
    await ok(bridge, "world.hdri", hdri="studio")
    path = tmp_path / "hdri.blend"
    await bridge.save(str(path))
    data = path.read_bytes()
    assert b"site-packages" not in data and b"studiolights" not in data
    await bridge.load(str(path))  # the outside-reference check passes: the image is packed


async def test_export_when_over_its_bound_is_refused_and_writes_nothing(
    bridge: BridgeProcess, tmp_path: Any
) -> None:
    await ok(bridge, "object.create", primitive="monkey")
    target = tmp_path / "big.glb"
    with pytest.raises(BridgeError) as refusal:
        await bridge.export_scene(ExportParams(path=str(target), format="glb", max_bytes=100))
    assert "over the 100" in str(refusal.value)
    assert not target.exists()
    wrong = tmp_path / "named.obj"
    with pytest.raises(BridgeError):
        await bridge.export_scene(ExportParams(path=str(wrong), format="glb", max_bytes=10**8))
    assert not wrong.exists()


async def test_text_when_its_font_is_a_host_path_refuses_and_a_packed_one_is_taken() -> None:
    """A font read from a path (only Blender's own or a file a scene was loaded with could
    put one there) is refused; the same font packed into the scene is taken."""
    answered_lines, _ = await script_result(
        SERVER_PRELUDE
        + """
import os
import bpy
from services.bridge import registry
folder = bpy.utils.system_resource("DATAFILES", path="fonts")
font = bpy.data.fonts.load(os.path.join(folder, "Inter.woff2"))
outside = registry.call("text.create", {"body": "x", "font": font.name}, (5, 0, 1))
font.pack()
packed = registry.call("text.create", {"body": "x", "font": font.name}, (5, 0, 1))
print("RESULT " + json.dumps([outside.ok, outside.error_code, outside.message, packed.ok]))
"""
    )
    ok_outside, code, message, ok_packed = answered_lines
    assert not ok_outside and code == "invalid_input"
    assert "outside the scene" in message and "pack" in message and "/" not in message
    assert ok_packed
