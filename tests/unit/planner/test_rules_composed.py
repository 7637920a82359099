"""The rules grammar as artists join things: several attributes in one clause, units,
possessives, "them", copies by a distance, an array with gaps, Blender's own setting
words, and places by the bounds the scene summary measured (docs/grammar.md).

Phrasings here are the tests' own; the bench's fresh sets are kept apart from them.
"""

from __future__ import annotations

from typing import Any

import pytest

from contracts.scenes import ObjectSummary, SceneSummary
from services.planner.rules.lexer import tokenize
from services.planner.rules.parse import EarlierRun, UnreadableRequest, plan_request
from tests.support.artist_scene import catalog

CATALOG = catalog()


def _obj(
    name: str, at: list[float], bounds: list[list[float]] | None = None, **more: Any
) -> ObjectSummary:
    return ObjectSummary(
        name=name,
        type=more.pop("kind", "MESH"),
        location=at,
        rotation_degrees=[0, 0, 0],
        scale=more.pop("scale", [1, 1, 1]),
        modifiers=[],
        materials=[],
        world_bounds=bounds,
        **more,
    )


# Statue: an imported mesh 0.6 m across and 3 m tall, its origin at its base; Shelf: a
# made box; Lamp: a light; Vase: a child whose location is in its parent's space.
SCENE = SceneSummary(
    scene_id="s",
    scene_hash="h",
    objects=[
        _obj("Statue", [4, 0, 0], [[3.7, -0.3, 0], [4.3, 0.3, 3]]),
        _obj("Shelf", [0, 0, 1], [[-1, -0.2, 0.9], [1, 0.2, 1.1]], dimensions=[2, 0.4, 0.2]),
        _obj("Vase", [0, 0, 0.3], [[-0.1, -0.1, 1.1], [0.1, 0.1, 1.5]]),
        _obj("Lamp", [0, 0, 5], None, kind="LIGHT"),
    ],
    materials=[],
)


def planned(text: str, earlier: EarlierRun | None = None) -> list[tuple[str, dict[str, Any]]]:
    ops = plan_request(text, "r", CATALOG, None, SCENE, earlier).operations
    return [(op.tool_name, op.args) for op in ops]


def refused(text: str) -> str:
    with pytest.raises(UnreadableRequest) as caught:
        plan_request(text, "r", CATALOG, None, SCENE)
    return caught.value.message


@pytest.mark.parametrize(
    ("text", "args"),
    [
        (
            "add a cube called Crate, 60 cm wide, 40 cm deep and 2 cm thick, at 1 1 0",
            {"name": "Crate", "dimensions": [0.6, 0.4, 0.02], "location": [1, 1, 0]},
        ),
        (
            "add a cylinder named Jar, 12 cm in diameter and 20 cm tall",
            {"name": "Jar", "dimensions": [0.12, 0.12, 0.2]},
        ),
        ("add a cube named Tile 0.3 x 0.3 x 0.01 m", {"dimensions": [0.3, 0.3, 0.01]}),
        ("add a cube named Slab, 1.5 x 1 x 0.1 m, at 0 4 0", {"location": [0, 4, 0]}),
        ("add a plane named Rug 250 mm wide", {"dimensions": [0.25, 0.25, 0]}),
    ],
)
def test_create_when_attributes_are_joined_reads_them_all_as_dimensions(
    text: str, args: dict[str, Any]
) -> None:
    [(tool, made)] = planned(text)
    assert tool == "object.create" and "scale" not in made
    assert {k: made[k] for k in args} == args


def test_create_when_scaled_is_said_still_scales() -> None:
    [(_, made)] = planned("add a cube named Big scaled by 2")
    assert made["scale"] == [2, 2, 2] and "dimensions" not in made


def test_a_comma_before_a_place_keeps_the_place_with_its_thing() -> None:
    [(_, made)] = planned("add a cube named Block 1 x 1 x 1 m, next to the shelf")
    assert made["location"] == [2.5, 0, 1.4]  # beside the shelf's measured side, on its base


def test_on_top_of_an_imported_mesh_uses_its_measured_bounds() -> None:
    [(_, made)] = planned("add a sphere named Orb with a radius of 0.25 m on top of the statue")
    assert made["location"] == [4, 0, 3.25]  # the statue's top is 3, not its origin + 1


def test_above_a_child_counts_its_world_bounds_not_its_local_location() -> None:
    [(_, made)] = planned("add a cube named Lid 0.2 x 0.2 x 0.2 m on top of Vase")
    assert made["location"] == [0, 0, 1.6]


