"""The ``rules`` planner backend: the offline English grammar of docs/grammar.md."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.operations import OperationSet, convert_operation_set
from contracts.tools import ToolCatalog, ToolSpec
from services.planner.rules.parse import GRAMMAR_SUMMARY, UnreadableRequest, plan_request

LEVELS = {
    "scene.snapshot": "read_only",
    "object.create": "safe_write",
    "object.transform": "safe_write",
    "object.rename": "safe_write",
    "object.delete": "destructive",
    "modifier.add": "safe_write",
    "modifier.set": "safe_write",
    "modifier.remove": "safe_write",
    "material.assign": "safe_write",
}


def make_catalog(*without: str) -> ToolCatalog:
    tools = [
        ToolSpec(
            name=name,
            description=f"the {name} tool",
            input_schema={"type": "object"},
            safety_level=level,  # type: ignore[arg-type]
        )
        for name, level in LEVELS.items()
        if name not in without
    ]
    return ToolCatalog(version="test", blender_version="4.2.0", tools=tools)


@pytest.fixture
def catalog() -> ToolCatalog:
    return make_catalog()


def plan(text: str, catalog: ToolCatalog) -> OperationSet:
    return plan_request(text, "req-1", catalog)


def calls(text: str, catalog: ToolCatalog) -> list[tuple[str, dict[str, Any]]]:
    return [(op.tool_name, op.args) for op in plan(text, catalog).operations]


def one(text: str, catalog: ToolCatalog) -> tuple[str, dict[str, Any]]:
    result = calls(text, catalog)
    assert len(result) == 1, result
    return result[0]


def unreadable(text: str, catalog: ToolCatalog) -> UnreadableRequest:
    with pytest.raises(UnreadableRequest) as info:
        plan(text, catalog)
    return info.value


# -- the flagship request ------------------------------------------------------------
def test_flagship_request_when_planned_gives_three_ops_with_one_dependency(catalog):
    text = (
        "add a cube named Box at 0 0 1, add a bevel modifier to Box, "
        "then add a uv sphere named Ball at 3 0 1"
    )
    result = plan(text, catalog)
    assert result.request_id == "req-1"
    assert [
        (op.operation_id, op.tool_name, op.args, op.depends_on) for op in result.operations
    ] == [
        ("op01", "object.create", {"primitive": "cube", "name": "Box", "location": [0, 0, 1]}, []),
        ("op02", "modifier.add", {"object": "Box", "type": "BEVEL"}, ["op01"]),
        (
            "op03",
            "object.create",
            {"primitive": "uv_sphere", "name": "Ball", "location": [3, 0, 1]},
            [],
        ),
    ]
    assert [op.safety_level for op in result.operations] == ["safe_write"] * 3


def test_plan_when_encoded_and_decoded_validates_against_the_contract(catalog):
    text = "add a cube named Box, bevel Box, color Box red, delete Box, snapshot"
    encoded = msgspec.json.encode(plan(text, catalog))
    assert convert_operation_set(msgspec.json.decode(encoded)) == plan(text, catalog)


def test_same_text_when_planned_twice_gives_identical_bytes(catalog):
    text = (
        "Create an ico sphere called Orb at (1, -2.5, 0) rotated 0 0 45 scaled 2; "
        "give Orb a material with color #3366FF metallic 0.5 roughness 0.25. "
        "add an array modifier to Orb with count 3 relative_offset_displace (1, 0, 0)"
    )
    first = msgspec.json.encode(plan(text, catalog))
    second = msgspec.json.encode(plan_request(text, "req-1", make_catalog()))
    assert first == second


# -- object.create -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("words", "primitive"),
    [
        ("cube", "cube"),
        ("uv sphere", "uv_sphere"),
        ("sphere", "uv_sphere"),
        ("uv_sphere", "uv_sphere"),
        ("ico sphere", "ico_sphere"),
        ("icosphere", "ico_sphere"),
        ("ico_sphere", "ico_sphere"),
        ("cylinder", "cylinder"),
        ("cone", "cone"),
        ("plane", "plane"),
        ("torus", "torus"),
        ("monkey", "monkey"),
        ("Suzanne", "monkey"),
    ],
)
def test_create_when_primitive_word_given_maps_to_primitive(catalog, words, primitive):
    assert one(f"add a {words}", catalog) == ("object.create", {"primitive": primitive})


def test_create_when_all_options_in_any_order_gives_canonical_args(catalog):
    expected = {
        "primitive": "cylinder",
        "name": "Pillar",
        "location": [1, 2, 3],
        "rotation": [90, 0, 0],
        "scale": [1, 1, 4],
    }
    texts = [
        "create a cylinder named Pillar at 1 2 3 rotated 90 0 0 degrees scaled 1 1 4",
        "create a cylinder scaled (1, 1, 4) rotated (90, 0, 0) at (1, 2, 3) called Pillar",
    ]
    for text in texts:
        assert one(text, catalog) == ("object.create", expected)


def test_create_when_scaled_by_one_number_gives_uniform_scale(catalog):
    assert one("add a cone scaled 2", catalog) == (
        "object.create",
        {"primitive": "cone", "scale": [2, 2, 2]},
    )


def test_create_when_option_repeated_is_unreadable(catalog):
    error = unreadable("add a cube at 0 0 0 at 1 1 1", catalog)
    assert error.unread == "add a cube at 0 0 0 at 1 1 1"
    assert '"at" is given twice' in error.message


def test_create_when_case_articles_and_spacing_vary_reads_the_same(catalog):
    assert one("  ADD   An  Cube   NAMED   Box   AT 0   0 1  ", catalog) == (
        "object.create",
        {"primitive": "cube", "name": "Box", "location": [0, 0, 1]},
    )


# -- object.transform, rename, delete -----------------------------------------------
@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("move Box to 1 2 3", {"name": "Box", "location": [1, 2, 3]}),
        ("move Box to the origin", {"name": "Box", "location": [0, 0, 0]}),
        ("move the Box by -1 0 0.5", {"name": "Box", "location": [-1, 0, 0.5], "mode": "relative"}),
        ("rotate Box 0 0 90 degrees", {"name": "Box", "rotation": [0, 0, 90]}),
        ("rotate Box to (0, 45, 0)", {"name": "Box", "rotation": [0, 45, 0]}),
        ("rotate Box by 0 0 15", {"name": "Box", "rotation": [0, 0, 15], "mode": "relative"}),
        (
            "rotate Box by 45 degrees around the z axis",
            {"name": "Box", "rotation": [0, 0, 45], "mode": "relative"},
        ),
        ("scale Box 2", {"name": "Box", "scale": [2, 2, 2]}),
        ("scale Box to 1 2 3", {"name": "Box", "scale": [1, 2, 3]}),
        ("scale Box by 0.5", {"name": "Box", "scale": [0.5, 0.5, 0.5], "mode": "relative"}),
    ],
)
def test_transform_when_form_given_gives_transform_args(catalog, text, args):
    assert one(text, catalog) == ("object.transform", args)


def test_rename_when_given_gives_rename_args(catalog):
    assert one("rename Box to Crate", catalog) == (
        "object.rename",
        {"name": "Box", "new_name": "Crate"},
    )


@pytest.mark.parametrize("text", ["delete Box", "remove Box", "delete the Box"])
def test_delete_when_given_gives_destructive_delete(catalog, text):
    (op,) = plan(text, catalog).operations
    assert (op.tool_name, op.args, op.safety_level) == (
        "object.delete",
        {"name": "Box"},
        "destructive",
    )


# -- modifiers -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("words", "mtype"),
    [
        ("bevel", "BEVEL"),
        ("subdivision", "SUBSURF"),
        ("subdivision surface", "SUBSURF"),
        ("subsurf", "SUBSURF"),
        ("array", "ARRAY"),
        ("mirror", "MIRROR"),
        ("solidify", "SOLIDIFY"),
        ("wireframe", "WIREFRAME"),
        ("decimate", "DECIMATE"),
        ("displace", "DISPLACE"),
        ("smooth", "SMOOTH"),
        ("triangulate", "TRIANGULATE"),
        ("weld", "WELD"),
        ("screw", "SCREW"),
        ("remesh", "REMESH"),
        ("cast", "CAST"),
        ("simple deform", "SIMPLE_DEFORM"),
        ("wave", "WAVE"),
        ("edge split", "EDGE_SPLIT"),
        ("weighted normal", "WEIGHTED_NORMAL"),
    ],
)
def test_add_modifier_when_modifier_word_given_maps_to_blender_type(catalog, words, mtype):
    assert one(f"add a {words} modifier to Box", catalog) == (
        "modifier.add",
        {"object": "Box", "type": mtype},
    )


def test_add_modifier_when_named_with_params_gives_name_and_properties(catalog):
    text = "add an array modifier named Row to Box with count 3 offset=(1, 0, 0) merge true"
    assert one(text, catalog) == (
        "modifier.add",
        {
            "object": "Box",
            "type": "ARRAY",
            "name": "Row",
            "properties": {"count": 3, "offset": [1, 0, 0], "merge": True},
        },
    )


def test_add_modifier_when_enum_word_and_quoted_value_passes_them_through(catalog):
    text = 'add a bevel modifier to Box with offset_type PERCENT width 0.2 vertex_group "Top"'
    assert one(text, catalog)[1]["properties"] == {
        "offset_type": "PERCENT",
        "width": 0.2,
        "vertex_group": "Top",
    }


def test_add_modifier_when_param_repeated_is_unreadable(catalog):
    error = unreadable("add a bevel modifier to Box with width 0.1 width 0.2", catalog)
    assert 'The parameter "width" is given twice' in error.message


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("bevel Box", {"object": "Box", "type": "BEVEL"}),
        (
            "bevel Box with width 0.1 segments 2",
            {"object": "Box", "type": "BEVEL", "properties": {"width": 0.1, "segments": 2}},
        ),
        (
            "subdivide Box levels 2",
            {"object": "Box", "type": "SUBSURF", "properties": {"levels": 2}},
        ),
        ("add a bevel to Box", {"object": "Box", "type": "BEVEL"}),
    ],
)
def test_modifier_shorthand_when_given_gives_modifier_add(catalog, text, args):
    assert one(text, catalog) == ("modifier.add", args)


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("set width of bevel on Box to 0.3", {"name": "Bevel", "properties": {"width": 0.3}}),
        (
            "set the segments of the Bevel modifier on Box to 4",
            {"name": "Bevel", "properties": {"segments": 4}},
        ),
        ("set Box bevel width to 0.3", {"name": "Bevel", "properties": {"width": 0.3}}),
        (
            "set Box edge split split_angle to 30",
            {"name": "EdgeSplit", "properties": {"split_angle": 30}},
        ),
        (
            "set Row on Box with count 5 use_relative_offset false",
            {"name": "Row", "properties": {"count": 5, "use_relative_offset": False}},
        ),
        (
            'set offset of "My Array" on Box to (2, 0, 0)',
            {"name": "My Array", "properties": {"offset": [2, 0, 0]}},
        ),
    ],
)
def test_set_modifier_when_form_given_gives_modifier_set(catalog, text, args):
    assert one(text, catalog) == ("modifier.set", {"object": "Box", **args})


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("remove the bevel modifier from Box", "Bevel"),
        ("remove subdivision from Box", "Subdivision"),
        ("delete the weighted normal modifier from Box", "WeightedNormal"),
        ("remove Row from Box", "Row"),
        ('remove "bevel" from Box', "bevel"),
    ],
)
def test_remove_modifier_when_given_gives_modifier_remove(catalog, text, name):
    assert one(text, catalog) == ("modifier.remove", {"object": "Box", "name": name})


# -- materials -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("color Box red", {"base_color": [1.0, 0.0, 0.0]}),
        ("colour the Box grey", {"base_color": [0.2159, 0.2159, 0.2159]}),
        ("make Box blue", {"base_color": [0.0, 0.0, 1.0]}),
        ("make Box (0.1, 0.2, 0.3)", {"base_color": [0.1, 0.2, 0.3]}),
        ("color Box 1 0.5 0", {"base_color": [1, 0.5, 0]}),
        ("color Box #FF8000", {"base_color": [1.0, 0.2159, 0.0]}),
        ("set the color of Box to green", {"base_color": [0.0, 1.0, 0.0]}),
        ("set the colour of Box to #ffffff", {"base_color": [1.0, 1.0, 1.0]}),
        ("set the metallic of Box to 0.8", {"metallic": 0.8}),
        ("set roughness of Box to 0.25", {"roughness": 0.25}),
        ("set Box roughness to 1", {"roughness": 1}),
        ("make Box metallic", {"metallic": 1.0}),
        ("make Box metallic 0.4", {"metallic": 0.4}),
        ("give Box a material", {}),
        ("give Box a red material", {"base_color": [1.0, 0.0, 0.0]}),
        (
            "give Box a material with roughness 0.2 color cyan metallic 0",
            {"base_color": [0.0, 1.0, 1.0], "metallic": 0, "roughness": 0.2},
        ),
        ("add a material to Box with color white", {"base_color": [1.0, 1.0, 1.0]}),
    ],
)
def test_material_when_form_given_gives_material_assign(catalog, text, values):
    tool, args = one(text, catalog)
    assert (tool, args) == ("material.assign", {"object": "Box", **values})
    assert list(args) == [
        "object",
        *[k for k in ("base_color", "metallic", "roughness") if k in args],
    ]


def test_material_when_color_component_out_of_range_is_unreadable(catalog):
    error = unreadable("set color of Box to 2 0 0", catalog)
    assert error.unread == "set color of Box to 2 0 0"
    assert "Color components must be numbers between 0 and 1." in error.message


def test_material_when_metallic_out_of_range_is_unreadable(catalog):
    assert "Metallic must be" in unreadable("make Box metallic 2", catalog).message


# -- snapshot ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text", ["snapshot", "describe the scene", "show the scene", "Take a snapshot of the scene"]
)
def test_snapshot_when_asked_gives_read_only_snapshot(catalog, text):
    (op,) = plan(text, catalog).operations
    assert (op.tool_name, op.args, op.safety_level) == ("scene.snapshot", {}, "read_only")


# -- separators, names, numbers --------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "add a cube, add a cone, add a torus",
        "add a cube and add a cone and add a torus",
        "add a cube then add a cone then add a torus",
        "add a cube; add a cone; add a torus.",
        "add a cube. Add a cone. Add a torus.",
        "add a cube, then add a cone, and then add a torus",
        "add a cube and then add a cone , add a torus",
    ],
)
def test_separators_when_mixed_split_into_clauses(catalog, text):
    primitives = [args["primitive"] for _, args in calls(text, catalog)]
    assert primitives == ["cube", "cone", "torus"]


def test_quoted_names_when_they_hold_separators_stay_whole(catalog):
    text = 'add a cube named "Box, and then. Lid" at 1 1 1, move "Box, and then. Lid" by 0 0 1'
    result = calls(text, catalog)
    assert [args["name"] for _, args in result] == ["Box, and then. Lid"] * 2


def test_names_when_dotted_or_hyphenated_keep_case_and_trailing_period_separates(catalog):
    result = calls("add a cube named Cube.001. move my-Box to 0 0 0.", catalog)
    assert [args["name"] for _, args in result] == ["Cube.001", "my-Box"]


def test_vectors_when_parenthesised_with_commas_do_not_split(catalog):
    assert one("move Box to (1.5, -2, 3e-1)", catalog)[1]["location"] == [1.5, -2, 0.3]


def test_numbers_when_negative_and_float_keep_their_type(catalog):
    location = one("move Box to -1 0.25 -3.0", catalog)[1]["location"]
    assert location == [-1, 0.25, -3.0]
    assert [type(v) for v in location] == [int, float, float]


def test_typographic_quotes_degree_sign_and_please_when_used_are_accepted(catalog):
    text = "please add a cone called \u201cMy Cone\u201d rotated 0 0 90\u00b0"
    assert one(text, catalog) == (
        "object.create",
        {"primitive": "cone", "name": "My Cone", "rotation": [0, 0, 90]},
    )


def test_names_when_longer_than_63_characters_are_unreadable(catalog):
    assert one(f"delete {'B' * 63}", catalog)[1] == {"name": "B" * 63}
    assert "at most 63 characters" in unreadable(f"delete {'B' * 64}", catalog).message


def test_it_when_previous_clause_named_an_object_refers_to_it(catalog):
    result = calls("add a cube named Box, rename it to Crate, then move it to 1 1 1", catalog)
    assert result[2] == ("object.transform", {"name": "Crate", "location": [1, 1, 1]})


def test_it_when_previous_object_is_unnamed_is_unreadable(catalog):
    error = unreadable("add a cube then move it to 1 2 3", catalog)
    assert error.unread == "move it to 1 2 3"
    assert '"it" does not refer to a named object' in error.message


# -- depends_on and operation ids ----------------------------------------------------
def test_depends_on_when_objects_touched_points_to_latest_toucher(catalog):
    text = (
        "add a cube named A, add a cube named B, move A to 1 1 1, "
        "rename B to C, color C red, snapshot, delete A"
    )
    deps = [op.depends_on for op in plan(text, catalog).operations]
    assert deps == [[], [], ["op01"], ["op02"], ["op04"], [], ["op03"]]


def test_depends_on_when_renamed_to_a_touched_name_picks_the_most_recent(catalog):
    text = "add a cube named Box, add a cube named Tmp, color Box red, rename Tmp to Box"
    assert plan(text, catalog).operations[3].depends_on == ["op03"]


def test_operation_ids_when_more_than_99_ops_widen_and_sort_lexically(catalog):
    text = ", ".join(f"move B{i} to 0 0 {i}" for i in range(120))
    ids = [op.operation_id for op in plan(text, catalog).operations]
    assert ids[0] == "op001" and ids[-1] == "op120"
    assert ids == sorted(ids)


# -- refusals ------------------------------------------------------------------------
def test_unreadable_clause_when_present_points_at_the_first_word_not_understood(catalog):
    error = unreadable("add a cube named Box, paint it  like Van Gogh, then delete Box", catalog)
    assert error.unread == "paint it  like Van Gogh"
    assert error.message.startswith('I did not understand "like" in "paint it  like Van Gogh".')
    assert "color <N> <color>" in error.message  # only the forms of the verb used
    assert GRAMMAR_SUMMARY not in error.message
    assert str(error) == error.message


def test_unreadable_clause_when_several_reports_the_first(catalog):
    error = unreadable("fly Box to the moon, then dance", catalog)
    assert error.unread == "fly Box to the moon"
    assert 'I do not know the verb "fly"' in error.message


def test_unreadable_when_vector_has_bare_commas_hints_at_parentheses(catalog):
    error = unreadable("move Box to 1, 2, 3", catalog)
    assert error.unread == "move Box to 1"
    assert "(1, 2, 3)" in error.message


def test_unreadable_when_quote_unterminated_quotes_the_rest(catalog):
    assert (
        unreadable('add a cube named "Box, then', catalog).unread == 'add a cube named "Box, then'
    )


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_request_when_planned_is_unreadable(catalog, text):
    error = unreadable(text, catalog)
    assert error.unread == text
    assert "empty" in error.message and GRAMMAR_SUMMARY in error.message


def test_separators_only_when_planned_is_unreadable(catalog):
    assert "could not find an instruction" in unreadable(" , and then ; ", catalog).message


def test_missing_tool_when_grammar_needs_it_says_not_available():
    error = unreadable("add a cube named Box, delete Box", make_catalog("object.delete"))
    assert error.unread == "delete Box"
    assert '"object.delete"' in error.message and "not available" in error.message


def test_safety_level_when_catalog_declares_other_levels_follows_catalog():
    catalog = ToolCatalog(
        version="t",
        blender_version="4.2.0",
        tools=[
            ToolSpec(
                name="object.create",
                description="",
                input_schema={"type": "object"},
                safety_level="destructive",
            )
        ],
    )
    (op,) = plan("add a cube", catalog).operations
    assert op.safety_level == "destructive"
