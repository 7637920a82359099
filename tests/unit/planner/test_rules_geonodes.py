"""The offline grammar's Geometry Nodes clauses: each one a NODE_TREE step (docs/grammar.md)."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from contracts.geonodes import step_of
from services.planner.graph import PlanInvalid, validate
from services.planner.rules.parse import UnreadableRequest, plan_request
from tests.support.catalog_fixture import CATALOG
from tests.support.geonode_fixture import GN_CATALOG, NODES


def plan(text: str) -> list[dict[str, object]]:
    ops = plan_request(text, "req-1", GN_CATALOG, NODES)
    validate(msgspec.to_builtins(ops), GN_CATALOG)  # what the planner does with it next
    return [msgspec.to_builtins(op) for op in ops.operations]


def test_scatter_when_read_builds_a_scatter_tree_on_the_surface() -> None:
    ops = plan("scatter 50 Rock on Ground")
    assert ops[0]["tool_name"] == "gn.ensure_target"
    assert ops[0]["args"] == {
        "object": "Ground",
        "modifier": "Scatter Rock",
        "node_group": "Scatter Rock on Ground",
        "allow_create_modifier": True,
    }
    added = [o["args"]["bl_idname"] for o in ops if o["tool_name"] == "gn.add_node"]
    assert "GeometryNodeDistributePointsOnFaces" in added
    assert "GeometryNodeInstanceOnPoints" in added
    values = {
        (o["args"]["node_id"], o["args"]["socket"]): o["args"]["value"]
        for o in ops
        if o["tool_name"] == "gn.set_input"
    }
    assert values[("density", "Value")] == 50.0
    assert values[("source", "Object")] == "Rock"
    last = ops[-1]["args"]
    assert (last["from_node"], last["to_node"], last["to_socket"]) == (
        "join",
        "group_output",
        "Geometry",
    )


def test_scatter_when_read_numbers_its_operations_after_the_clause() -> None:
    ops = plan("scatter 5 copies of Rock over the Ground")
    ids = [o["operation_id"] for o in ops]
    assert ids[:3] == ["op01.01", "op01.02", "op01.03"]
    assert {step_of(i) for i in ids} == {"op01"}
    assert ops[0]["depends_on"] == []
    assert all(b["depends_on"] == [a["operation_id"]] for a, b in itertools.pairwise(ops))


def test_array_when_read_lines_up_copies_along_the_axis() -> None:
    ops = plan("add an array of 4 Box along the y axis spaced 3")
    assert ops[0]["args"]["object"] == "Box" and ops[0]["args"]["modifier"] == "Array along y"
    values = {
        o["args"]["socket"]: o["args"]["value"] for o in ops if o["tool_name"] == "gn.set_input"
    }
    assert values == {"Count": 4, "Offset": [0.0, 3.0, 0.0]}
    assert [o["tool_name"] for o in ops].count("gn.link") == 3


def test_array_when_spacing_omitted_uses_two() -> None:
    ops = plan("create an array of 3 copies of Box along x")
    offset = next(o for o in ops if o["args"].get("socket") == "Offset")
    assert offset["args"]["value"] == [2.0, 0.0, 0.0]


def test_geonodes_clause_when_after_others_depends_on_what_touched_its_objects() -> None:
    ops = plan("add a uv sphere named Ground, add a cube named Rock, then scatter 10 Rock on it")
    assert ops[0]["operation_id"] == "op01" and ops[1]["operation_id"] == "op02"
    ensure = ops[2]
    assert ensure["operation_id"] == "op03.01" and ensure["args"]["object"] == "Rock"
    assert ensure["depends_on"] == ["op02"]


def test_scatter_on_it_when_it_follows_means_the_last_object() -> None:
    ops = plan("add a uv sphere named Ground, scatter 10 Rock on it, then move it to 0 0 1")
    assert ops[1]["args"]["object"] == "Ground"
    moved = ops[-1]
    assert moved["tool_name"] == "object.transform" and moved["args"]["name"] == "Ground"
    assert moved["depends_on"] == [ops[-2]["operation_id"]]  # the tree's last operation


def test_array_modifier_when_asked_for_is_still_a_modifier() -> None:
    ops = plan("add an array modifier to Box with count 3")
    assert [o["tool_name"] for o in ops] == ["modifier.add"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("scatter 0 Rock on Ground", "from 1 to 10000"),
        ("scatter 2.5 Rock on Ground", "from 1 to 10000"),
        ("scatter Rock on Ground", ""),
        ("add an array of 4 Box along w", ""),
    ],
)
def test_geonodes_clause_when_malformed_is_unreadable(text: str, said: str) -> None:
    with pytest.raises(UnreadableRequest) as caught:
        plan_request(text, "r", GN_CATALOG, NODES)
    assert caught.value.unread == text and said in caught.value.message


def test_geonodes_clause_when_mesh_has_no_gn_tools_is_refused_naming_the_tool() -> None:
    with pytest.raises(UnreadableRequest, match=r'the tool "gn\.ensure_target"'):
        plan_request("scatter 3 Rock on Ground", "r", CATALOG, None)


def test_geonodes_clause_when_blender_lacks_a_node_is_plan_invalid() -> None:
    nodes = msgspec.structs.replace(
        NODES, nodes={k: v for k, v in NODES.nodes.items() if k != "GeometryNodeMeshLine"}
    )
    with pytest.raises(PlanInvalid) as caught:
        plan_request("add an array of 4 Box along x", "r", GN_CATALOG, nodes)
    assert caught.value.failure.error_code == "TOOL_UNKNOWN"
    assert "step op01" in caught.value.message


def test_geonodes_clause_when_planned_twice_is_byte_identical() -> None:
    text = "scatter 7 Rock on Ground and add an array of 2 Box along z"
    first = msgspec.json.encode(plan_request(text, "r", GN_CATALOG, NODES))
    assert first == msgspec.json.encode(plan_request(text, "r", GN_CATALOG, NODES))
