"""The rules planner with the scene it is told of, and the answer to "describe the scene":
handlers pass the scene's summary, runs that took a snapshot end with its description."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.events import Executed, Planned, PlanRejected
from contracts.receipts import Receipt
from contracts.snapshot_text import described, snapshot_lines
from services.executor.memory import MemorySceneSummaries
from services.planner.outcomes import completed
from tests.fixtures.artist_requests import ROOM
from tests.support.artist_scene import catalog, summary
from tests.support.planners import planner, requested

SNAPSHOT: dict[str, Any] = {
    "objects": [
        {
            "name": "Box",
            "type": "MESH",
            "parent": None,
            "location": [0.0, 0.0, 1.0],
            "rotation": [0.0, 0.0, 0.7853982],
            "scale": [1.0, 1.0, 1.0],
            "modifiers": [{"name": "Bevel", "type": "BEVEL", "properties": {}}],
            "material_slots": ["Red"],
        },
        {
            "name": "Key",
            "type": "LIGHT",
            "parent": "Box",
            "location": [2.0, -2.0, 4.0],
            "rotation": [0.0, 0.0, 0.0],
            "scale": [1.0, 1.0, 1.0],
            "modifiers": [],
            "material_slots": [],
            "light": {"type": "AREA", "energy": 500.0, "color": [1, 1, 1], "size": 1.0},
        },
        {
            "name": "Camera",
            "type": "CAMERA",
            "location": [0.0, -10.0, 5.0],
            "rotation": [1.1, 0.0, 0.0],
            "scale": [1.0, 1.0, 1.0],
            "camera": {"lens": 50.0, "type": "PERSP"},
        },
    ],
    "materials": [{"name": "Red", "base_color": [1, 0, 0, 1], "metallic": 0.0, "roughness": 0.5}],
    "hash": "abc",
}


def receipt(tool: str, result: dict[str, Any] | None = None) -> Receipt:
    return Receipt(
        operation_id="op01",
        tool_name=tool,
        safety_level="read_only",
        status="succeeded",
        result=result,
    )


def executed(*receipts: Receipt) -> Executed:
    return Executed(
        event_id="e9",
        at=0.0,
        run_id="r1",
        request_id="q1",
        thread_id="t1",
        user="ana",
        scene_id="s1",
        receipts=list(receipts),
        blend_path="/tmp/s1.blend",
        scene_hash="abc",
        failure=None,
        message="",
    )


async def test_rules_planner_when_scene_summary_known_expands_everything_to_its_objects():
    scenes = MemorySceneSummaries()
    await scenes.put(msgspec.structs.replace(summary(ROOM), scene_id="s1"))
    handlers = planner(catalog(), scenes=scenes)
    (planned,) = await handlers.on_requested(requested("delete everything"))
    assert isinstance(planned, Planned)
    names = [op.args["name"] for op in planned.operation_set.operations]
    assert names == ["Ball", "Cube", "Cube.001", "Key", "everything"]


async def test_rules_planner_when_no_tool_does_it_fails_without_a_rephrase_hint():
    handlers = planner(catalog())
    rejected, _failed = await handlers.on_requested(requested("render an animation"))
    assert isinstance(rejected, PlanRejected)
    assert rejected.failure.recoverable is False
    assert rejected.failure.retry_hint.startswith("No tool does")


def test_snapshot_lines_when_scene_has_lights_and_cameras_describe_each():
    text = "\n".join(snapshot_lines("s1", SNAPSHOT))
    assert text.splitlines()[0] == "scene s1: 3 objects: 1 camera, 1 light, 1 mesh"
    assert "Box [MESH] at (0, 0, 1) rot (0, 0, 45) scale (1, 1, 1)" in text
    assert "modifiers Bevel:BEVEL materials Red" in text
    assert "Key [LIGHT]" in text and "parent Box" in text and "light AREA power 500 W" in text
    assert "camera lens=50.0" in text
    assert "lights: Key" in text and "cameras: Camera" in text and "materials: Red" in text


def test_described_when_run_took_no_snapshot_is_none():
    assert described("s1", [receipt("object.create", {"name": "Box"})]) is None


def test_completed_when_run_took_a_snapshot_answers_with_the_description():
    event = completed(executed(receipt("scene.snapshot", SNAPSHOT)), 1.0)
    assert event.summary == "\n".join(snapshot_lines("s1", SNAPSHOT))


def test_completed_when_run_changed_the_scene_counts_the_operations():
    event = completed(executed(receipt("object.create", {"name": "Box"})), 1.0)
    assert event.summary == "1 of 1 operations applied to scene s1"