def test_resizing_a_measured_object_scales_it_to_the_world_size_asked() -> None:
    [(_, made)] = planned("make the shelf 3 m wide")
    assert made == {"name": "Shelf", "scale": [1.5, 1, 1]}


@pytest.mark.parametrize(
    ("text", "props"),
    [
        ("bevel the shelf by 5 mm", {"width": 0.005}),
        ("bevel the shelf's edges 1 cm with 4 segments", {"width": 0.01, "segments": 4}),
        ("subdivide the statue with 3 levels", {"levels": 3}),
        ("solidify the shelf 2 cm", {"thickness": 0.02}),
        ("add a bevel modifier to Shelf with width 15 mm", {"width": 0.015}),
    ],
)
def test_modifier_settings_take_units_and_blenders_words(text: str, props: dict[str, Any]) -> None:
    [(tool, args)] = planned(text)
    assert tool == "modifier.add" and args["properties"] == props


def test_array_with_gaps_offsets_each_copy_by_its_width_and_the_gap() -> None:
    [(tool, args)] = planned("array the shelf 4 times along y with 30 cm gaps")
    assert (tool, args["type"]) == ("modifier.add", "ARRAY")
    assert args["properties"] == {
        "count": 4,
        "relative_offset_displace": [0, 1, 0],
        "use_constant_offset": True,
        "constant_offset_displace": [0, 0.3, 0],
    }


def test_array_without_a_count_says_how_to_give_one() -> None:
    assert "array Plank 5 times" in refused("array the shelf along x")


def test_duplicate_by_a_distance_and_direction_offsets_the_copy() -> None:
    [(tool, args)] = planned("duplicate the shelf 80 cm up")
    assert (tool, args["offset"]) == ("object.duplicate", [0, 0, 0.8])


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("set the lamp's power to 50", ["set", "the", "power", "of", "the", "lamp", "to", "50"]),
        ("bevel Shelf's edges", ["bevel", "edges", "of", "Shelf"]),
        ("make sure it's red", ["make", "sure", "it's", "red"]),
        ("what's here", ["what's", "here"]),
    ],
)
def test_a_possessive_reads_as_the_part_of_its_object(typed: str, read: list[str]) -> None:
    assert [t.text for t in tokenize(typed)] == read


def test_a_refusal_after_a_possessive_quotes_what_was_typed() -> None:
    message = refused("set the shelf's wobble to 3")
    assert "shelf's" in message or "wobble" in message


def test_them_after_a_run_that_made_several_means_those() -> None:
    made = tuple(("object.create", {"primitive": "cube", "name": n}) for n in ("Shelf", "Vase"))
    ops = planned("make them blue", EarlierRun("add a shelf and a vase", made))
    assert [args["object"] for _, args in ops] == ["Shelf", "Vase"]


def test_them_with_nothing_before_names_the_word_and_what_to_say() -> None:
    message = refused("make them blue")
    assert '"them"' in message and "name them" in message


def test_moving_an_imported_mesh_on_top_of_another_puts_its_base_on_the_top() -> None:
    [(_, moved)] = planned("put the statue on top of the shelf")
    # Its bounds' middle goes 1.5 m above the shelf's top (1.1); its origin is at its base.
    assert moved == {"name": "Statue", "location": [0, 0, 1.1]}


def test_rows_of_make_a_grid_rows_along_y_each_along_x() -> None:
    ops = planned("add 2 rows of 3 cubes named Brick, 50 cm apart")
    assert [args["location"] for _, args in ops] == [
        [0, 0, 0], [0.5, 0, 0], [1, 0, 0], [0, 0.5, 0], [0.5, 0.5, 0], [1, 0.5, 0]
    ]  # fmt: skip
    assert [args["name"] for _, args in ops][:2] == ["Brick", "Brick.001"]


def test_too_many_rows_is_refused_at_the_count_with_the_limit_and_a_way_out() -> None:
    message = refused("add 30 rows of 10 cubes")
    assert message.startswith('I did not understand "10" in')
    assert "300 objects; at most 100" in message and "array" in message


def test_a_size_given_twice_is_refused_at_its_second_word_with_the_form_that_works() -> None:
    message = refused("add a cube named Box2 2 m tall, 1 m tall")
    assert message.startswith('I did not understand "tall" in "..., 1 m tall"')
    assert "2 x 1 x 0.5 m" in message


