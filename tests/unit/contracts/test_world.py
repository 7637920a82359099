"""World locations from a snapshot's transforms, and the descriptions that give them:
"where is the cap?" answers where the cap is in the world, and says when a value is in
its parent's space."""

from __future__ import annotations

import math
from typing import Any

import pytest

from contracts.inspection import InspectedObject, Inspection
from contracts.scene_report import report_lines, scene_report
from contracts.snapshot_text import snapshot_lines
from contracts.world import world_locations


def entry(name: str, at: list[float], parent: str | None = None, **more: Any) -> dict[str, Any]:
    return {"name": name, "type": "MESH", "parent": parent, "location": at, **more}


def test_a_child_is_where_its_parent_puts_it() -> None:
    found = world_locations([entry("Bottle", [0, 0, 0.6]), entry("Cap", [0, 0, 0.175], "Bottle")])
    assert found == {"Bottle": [0, 0, 0.6], "Cap": [0, 0, 0.775]}


def test_a_turned_and_scaled_parent_turns_and_scales_its_childs_offset() -> None:
    parent = entry("Arm", [1, 0, 0], rotation=[0, 0, math.pi / 2], scale=[2, 2, 2])
    found = world_locations([parent, entry("Hand", [1, 0, 0], "Arm")])
    assert found["Hand"] == pytest.approx([1, 2, 0])


def test_the_parent_inverse_kept_at_parenting_time_counts() -> None:
    inverse = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -3], [0, 0, 0, 1]]
    found = world_locations(
        [entry("Base", [0, 0, 3]), entry("Lid", [0, 0, 4], "Base", parent_inverse=inverse)]
    )
    assert found["Lid"] == [0, 0, 4]  # kept where it was when it was parented


def test_a_cycle_or_an_endless_chain_stops_without_failing() -> None:
    cycle = world_locations([entry("A", [1, 0, 0], "B"), entry("B", [0, 1, 0], "A")])
    assert set(cycle) == {"A", "B"}
    # Children listed before their parents, thousands deep: followed without recursion.
    chain = [entry(f"O{i}", [0, 0, 1], f"O{i - 1}" if i else None) for i in range(3000)]
    found = world_locations(list(reversed(chain)))
    assert found["O0"] == [0, 0, 1] and found["O2999"] == [0, 0, 3000]


def test_a_question_about_a_child_answers_its_world_location_and_names_the_local_one() -> None:
    snapshot = {"objects": [entry("Bottle", [0, 0, 0.6]), entry("Cap", [0, 0, 0.175], "Bottle")]}
    [cap] = [line for line in snapshot_lines("s", snapshot) if line.strip().startswith("Cap")]
    assert "at (0, 0, 0.775) (world; (0, 0, 0.175) in Bottle's space)" in cap


def test_scenes_show_lists_dimensions_and_world_location() -> None:
    objects = [
        InspectedObject(name="Plinth", type="MESH", location=[0, 0, 0], rotation_euler=[0, 0, 0],
                        scale=[1, 1, 1], dimensions=[3, 1, 0.4], world_location=[0, 0, 0]),
        InspectedObject(name="Orb", type="MESH", parent="Plinth", location=[0, 0, 0.9],
                        rotation_euler=[0, 0, 0], scale=[1, 1, 1], dimensions=[1, 1, 1],
                        world_location=[3.5, 0, 0.9]),
    ]  # fmt: skip
    inspection = Inspection(
        scene_id="s", revision=1, scene_hash="h" * 64, blender_version="5.0.1", objects=objects
    )
    lines = report_lines(scene_report(inspection))
    assert "  Plinth [MESH] at (0, 0, 0) size (3, 1, 0.4) m" in lines[2]
    assert "at (3.5, 0, 0.9) (world; (0, 0, 0.9) in Plinth's space) size (1, 1, 1) m" in lines[1]


def test_an_artifact_from_before_world_locations_still_reads() -> None:
    old = InspectedObject(name="Box", type="MESH", location=[0, 0, 1], rotation_euler=[0, 0, 0],
                          scale=[1, 1, 1])  # fmt: skip
    line = report_lines(
        scene_report(
            Inspection(
                scene_id="s", revision=1, scene_hash="h", blender_version="3.4", objects=[old]
            )
        )
    )[1]
    assert line.startswith("  Box [MESH] at (0, 0, 1) rot")
