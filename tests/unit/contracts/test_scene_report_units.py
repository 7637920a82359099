"""``blendmesh scenes show`` and "describe the scene": hidden flags, material colours, and
lights in one set of words and units (power in W, a sun's size in degrees)."""

from __future__ import annotations

import math

import msgspec

from contracts.inspection import (
    InspectedLight,
    InspectedMaterial,
    InspectedObject,
    Inspection,
)
from contracts.scene_report import report_lines, scene_report, srgb_hex
from contracts.snapshot_text import snapshot_lines

RED = [0.8, 0.0, 0.0, 1.0]  # linear; #e70000 in sRGB


def at_origin(obj: InspectedObject) -> InspectedObject:
    return msgspec.structs.replace(
        obj, location=[0.0, 0.0, 0.0], rotation_euler=[0.0, 0.0, 0.0], scale=[1.0, 1.0, 1.0]
    )


def inspection() -> Inspection:
    return Inspection(
        scene_id="s",
        revision=3,
        scene_hash="f" * 64,
        blender_version="5.0.1",
        objects=[
            at_origin(
                InspectedObject(name="Box", type="MESH", materials=["Red"], hide_render=True)
            ),
            at_origin(
                InspectedObject(
                    name="Sun",
                    type="LIGHT",
                    light=InspectedLight(kind="SUN", power=3.0, color=[1.0, 1.0, 1.0], size=0.5),
                )
            ),
        ],
        materials=[InspectedMaterial(name="Red", base_color=RED)],
    )


SNAPSHOT = {
    "objects": [
        {"name": "Box", "type": "MESH", "material_slots": ["Red"], "hidden": ["render"]},
        {
            "name": "Sun",
            "type": "LIGHT",
            "light": {
                "type": "SUN",
                "energy": 3.0,
                "color": [1.0, 1.0, 1.0],
                "size": math.radians(0.5),
            },
        },
    ],
    "materials": [{"name": "Red", "base_color": RED, "metallic": 0.0, "roughness": 0.5}],
}


def test_srgb_hex_when_linear_color_is_what_a_picker_shows() -> None:
    assert srgb_hex([1.0, 0.0, 0.0]) == "#ff0000" and srgb_hex(RED) == "#e70000"
    assert srgb_hex([0.2159, 0.2159, 0.2159, 1.0]) == "#808080"


def test_scenes_show_when_object_hidden_and_material_colored_says_both() -> None:
    report = scene_report(inspection())
    assert report["objects"][0]["hidden"] == ["render"]
    assert report["material_colors"] == {"Red": "#e70000"}
    text = "\n".join(report_lines(report))
    assert "Box [MESH]" in text and "materials Red hidden (render)" in text
    assert "materials: Red #e70000" in text
    assert "Sun [LIGHT]" in text and "light SUN power 3 W/m2 size 0.5 deg color #ffffff" in text


def test_describe_and_show_when_same_scene_say_lights_alike() -> None:
    shown = report_lines(scene_report(inspection()))[1:]
    described = snapshot_lines("s", SNAPSHOT)[1:]
    assert [line for line in described if "Sun" in line] == [
        line for line in shown if "Sun" in line
    ]
    assert [line for line in described if "Box" in line] == [
        line for line in shown if "Box" in line
    ]
    assert "materials: Red #e70000" in described
