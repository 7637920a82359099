"""The pieces of the tools LLM hosts expect that need no mesh: the MCP prompts and their
arguments, a plan's missing request_id, a view's arguments, the API's camelCase."""

from __future__ import annotations

import pytest

from contracts.assets import EXTENSIONS
from contracts.views import MAX_RENDERED_SIDE, view_plan, view_problem
from services.doors.gateway.scene_looks import FILENAME_PATTERN, camel
from services.doors.mcp import prompts
from services.doors.mcp.errors import ValidationError
from services.doors.mcp.tools import with_request_id


def test_camel_when_nested_keeps_blender_and_artist_names() -> None:
    detail = {
        "world_bounds": [],
        "mesh": {"evaluated_vertices": 3},
        "custom_properties": {"my_prop": 1},
        "modifiers": [{"show_render": True, "settings": {"use_clamp": True}}],
    }
    assert camel(detail) == {
        "worldBounds": [],
        "mesh": {"evaluatedVertices": 3},
        "customProperties": {"my_prop": 1},
        "modifiers": [{"showRender": True, "settings": {"use_clamp": True}}],
    }


def test_with_request_id_when_plan_has_none_adds_a_fresh_one() -> None:
    plan = {"operations": [{"operation_id": "a"}]}
    first = with_request_id({"scene_id": "s", "plan": plan})
    second = with_request_id({"scene_id": "s", "plan": plan})
    assert first["plan"]["request_id"].startswith("req-")
    assert first["plan"]["request_id"] != second["plan"]["request_id"]
    assert "request_id" not in plan  # the caller's plan is not changed


def test_with_request_id_when_given_or_not_an_operation_set_leaves_it() -> None:
    own = {"scene_id": "s", "plan": {"request_id": "mine", "operations": []}}
    geonodes = {"scene_id": "s", "plan": {"steps": []}}
    words = {"scene_id": "s", "request": "add a cube"}
    assert with_request_id(own) == own
    assert with_request_id(geonodes) == geonodes
    assert with_request_id(words) == words


def test_view_when_camera_and_angle_both_given_is_refused() -> None:
    both = view_plan("r", 64, 64, azimuth=10, camera="Cam")["operations"][0]["args"]
    one = view_plan("r", 64, 64, camera="Cam")["operations"][0]["args"]
    assert view_problem(both) == "give a camera or an azimuth/elevation, not both"
    assert view_problem(one) is None


def test_view_when_rendered_larger_than_cycles_fits_is_refused_naming_the_limit() -> None:
    big = view_plan("r", 2048, 64, shading="rendered")["operations"][0]["args"]
    fits = view_plan("r", MAX_RENDERED_SIDE, 64, shading="rendered")["operations"][0]["args"]
    flat = view_plan("r", 2048, 2048, shading="material")["operations"][0]["args"]
    assert f"at most {MAX_RENDERED_SIDE} pixels" in (view_problem(big) or "")
    assert view_problem(fits) is None and view_problem(flat) is None


def test_prompt_when_filled_names_scene_and_arguments() -> None:
    got = prompts.get("light_product_shot", {"scene_id": "studio", "object": "Bottle"})
    text = got.messages[0].content.text  # type: ignore[union-attr]
    assert "`studio`" in text and "`Bottle`" in text and "inspect_object" in text


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("nope", {"scene_id": "s"}, "no prompt 'nope'"),
        ("block_out_room", {}, "missing argument: scene_id"),
        ("block_out_room", {"scene_id": "s", "colour": "red"}, "unknown argument"),
        ("block_out_room", {"scene_id": "a/b"}, "scene_id must match"),
        ("block_out_room", {"scene_id": "s", "size": "x" * 201}, "over 200 characters"),
        ("light_product_shot", {"scene_id": "s"}, "missing argument: object"),
    ],
)
def test_prompt_when_arguments_wrong_is_refused_naming_them(
    name: str, arguments: dict[str, str], said: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        prompts.get(name, arguments)
    assert said in str(refused.value)


def test_filename_pattern_when_matched_takes_exactly_the_asset_endings() -> None:
    import re

    for ending in EXTENSIONS:
        assert re.fullmatch(FILENAME_PATTERN, f"chair{ending}")
        assert re.fullmatch(FILENAME_PATTERN, f"CHAIR{ending.upper()}")
    for name in ("chair.blend", "chair.glb.zip", "chair", "chair.usdc"):
        assert not re.fullmatch(FILENAME_PATTERN, name)