@pytest.mark.parametrize(
    ("text", "mtype", "props"),
    [
        ("give the shelf a 3 mm bevel", "BEVEL", {"width": 0.003}),
        ("give Shelf a bevel modifier with 2 segments", "BEVEL", {"segments": 2}),
        ("give the statue a subdivision with levels 1", "SUBSURF", {"levels": 1}),
    ],
)
def test_give_an_object_a_modifier(text: str, mtype: str, props: dict[str, Any]) -> None:
    [(tool, args)] = planned(text)
    assert (tool, args["type"], args.get("properties", {})) == ("modifier.add", mtype, props)


def test_give_a_length_to_a_modifier_without_one_names_which_settings_take_lengths() -> None:
    assert "sets a bevel's width or a solidify's thickness" in refused("give Shelf a 2 cm mirror")


def test_the_colour_of_a_light_reads_as_the_light() -> None:
    [(tool, args)] = planned("make the colour of the lamp warm")
    assert tool == "light.set" and args["name"] == "Lamp"


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("make the lamp 75 watts", ("light.set", {"name": "Lamp", "power": 75})),
        ("set the lamp's strength to 40 W", ("light.set", {"name": "Lamp", "power": 40})),
        (
            "add a point light named Bulb with 60 W, 1 m above the shelf",
            (
                "light.create",
                {"kind": "point", "name": "Bulb", "location": [0, 0, 2.1], "power": 60},
            ),
        ),
        (
            "add a solidify of 4 mm to the shelf",
            (
                "modifier.add",
                {"object": "Shelf", "type": "SOLIDIFY", "properties": {"thickness": 0.004}},
            ),
        ),
        (
            "add a cone named Tip centred on the statue",
            ("object.create", {"primitive": "cone", "name": "Tip", "location": [4, 0, 4]}),
        ),
    ],
)
def test_lights_take_watts_and_places_after_a_comma_and_modifiers_a_length(
    text: str, op: tuple[str, dict[str, Any]]
) -> None:
    assert planned(text) == [op]


def test_copies_a_distance_apart_after_a_comma_have_exact_offsets() -> None:
    ops = planned("make 3 copies of the shelf along z, 0.3 m apart")
    assert [args["offset"] for _, args in ops] == [[0, 0, 0.3], [0, 0, 0.6], [0, 0, 0.9]]


def test_a_possessive_of_several_words_moves_them_all() -> None:
    assert [t.text for t in tokenize("dim the key light's power")] == [
        "dim", "the", "power", "of", "the", "key", "light"
    ]  # fmt: skip


def test_a_name_taken_is_refused_at_the_name_not_as_stopping_short() -> None:
    message = refused("add a cube called Shelf at 1 1 1")
    assert message.startswith('I did not understand "Shelf" in') and "stops short" not in message
    assert 'There is already an object "Shelf"' in message


def test_on_each_side_of_makes_two_left_and_right_clear_of_its_bounds() -> None:
    ops = planned("add a cube named Guard 0.4 x 0.4 x 0.4 m 10 cm on each side of the shelf")
    assert [(args["name"], args["location"]) for _, args in ops] == [
        ("Guard", [-1.3, 0, 1.1]),
        ("Guard.001", [1.3, 0, 1.1]),
    ]


def test_on_each_side_with_a_count_other_than_two_says_why_not_that_it_stops_short() -> None:
    message = refused("add 3 cubes on each side of the shelf")
    assert "puts two things, one each side" in message and "stops short" not in message


@pytest.mark.parametrize(
    ("text", "props"),
    [
        ("bevel the shelf with amount 4 mm", {"width": 0.004}),
        ("subdivide the statue with viewport 2 render 3", {"levels": 2, "render_levels": 3}),
    ],
)
def test_settings_take_the_words_blenders_panels_show(text: str, props: dict[str, Any]) -> None:
    [(_, args)] = planned(text)
    assert args["properties"] == props


def test_a_setting_given_by_both_its_names_is_refused() -> None:
    assert "given twice" in refused("bevel the shelf with amount 4 mm width 2 mm")


@pytest.mark.parametrize(
    ("text", "word", "said"),
    [
        ("add a cube named Slab 20 km wide", "20", "at most 10,000 m"),
        ("add a plane named Lot 1e9 by 2", "1e9", "at most 10,000 m"),
        ("add a cube named Flat 0 cm tall", "0", "above zero"),
    ],
)
def test_a_size_out_of_range_is_refused_at_its_number(text: str, word: str, said: str) -> None:
    message = refused(text)
    assert message.startswith(f'I did not understand "{word}"') and said in message
