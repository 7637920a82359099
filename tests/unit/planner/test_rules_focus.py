"""What the person had selected in Blender when asking (``Focus``, sent by the add-on):
"it" and "this" are the active object, "the selected ones" the selection; said without a
selection to stand for, each is refused naming what to do."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.focus import MAX_FOCUS, Focus
from services.planner.rules.parse import UnreadableRequest, plan_request
from tests.unit.planner.test_rules_typed import CATALOG, SCENE


def planned(text: str, focus: Focus | None) -> list[tuple[str, dict[str, Any]]]:
    ops = plan_request(text, "r", CATALOG, None, SCENE, None, focus).operations
    return [(op.tool_name, op.args) for op in ops]


def refused(text: str, focus: Focus | None) -> str:
    with pytest.raises(UnreadableRequest) as info:
        plan_request(text, "r", CATALOG, None, SCENE, None, focus)
    return info.value.message


DESK = Focus(selected=("Desk", "Stool"), active="Desk")


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("delete it", ["Desk"]),
        ("delete this", ["Desk"]),
        ("delete this one", ["Desk"]),
        ("delete the selected ones", ["Desk", "Stool"]),
        ("delete the selection", ["Desk", "Stool"]),
        ("delete selected objects", ["Desk", "Stool"]),
    ],
)
def test_reference_when_focus_given_stands_for_the_active_or_selected_objects(
    text: str, names: list[str]
) -> None:
    assert planned(text, DESK) == [("object.delete", {"name": n}) for n in names]


def test_move_the_selected_ones_moves_each_of_them() -> None:
    ops = planned("move the selected ones up 1", DESK)
    assert [(tool, args["name"]) for tool, args in ops] == [
        ("object.transform", "Desk"),
        ("object.transform", "Stool"),
    ]


def test_it_when_the_request_made_an_object_is_that_object_not_the_active_one() -> None:
    ops = planned("add a cube named Crate and delete it", DESK)
    assert ops[-1] == ("object.delete", {"name": "Crate"})


@pytest.mark.parametrize(
    ("text", "focus", "named"),
    [
        ("delete the selected ones", None, "ask from the Blender add-on, or name the objects"),
        ("delete the selection", Focus(), "nothing was selected when you asked"),
        ("delete this", Focus(selected=("Desk",)), "select one in Blender, or name the object"),
        ("delete it", Focus(active="Lamp"), "Lamp"),  # not in the scene the mesh holds
    ],
)
def test_reference_when_nothing_stands_behind_it_is_refused_saying_what_to_do(
    text: str, focus: Focus | None, named: str
) -> None:
    assert named in refused(text, focus)


@pytest.mark.parametrize(
    "raw",
    [
        {"active": "x" * 64},
        {"selected": [""]},
        {"selected": ["Box"] * (MAX_FOCUS + 1)},
        {"selected": ["Box"], "hidden": True},
    ],
)
def test_focus_when_too_long_empty_or_unknown_is_refused_by_the_contract(
    raw: dict[str, Any],
) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(raw, Focus)
