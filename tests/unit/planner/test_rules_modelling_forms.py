"""The rules grammar's forms for the modelling, UV and shading tools (issue 44), each
planned against a small known scene, and issue 44's request planned with no Python."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.focus import Focus
from services.planner.rules.parse import UnreadableRequest, plan_request
from services.planner.rules.shaders import brushed_metal
from tests.fixtures.artist_requests import TWO, thing
from tests.support.artist_scene import catalog, summary

SCENE = summary((*TWO, thing("Cutter", "cube", (1, 1, 1))))
CATALOG = catalog()


def planned(text: str, focus: Focus | None = None) -> list[tuple[str, dict[str, Any]]]:
    ops = plan_request(text, "r", CATALOG, None, SCENE, focus=focus).operations
    return [(op.tool_name, op.args) for op in ops]


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        ("unwrap Box", [("uv.smart_project", {"object": "Box"})]),
        ("unwrap the uvs of Box and Ball",
         [("uv.smart_project", {"object": "Box"}), ("uv.smart_project", {"object": "Ball"})]),
        ("extrude the top of Box by 0.5",
         [("mesh.extrude", {"object": "Box", "distance": 0.5, "rule": "facing", "axis": "+Z"})]),
        ("extrude Box by 20 cm", [("mesh.extrude", {"object": "Box", "distance": 0.2,
                                                   "rule": "all", "individual": True})]),
        ("inset the faces of Box by 0.1",
         [("mesh.inset", {"object": "Box", "thickness": 0.1, "rule": "all",
                          "individual": True})]),
        ("recalculate the normals of Box", [("mesh.recalculate_normals", {"object": "Box"})]),
        ("merge Box by distance", [("mesh.merge_by_distance", {"object": "Box"})]),
        ("shade Box auto smooth at 40 degrees",
         [("mesh.shade_auto_smooth", {"object": "Box", "angle": 40})]),
        ("shade Box smooth", [("object.shade", {"name": "Box", "smooth": True})]),
        ("join Box and Ball", [("mesh.join", {"object": "Box", "objects": ["Ball"]})]),
        ("join Ball into Box", [("mesh.join", {"object": "Box", "objects": ["Ball"]})]),
        ("separate Box by loose parts", [("mesh.separate", {"object": "Box",
                                                            "by": "loose_parts"})]),
        ("separate Box by material", [("mesh.separate", {"object": "Box", "by": "material"})]),
        ("apply the scale and rotation of Box",
         [("mesh.apply_transform", {"object": "Box", "rotation": True, "scale": True})]),
        ("cut Cutter out of Box",
         [("mesh.boolean", {"object": "Box", "with": "Cutter", "operation": "difference"})]),
        ("subtract Cutter from Box",
         [("mesh.boolean", {"object": "Box", "with": "Cutter", "operation": "difference"})]),
        ("bevel the edges of Box by 0.05",
         [("modifier.add", {"object": "Box", "type": "BEVEL", "properties": {"width": 0.05}})]),
    ],
)  # fmt: skip
def test_modelling_form_when_read_plans_its_tool(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


def test_issue_44_request_when_planned_bevels_unwraps_and_shades_without_python() -> None:
    text = (
        "bevel the edges of Box by 0.05, unwrap it and give it a brushed-metal shader with "
        "a slight scratch texture"
    )
    ops = planned(text)
    assert ops[0] == ("modifier.add", {"object": "Box", "type": "BEVEL",
                                       "properties": {"width": 0.05}})  # fmt: skip
    assert ops[1] == ("uv.smart_project", {"object": "Box"})
    assert ops[2:] == brushed_metal("Box", scratches=True)
    assert not any(tool.startswith("python.") for tool, _ in ops)
    nodes = [a["node_id"] for t, a in ops if t == "shader.add_node"]
    assert "scratches" in nodes and "brushing" in nodes


def test_brushed_metal_when_no_scratches_asked_links_the_brushing_to_roughness() -> None:
    ops = planned("give Ball a brushed metal material")
    nodes = [a["node_id"] for t, a in ops if t == "shader.add_node"]
    assert "scratches" not in nodes
    assert ("material.assign_faces", {"object": "Ball", "material": "Ball_BrushedMetal"}) in ops


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("join Box", "Name two objects or more"),
        ("extrude Box", "extrude Box"),  # no distance: the clause is pointed at
        ("separate Box by colour", "separate Box by colour"),
    ],
)
def test_modelling_form_when_incomplete_is_refused_saying_why(text: str, said: str) -> None:
    with pytest.raises(UnreadableRequest) as refused:
        planned(text)
    assert said in str(refused.value)
