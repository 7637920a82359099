"""The rules grammar as people type it: everyday nouns, sizes and places by bounds.

Phrasings here are the tests' own; bench/grammar_fresh.txt is kept apart from them.
"""

from __future__ import annotations

from typing import Any

import pytest

from contracts.scenes import ObjectSummary, SceneSummary
from services.planner.rules.parse import UnreadableRequest, plan_request
from tests.support.artist_scene import catalog
from tests.support.geonode_fixture import GN_CATALOG, NODES

CATALOG = catalog()


def _obj(name: str, kind: str, at: list[float], scale: list[float] | None = None) -> ObjectSummary:
    return ObjectSummary(
        name=name,
        type=kind,
        location=at,
        rotation_degrees=[0, 0, 0],
        scale=scale or [1, 1, 1],
        modifiers=[],
        materials=[],
    )


SCENE = SceneSummary(
    scene_id="s",
    scene_hash="h",
    objects=[
        _obj("Desk", "MESH", [0, 0, 0.5], [1, 0.5, 0.5]),
        _obj("Cylinder", "MESH", [5, 0, 2], [0.5, 0.5, 2]),
        _obj("Stool", "MESH", [-4, 0, 0.25], [0.3, 0.3, 0.25]),
        _obj("Stool.001", "MESH", [-6, 0, 0.25], [0.3, 0.3, 0.25]),
        _obj("Key", "LIGHT", [0, 0, 6]),
    ],
    materials=[],
)


def planned(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (op.tool_name, op.args) for op in plan_request(text, "r", CATALOG, None, SCENE).operations
    ]


def create(primitive: str, name: str, **more: Any) -> tuple[str, dict[str, Any]]:
    return "object.create", {"primitive": primitive, "name": name, **more}


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        ("add the ground, 20 m wide", [create("plane", "Ground", dimensions=[20, 20, 0])]),
        ("create a plane 6 by 4", [create("plane", "Plane", dimensions=[6, 4, 0])]),
        (
            "add a pillar with a diameter of 1 and a height of 4",
            [create("cylinder", "Pillar", dimensions=[1, 1, 4])],
        ),
        ("add a crate 2 by 1 by 0.5 meters", [create("cube", "Crate", dimensions=[2, 1, 0.5])]),
        ("add a sphere of radius 2", [create("uv_sphere", "Sphere", dimensions=[4, 4, 4])]),
        (
            "add a wall 8 m long, 0.2 m thick and 2.5 m tall",
            [create("cube", "Wall", dimensions=[8, 0.2, 2.5])],
        ),
        (
            "add 3 columns along y, 4 m apart",
            [
                create("cylinder", "Column", location=[0, 0, 0]),
                create("cylinder", "Column.001", location=[0, 4, 0]),
                create("cylinder", "Column.002", location=[0, 8, 0]),
            ],
        ),
        ("add a cone onto the desk", [create("cone", "Cone", location=[0, 0, 2])]),
        (
            "place a ball with radius 0.5 on top of Cylinder",
            [create("uv_sphere", "Ball", location=[5, 0, 4.5], dimensions=[1, 1, 1])],
        ),
        ("add a cube next to the desk", [create("cube", "Cube", location=[3, 0, 1])]),
        (
            "add a point light above the desk",
            [("light.create", {"kind": "point", "name": "Point", "location": [0, 0, 3]})],
        ),
    ],
)
def test_typed_create_when_read_plans_sizes_and_places(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


def test_a_noun_and_another_item_stay_two_items() -> None:
    assert [args["name"] for _, args in planned("add a desk and 2 stools")] == [
        "Desk.001",
        "Stool.002",
        "Stool.003",
    ]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("add a cube with radius 2", "has no radius"),
        ("add a plane 3 m tall", "is flat"),
        ("add a pillar 2 m tall and 3 m tall", "given already"),
    ],
)
def test_a_size_that_cannot_be_is_refused_with_why(text: str, reason: str) -> None:
    with pytest.raises(UnreadableRequest, match=reason):
        planned(text)


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        (
            "colour the desk pale blue",
            [("material.assign", {"object": "Desk", "base_color": [0.5, 0.5, 1.0]})],
        ),
        (
            "make the desk deep green, matte",
            [
                (
                    "material.assign",
                    {"object": "Desk", "base_color": [0.0, 0.5, 0.0], "roughness": 1.0},
                )
            ],
        ),
        (
            "make Cylinder silver and metallic and polished",
            [
                (
                    "material.assign",
                    {
                        "object": "Cylinder",
                        "base_color": [0.5271, 0.5271, 0.5271],
                        "metallic": 1.0,
                        "roughness": 0.05,
                    },
                )
            ],
        ),
        (
            "paint the desk cool grey",
            [("material.assign", {"object": "Desk", "base_color": [0.1275, 0.1514, 0.2159]})],
        ),
        (
            "make the key light cool",
            [("light.set", {"name": "Key", "color": [0.5906, 0.7011, 1.0]})],
        ),
        ("paint Key red", [("light.set", {"name": "Key", "color": [1.0, 0.0, 0.0]})]),
    ],
)
def test_typed_looks_when_read_plan_materials_and_light_colors(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


@pytest.mark.parametrize("text", ["make the desk emissive", "add a glowing sphere"])
def test_emission_is_no_tool_rather_than_unread(text: str) -> None:
    with pytest.raises(UnreadableRequest) as caught:
        planned(text)
    assert caught.value.kind == "no_tool" and "add a warm point light" in caught.value.message


def transform(name: str, **values: Any) -> tuple[str, dict[str, Any]]:
    return "object.transform", {"name": name, **values, "mode": "relative"}


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        (
            "hide the stools",
            [("object.visibility", {"name": n, "viewport": False}) for n in ("Stool", "Stool.001")],
        ),
        ("remove every stool", [("object.delete", {"name": n}) for n in ("Stool", "Stool.001")]),
        (
            "shade both stools smooth",
            [("object.shade", {"name": n, "smooth": True}) for n in ("Stool", "Stool.001")],
        ),
        ("move the stool.001 up 1", [transform("Stool.001", location=[0, 0, 1])]),
        ("push Desk 3 m to the right", [transform("Desk", location=[3, 0, 0])]),
        ("lower the desk by half a metre", [transform("Desk", location=[0, 0, -0.5])]),
        ("make the desk a bit bigger", [transform("Desk", scale=[1.25, 1.25, 1.25])]),
        ("make Cylinder larger", [transform("Cylinder", scale=[1.5, 1.5, 1.5])]),
        ("turn Desk 45°", [transform("Desk", rotation=[0, 0, 45])]),
        ("raise the lamp 2", [transform("Key", location=[0, 0, 2])]),
        (
            "bevel the corners of the desk a lot",
            [("modifier.add", {"object": "Desk", "type": "BEVEL", "properties": {"width": 0.25}})],
        ),
        ("how big is the desk", [("scene.snapshot", {})]),
        ("which objects are hidden?", [("scene.snapshot", {})]),
        ("what material does the desk have", [("scene.snapshot", {})]),
    ],
)
def test_typed_edits_when_read_plan_them(text: str, ops: list[tuple[str, dict[str, Any]]]) -> None:
    assert planned(text) == ops


