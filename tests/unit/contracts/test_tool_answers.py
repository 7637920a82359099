"""Each MCP tool's outputSchema, from contracts/tool_answers.py: one per tool, closed, the
host's paths left out, admitting the tool's answers and the error answer and nothing else."""

from __future__ import annotations

from typing import Any

import jsonschema
import msgspec
import pytest

from contracts.receipts import RunResult
from contracts.tool_answers import ANSWERS, HIDDEN, output_schema
from services.doors.mcp import cards, exports, looks, steer, tools
from services.doors.mcp.door import plain

RUN = RunResult(
    run_id="run-1", request_id="req-1", thread_id="thr-1", scene_id="s", user="ana",
    status="completed", blend_path="/srv/mesh/scenes/s.blend", scene_hash="ab" * 32,
)  # fmt: skip


def valid(tool: str, answer: Any) -> bool:
    return jsonschema.Draft202012Validator(output_schema(tool)).is_valid(answer)


def test_every_tool_when_listed_declares_its_own_output_schema() -> None:
    every = [*tools.TOOLS, *steer.TOOLS, *looks.TOOLS, *exports.TOOLS, cards.ANSWER_APPROVAL]
    listed = {t.name: t.outputSchema for t in every}
    assert set(listed) == set(ANSWERS)
    for name, schema in listed.items():
        assert schema == output_schema(name) and schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(schema)


def test_run_answer_when_shaped_as_the_door_does_validates() -> None:
    answer = {**plain(RUN), "ok": True, "scene": None, "approval": None}
    assert valid("run", answer) and valid("cancel_run", answer)
    scene = {"scene_id": "s", "revision": 2, "scene_hash": "ab" * 32}
    assert valid("run", {**answer, "scene": scene})


@pytest.mark.parametrize("hidden", HIDDEN)
def test_run_answer_when_it_carries_a_host_path_is_refused(hidden: str) -> None:
    # The schema closes every object: a path of the mesh's host cannot slip out unseen.
    leaked = {**msgspec.to_builtins(RUN), "ok": True, "scene": None}
    assert hidden in leaked and not valid("run", leaked)


def test_answer_when_it_has_a_field_its_type_lacks_or_misses_one_is_refused() -> None:
    answer = {**plain(RUN), "ok": True, "scene": None}
    assert not valid("run", {**answer, "surprise": 1})
    assert not valid("run", {k: v for k, v in answer.items() if k != "ok"})
    assert not valid("scenes", {"scenes": [{"scene_id": "s", "revision": "2", "scene_hash": ""}]})


def test_error_answer_when_any_tool_gives_it_validates_and_nothing_looser_does() -> None:
    error = {"error": {"type": "NotFound", "message": "no scene s"}}
    assert all(valid(tool, error) for tool in ANSWERS)
    assert not valid("scene", {"error": {"type": "NotFound"}})
    assert not valid("preview", {})


def test_view_answer_when_shading_unknown_is_refused() -> None:
    view = {
        "run_id": "run-1", "scene_id": "s", "image": "sha256:" + "0" * 64, "bytes": 10,
        "width": 64, "height": 64, "engine": "BLENDER_WORKBENCH", "shading": "material",
    }  # fmt: skip
    assert valid("render_view", view)
    assert not valid("render_view", {**view, "shading": "eevee"})
