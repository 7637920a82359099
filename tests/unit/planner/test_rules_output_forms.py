"""The rules grammar's forms for text, curves, rigs, constraints, render settings, HDRI
worlds and export, each planned against a small known scene; what it cannot read is
refused saying what to type instead."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.operations import SafetyLevel
from contracts.tools import ToolCatalog, ToolSpec
from services.planner.rules.parse import UnreadableRequest, plan_request
from tests.fixtures.artist_requests import STUDIO
from tests.support.artist_scene import TOOLS, summary

OUTPUT_TOOLS: dict[str, SafetyLevel] = {
    "text.create": "safe_write",
    "curve.create": "safe_write",
    "curve.to_mesh": "destructive",
    "empty.create": "safe_write",
    "armature.create": "safe_write",
    "armature.bind": "safe_write",
    "armature.pose": "safe_write",
    "constraint.track_to": "safe_write",
    "constraint.follow_path": "safe_write",
    "constraint.copy_location": "safe_write",
    "constraint.copy_rotation": "safe_write",
    "render.color": "safe_write",
    "render.set": "safe_write",
    "world.hdri": "safe_write",
    "scene.export": "read_only",
}
CATALOG = ToolCatalog(
    version="output",
    blender_version="5.0.1",
    tools=[
        ToolSpec(name=n, description=n, input_schema={"type": "object"}, safety_level=level)
        for n, level in {**TOOLS, **OUTPUT_TOOLS}.items()
    ],
)
SCENE = summary(STUDIO)


def planned(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (op.tool_name, op.args) for op in plan_request(text, "r", CATALOG, None, SCENE).operations
    ]


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        ('add text "Hello"', [("text.create", {"body": "Hello", "name": "Text"})]),
        (
            'add a text "Open 24h" named Sign at 0 0 2 extruded by 0.1 with bevel 0.01',
            [
                (
                    "text.create",
                    {
                        "body": "Open 24h",
                        "name": "Sign",
                        "location": [0, 0, 2],
                        "extrude": 0.1,
                        "bevel_depth": 0.01,
                    },
                )
            ],
        ),
        (
            "add a bezier circle named Ring2 with radius 2 and thickness 0.1",
            [
                (
                    "curve.create",
                    {"kind": "circle", "name": "Ring2", "radius": 2, "bevel_depth": 0.1},
                )
            ],
        ),
        ("add a nurbs path named Route", [("curve.create", {"kind": "path", "name": "Route"})]),
        ("add a curve", [("curve.create", {"kind": "bezier", "name": "BezierCurve"})]),
        ("add an empty at 0 5 0", [("empty.create", {"location": [0, 5, 0], "name": "Empty"})]),
        ("add an armature named Rig", [("armature.create", {"name": "Rig"})]),
        (
            "render with cycles at 64 samples",
            [("render.set", {"engine": "cycles", "samples": 64})],
        ),
        (
            "render in eevee at 1920 x 1080",
            [("render.set", {"engine": "eevee", "resolution": [1920, 1080]})],
        ),
        ("use the forest hdri", [("world.hdri", {"hdri": "forest"})]),
        (
            "add a sunset hdri with strength 2",
            [("world.hdri", {"hdri": "sunset", "strength": 2})],
        ),
        ("export it as glb", [("scene.export", {"format": "glb"})]),
        ("export the scene to an stl file", [("scene.export", {"format": "stl"})]),
        ("set the samples to 128", [("render.set", {"samples": 128})]),
        ("set the view transform to filmic", [("render.color", {"view_transform": "Filmic"})]),
        (
            "set the view transform to agx with a punchy look",
            [("render.color", {"view_transform": "AgX", "look": "Punchy"})],
        ),
        (
            "make Box copy the rotation of Camera",
            [("constraint.copy_rotation", {"object": "Box", "target": "Camera"})],
        ),
        (
            "make Box copy the location of Key",
            [("constraint.copy_location", {"object": "Box", "target": "Key"})],
        ),
        ("make Camera track Box", [("constraint.track_to", {"object": "Camera", "target": "Box"})]),
    ],
)
def test_output_form_when_typed_plans_its_tool(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


def test_rig_request_when_typed_in_one_line_binds_what_it_made() -> None:
    ops = planned("add an armature named Rig, bind Box to Rig with automatic weights")
    assert ops == [
        ("armature.create", {"name": "Rig"}),
        ("armature.bind", {"object": "Box", "armature": "Rig"}),
    ]


def test_pose_when_typed_rotates_the_bone_of_the_rig_it_made() -> None:
    ops = planned("add an armature named Rig, rotate the bone Bone of Rig by 30 degrees around x")
    assert ops[1] == (
        "armature.pose",
        {"armature": "Rig", "bone": "Bone", "rotation": [30, 0, 0]},
    )
    assert planned("rotate Box by 45 around z") == [
        ("object.transform", {"name": "Box", "rotation": [0, 0, 45], "mode": "relative"})
    ]


def test_path_request_when_typed_makes_it_follow_and_then_converts_text() -> None:
    ops = planned(
        "add a nurbs path named Route, make Box follow the path Route; "
        'add text "Hi", convert it to a mesh'
    )
    assert ops[1] == ("constraint.follow_path", {"object": "Box", "target": "Route"})
    assert ops[-1] == ("curve.to_mesh", {"name": "Text"})


def test_export_when_said_last_runs_after_every_earlier_step() -> None:
    plan = plan_request(
        'add text "Hi", add a cube named Lid, render with cycles, export it as fbx',
        "r",
        CATALOG,
        None,
        SCENE,
    )
    *earlier, export = plan.operations
    assert export.tool_name == "scene.export"
    assert export.depends_on == [op.operation_id for op in earlier]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("export it as dwg", "glb, fbx, obj, usd or stl"),
        ("render with blender", "cycles, eevee or workbench"),
        ("add text Hello", 'Quote the text: add text "Hello"'),
        ("add text " + '"' + "x" * 1025 + '"', "1024"),
        ("render with cycles at 64", "samples"),
        ("add a nurbs path with radius 2", "Only a circle takes a radius"),
    ],
)
def test_output_form_when_unreadable_is_refused_saying_what_to_type(text: str, said: str) -> None:
    with pytest.raises(UnreadableRequest) as refused:
        planned(text)
    assert said in str(refused.value)


def test_bind_when_the_rig_is_missing_is_refused_naming_it() -> None:
    with pytest.raises(UnreadableRequest) as refused:
        planned("bind Box to Skeleton")
    assert "Skeleton" in str(refused.value)