def test_both_with_more_than_two_is_refused_with_the_objects() -> None:
    with pytest.raises(UnreadableRequest, match="stands for 3 objects"):
        plan_request("delete both boxes", "r", CATALOG, None, _three_boxes())


def _three_boxes() -> SceneSummary:
    boxes = [_obj(n, "MESH", [0, 0, 0]) for n in ("Box", "Box.001", "Box.002")]
    return SceneSummary(scene_id="s", scene_hash="h", objects=boxes, materials=[])


def test_a_camera_looking_at_something_at_the_origin_stands_in_front_of_it() -> None:
    scene = SceneSummary(
        scene_id="s", scene_hash="h", objects=[_obj("Desk", "MESH", [0, 0, 0])], materials=[]
    )
    ops = plan_request("add a camera pointing at the desk", "r", CATALOG, None, scene).operations
    assert ops[0].args == {"name": "Camera", "location": [0, -10, 5], "look_at_object": "Desk"}


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        ("add a floor plane", [create("plane", "Floor")]),
        (
            "add two fence posts",
            [
                create("cylinder", "Post", location=[0, 0, 0]),
                create("cylinder", "Post.001", location=[3, 0, 0]),
            ],
        ),
        ("add a cone on the desk as the hat", [create("cone", "Hat", location=[0, 0, 2])]),
        ("make Cylinder a bit taller", [transform("Cylinder", scale=[1.0, 1.0, 1.25])]),
        ("make the desk narrower", [transform("Desk", scale=[0.75, 0.75, 1.0])]),
    ],
)
def test_typed_compounds_names_and_stretches(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


def test_an_unknown_thing_is_refused_with_the_form_that_names_a_shape_after_it() -> None:
    with pytest.raises(UnreadableRequest, match="add a cube named Fountain"):
        planned("add a fountain at 0 0 0")


def test_scatter_of_a_plural_noun_uses_its_one_object() -> None:
    ops = plan_request("scatter 20 cylinders on the desk", "r", GN_CATALOG, NODES, SCENE)
    target = ops.operations[0].args
    assert target["object"] == "Desk" and target["modifier"] == "Scatter Cylinder"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("scatter some stools on Desk", "Say how many"),
        ("scatter 30 pebbles on Desk", "add one first (add a pebble)"),
    ],
)
def test_scatter_when_vague_or_without_an_object_says_what_works(text: str, said: str) -> None:
    with pytest.raises(UnreadableRequest) as caught:
        planned(text)
    assert said in caught.value.message


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        (
            "add 4 stools around the desk",
            [
                create("cube", "Stool.002", location=[3, 0, 1]),
                create("cube", "Stool.003", location=[0, 3, 1]),
                create("cube", "Stool.004", location=[-3, 0, 1]),
                create("cube", "Stool.005", location=[0, -3, 1]),
            ],
        ),
        ("add a pipe 0.2 m wide", [create("cylinder", "Pipe", dimensions=[0.2, 0.2, 2])]),
        ("scale the desk by 3 along y", [transform("Desk", scale=[1, 3, 1])]),
        (
            "make the desk somewhat shiny",
            [("material.assign", {"object": "Desk", "roughness": 0.3})],
        ),
    ],
)
def test_typed_rings_round_widths_axis_scales_and_mild_looks(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        (
            "place Stool on top of the desk",
            [("object.transform", {"name": "Stool", "location": [0, 0, 1.25]})],
        ),
        (
            "move Key above Cylinder",
            [("object.transform", {"name": "Key", "location": [5, 0, 6]})],
        ),
        (
            "stand the desk next to Cylinder",
            [("object.transform", {"name": "Desk", "location": [7.5, 0, 0.5]})],
        ),
    ],
)
def test_an_object_moved_to_a_place_goes_where_a_new_one_would(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


def test_a_material_before_a_thing_is_refused_saying_to_use_a_color() -> None:
    with pytest.raises(UnreadableRequest, match="say a color instead"):
        planned("add a glass ball")


@pytest.mark.parametrize(
    ("text", "location"),
    [
        ("add a cube in front of the desk", [0, -2.5, 1]),
        ("add a cube behind Desk", [0, 2.5, 1]),
        ("add a cube to the left of the desk", [-3, 0, 1]),
        ("add a cube right of the desk", [3, 0, 1]),
        ("add a cube 0.5 m above the desk", [0, 0, 2.5]),
        ("add a cube below the desk", [0, 0, -1]),
        ("add a mat under the desk", [0, 0, 0]),
    ],
)
def test_sides_and_distances_when_said_place_by_bounds(text: str, location: list[float]) -> None:
    assert planned(text)[0][1]["location"] == location


def test_a_light_a_distance_above_has_its_centre_there() -> None:
    assert planned("add a spot light 3 m above Desk")[0][1]["location"] == [0, 0, 4]


def test_a_distance_before_a_side_is_the_clearance() -> None:
    assert planned("add a cube 2 m in front of the desk")[0][1]["location"] == [0, -3.5, 1]


@pytest.mark.parametrize(
    ("text", "dimensions"),
    [
        ("add a 6x4 ground", [6, 4, 0]),
        ("add a plane 6 x 4 m", [6, 4, 0]),
        ("add a 4 m long table", [4, 2, 2]),
        ("add a 1 metre ball", [1, 1, 1]),
    ],
)
def test_sizes_before_the_thing_or_glued_are_read(text: str, dimensions: list[float]) -> None:
    made = planned(text)[0][1]
    assert made["dimensions"] == dimensions and "scale" not in made  # sizes are not scale


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        (
            "make the desk 4 m long",
            [("object.transform", {"name": "Desk", "scale": [2, 0.5, 0.5]})],
        ),
        (
            "make Cylinder 1 m across and 6 m high",
            [("object.transform", {"name": "Cylinder", "scale": [0.5, 0.5, 3]})],
        ),
        (
            "give the desk a light green finish",
            [("material.assign", {"object": "Desk", "base_color": [0.5, 1.0, 0.5]})],
        ),
        (
            "set the colour of the desk to a deep blue",
            [("material.assign", {"object": "Desk", "base_color": [0.0, 0.0, 0.5]})],
        ),
        (
            "smooth both stools",
            [("object.shade", {"name": n, "smooth": True}) for n in ("Stool", "Stool.001")],
        ),
        ("count the stools", [("scene.snapshot", {})]),
    ],
)
def test_dimensions_of_existing_objects_and_more_material_forms(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


def test_a_camera_made_to_look_at_an_object_is_aimed() -> None:
    scene = SceneSummary(
        scene_id="s",
        scene_hash="h",
        objects=[_obj("Desk", "MESH", [0, 0, 0]), _obj("Cam", "CAMERA", [0, -9, 3])],
        materials=[],
    )
    ops = plan_request("make the camera look at the desk", "r", CATALOG, None, scene).operations
    assert (ops[0].tool_name, ops[0].args) == (
        "camera.set",
        {"name": "Cam", "look_at_object": "Desk"},
    )


def test_objects_put_around_another_stand_in_a_circle() -> None:
    ops = planned("put both stools around the desk")
    assert ops == [
        ("object.transform", {"name": "Stool", "location": [2.3, 0, 0.25]}),
        ("object.transform", {"name": "Stool.001", "location": [-2.3, 0, 0.25]}),
    ]


def test_make_everything_a_color_colors_every_object() -> None:
    assert len(planned("make everything light blue")) == 4


def test_select_is_no_tool_saying_to_name_the_objects() -> None:
    with pytest.raises(UnreadableRequest) as caught:
        planned("select the desk")
    assert caught.value.kind == "no_tool" and "keeps no selection" in caught.value.message


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        (
            "add a reading lamp next to the desk",
            [("light.create", {"kind": "point", "name": "Point", "location": [2, 0, 1]})],
        ),
        ("scale Desk up", [transform("Desk", scale=[1.5, 1.5, 1.5])]),
        ("lift the desk slightly", [transform("Desk", location=[0, 0, 0.5])]),
        ("mirror Desk", [("modifier.add", {"object": "Desk", "type": "MIRROR"})]),
    ],
)
def test_light_places_nudges_and_modifier_verbs(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


def test_a_copy_of_a_numbered_object_is_numbered_from_its_stem_so_groups_keep_it() -> None:
    assert planned("duplicate Stool.001 and make the stools blue") == [
        ("object.duplicate", {"name": "Stool.001", "new_name": "Stool.002"}),
        *[
            ("material.assign", {"object": n, "base_color": [0.0, 0.0, 1.0]})
            for n in ("Stool", "Stool.001", "Stool.002")
        ],
    ]


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        (
            "place the desk in the centre",
            [("object.transform", {"name": "Desk", "location": [0, 0, 0.5]})],
        ),
        ("add a cone in the middle of the desk", [create("cone", "Cone", location=[0, 0, 2])]),
        (
            "bevel both stools a bit",
            [
                ("modifier.add", {"object": n, "type": "BEVEL", "properties": {"width": 0.05}})
                for n in ("Stool", "Stool.001")
            ],
        ),
    ],
)
def test_the_middle_and_modifier_verbs_on_groups(
    text: str, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    assert planned(text) == ops


@pytest.mark.parametrize(
    ("text", "primitive", "name"),
    [
        ("add a couch", "cube", "Couch"),
        ("add a mug", "cylinder", "Mug"),
        ("add a carpet", "plane", "Carpet"),
        ("add a boulder", "ico_sphere", "Boulder"),
        ("add a donut", "torus", "Donut"),
    ],
)
def test_everyday_nouns_when_added_make_their_stand_in(
    text: str, primitive: str, name: str
) -> None:
    assert planned(text) == [create(primitive, name)]


def test_a_new_object_named_as_one_the_scene_has_is_refused_before_it_runs() -> None:
    with pytest.raises(UnreadableRequest, match='There is already an object "Desk"'):
        planned("add a cube named Desk")


def test_at_an_object_puts_the_new_one_beside_it() -> None:
    assert planned("add a stool at the desk") == [create("cube", "Stool.002", location=[3, 0, 1])]


def test_bevel_the_edges_without_an_object_bevels_it() -> None:
    ops = plan_request("add a crate and bevel the edges slightly", "r", CATALOG, None, SCENE)
    assert (ops.operations[-1].tool_name, ops.operations[-1].args) == (
        "modifier.add",
        {"object": "Crate", "type": "BEVEL", "properties": {"width": 0.05}},
    )
