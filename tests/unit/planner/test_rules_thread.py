"""The rules grammar across a thread: ``it``, ``the copy`` and ``again`` refer to the
thread's previous run when this request has not said otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from services.planner.rules.parse import EarlierRun, UnreadableRequest, plan_request
from tests.fixtures.artist_requests import STUDIO, thing
from tests.support.artist_scene import catalog, summary

CATALOG = catalog()
SCENE = summary((*STUDIO, thing("Crate", "cube", (5, 0, 1)), thing("Crate.001", "cube", (8, 0, 1))))


def planned(text: str, earlier: EarlierRun | None) -> list[tuple[str, dict[str, Any]]]:
    ops = plan_request(text, "r", CATALOG, None, SCENE, earlier).operations
    return [(op.tool_name, op.args) for op in ops]


MADE_CRATE = EarlierRun(
    "add a cube named Crate", (("object.create", {"primitive": "cube", "name": "Crate"}),)
)
COPIED = EarlierRun(
    "duplicate Crate", (("object.duplicate", {"name": "Crate", "new_name": "Crate.001"}),)
)


def test_it_when_the_previous_run_made_an_object_is_that_object() -> None:
    assert planned("color it blue", MADE_CRATE) == [
        ("material.assign", {"object": "Crate", "base_color": [0.0, 0.0, 1.0]})
    ]


def test_it_when_this_request_made_something_is_the_new_object() -> None:
    ops = planned("add a cone named Hat and color it red", MADE_CRATE)
    assert ops[-1] == ("material.assign", {"object": "Hat", "base_color": [1.0, 0.0, 0.0]})


def test_the_copy_after_a_duplicating_run_is_the_new_object() -> None:
    assert planned("move the copy up 2", COPIED) == [
        ("object.transform", {"name": "Crate.001", "location": [0, 0, 2], "mode": "relative"})
    ]


def test_the_copy_with_nothing_duplicated_is_refused_with_the_reason() -> None:
    with pytest.raises(UnreadableRequest, match="nothing was duplicated"):
        planned("move the copy up 2", MADE_CRATE)


def test_again_reads_the_previous_request_against_the_scene_now() -> None:
    earlier = EarlierRun("add a cone", (("object.create", {"primitive": "cone", "name": "Cone"}),))
    assert planned("do it again", earlier) == [
        ("object.create", {"primitive": "cone", "name": "Cone"})
    ]


def test_again_without_an_earlier_run_says_there_is_nothing_to_repeat() -> None:
    with pytest.raises(UnreadableRequest, match="none to repeat"):
        planned("once more", None)


def test_a_bad_clause_names_itself_and_the_clauses_that_read() -> None:
    with pytest.raises(UnreadableRequest) as caught:
        planned("add a cone named Hat and scale it sideways", None)
    assert 'only "scale it sideways" needs another wording' in caught.value.message
    assert 'Read fine: "add a cone named Hat"' in caught.value.message


def test_it_after_a_question_is_still_what_the_run_before_made() -> None:
    asked = MADE_CRATE.then("how many crates are there", [("scene.snapshot", {})])
    assert planned("make it blue", asked) == [
        ("material.assign", {"object": "Crate", "base_color": [0.0, 0.0, 1.0]})
    ]
