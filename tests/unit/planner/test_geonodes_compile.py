"""A spec 004 response compiled into one chain of gn.* operations, and where plans enter
the planner (``intake.accept``): either shape, told apart by shape."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import msgspec
import pytest

from contracts.geonodes import convert_geonode_response, step_of
from contracts.python_steps import code_sha256
from contracts.tools import ToolCatalog
from services.planner.geonodes.compile import compile_response
from services.planner.graph import PlanInvalid
from services.planner.intake import accept
from services.planner.settings import PlanLimits
from tests.support.catalog_fixture import CATALOG
from tests.support.geonode_fixture import EXAMPLE_9, GN_CATALOG, NODES, subdivide

GN_OPS_STEP: dict[str, Any] = {
    "id": "patch",
    "type": "GN_OPS",
    "description": "every GN op once",
    "payload": {
        "v": 1,
        "target": {"object_name": "Cube", "modifier_name": "GeometryNodes"},
        "ops": [
            {"op": "ensure_target", "allow_create_modifier": False},
            {"op": "ensure_single_group_io"},
            {
                "op": "add_node",
                "id": "noise_1",
                "bl_idname": "ShaderNodeTexNoise",
                "x": 120,
                "y": 40,
            },
            {"op": "set_input", "node_id": "noise_1", "socket_name": "Scale", "value": 5.0},
            {
                "op": "link",
                "from_node": "noise_1",
                "from_socket": "Fac",
                "to_node": "n1",
                "to_socket": "Level",
            },
            {
                "op": "unlink",
                "from_node": "noise_1",
                "from_socket": "Fac",
                "to_node": "n1",
                "to_socket": "Level",
            },
            {"op": "remove_node", "node_id": "noise_1"},
            {"op": "cleanup_unused"},
        ],
    },
}


def two_steps() -> dict[str, Any]:
    doc = subdivide()
    doc["steps"].append(copy.deepcopy(GN_OPS_STEP))
    return doc


def ops_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    compiled = compile_response(convert_geonode_response(doc), "req-1", GN_CATALOG)
    assert compiled.request_id == "req-1"
    return [msgspec.to_builtins(op) for op in compiled.operations]


@pytest.mark.clause(
    "004-§node-tree.1",
    "004-§node-tree.2",
    "004-§node-tree.3",
    "004-§node-tree.4",
    "004-§node-tree.5",
    "004-§node-tree.6",
    "004-§node-tree.7",
    "004-§node-tree.8",
)
def test_node_tree_step_when_compiled_ensures_target_then_maps_each_op() -> None:
    ops = ops_of(subdivide())
    where = {"object": "Cube", "modifier": "GeometryNodes"}
    assert [(o["operation_id"], o["tool_name"], o["args"]) for o in ops] == [
        (
            "step_1.01",
            "gn.ensure_target",
            {**where, "node_group": "GN_Assistant_Group", "allow_create_modifier": True},
        ),
        (
            "step_1.02",
            "gn.add_node",
            {
                **where,
                "node_id": "n1",
                "bl_idname": "GeometryNodeSubdivisionSurface",
                "location": [100.0, 200.0],
            },
        ),
        ("step_1.03", "gn.set_input", {**where, "node_id": "n1", "socket": "Level", "value": 2}),
        (
            "step_1.04",
            "gn.link",
            {
                **where,
                "from_node": "group_input",
                "from_socket": "Geometry",
                "to_node": "n1",
                "to_socket": "Mesh",
            },
        ),
        (
            "step_1.05",
            "gn.link",
            {
                **where,
                "from_node": "n1",
                "from_socket": "Mesh",
                "to_node": "group_output",
                "to_socket": "Geometry",
            },
        ),
    ]


@pytest.mark.clause(
    "004-§gn-ops.1",
    "004-§gn-ops.2",
    "004-§gn-ops.3",
    "004-§gn-ops.4",
    "004-§gn-ops.5",
    "004-§gn-ops.6",
    "004-§gn-ops.7",
    "004-§gn-ops.8",
    "004-§gn-ops.9",
)
def test_gn_ops_step_when_compiled_maps_every_op_to_its_tool() -> None:
    ops = ops_of(two_steps())[5:]
    assert [o["tool_name"] for o in ops] == [
        "gn.ensure_target",
        "gn.ensure_group_io",
        "gn.add_node",
        "gn.set_input",
        "gn.link",
        "gn.unlink",
        "gn.remove_node",
        "gn.cleanup_unused",
    ]
    where = {"object": "Cube", "modifier": "GeometryNodes"}
    assert ops[0]["args"] == {**where, "allow_create_modifier": False}
    assert ops[1]["args"] == where
    assert ops[2]["args"] == {
        **where,
        "node_id": "noise_1",
        "bl_idname": "ShaderNodeTexNoise",
        "location": [120.0, 40.0],
    }
    assert ops[3]["args"] == {**where, "node_id": "noise_1", "socket": "Scale", "value": 5.0}
    assert ops[4]["args"]["to_socket"] == "Level" and ops[6]["args"]["node_id"] == "noise_1"


@pytest.mark.clause("004-§multi-step.1")
def test_steps_when_compiled_form_one_chain_in_order() -> None:
    ops = ops_of(two_steps())
    assert ops[0]["depends_on"] == []
    for before, after in itertools.pairwise(ops):
        assert after["depends_on"] == [before["operation_id"]]
    assert [step_of(o["operation_id"]) for o in ops] == ["step_1"] * 5 + ["patch"] * 8


def test_compiled_operations_when_catalog_declares_a_level_carry_it() -> None:
    catalog = msgspec.structs.replace(
        GN_CATALOG,
        tools=[
            msgspec.structs.replace(t, safety_level="destructive") if t.name == "gn.link" else t
            for t in GN_CATALOG.tools
        ],
    )
    compiled = compile_response(convert_geonode_response(subdivide()), "r", catalog)
    assert {op.tool_name: op.safety_level for op in compiled.operations}["gn.link"] == (
        "destructive"
    )


def test_response_when_mesh_has_no_gn_tools_is_tool_unknown() -> None:
    with pytest.raises(PlanInvalid) as caught:
        compile_response(convert_geonode_response(subdivide()), "r", CATALOG)
    assert caught.value.failure.error_code == "TOOL_UNKNOWN"
    assert "gn.ensure_target" in caught.value.message


def test_accept_when_given_a_response_returns_a_validated_spec_000_plan() -> None:
    plan = accept(two_steps(), "req-9", GN_CATALOG, NODES)
    assert plan.operation_set.request_id == "req-9"
    assert plan.schedule == [op.operation_id for op in plan.operation_set.operations]
    assert plan.done is True


@pytest.mark.clause("004-§multi-step.4")
def test_accept_when_response_not_done_says_so() -> None:
    doc = {**subdivide(), "done": False}
    assert accept(doc, "r", GN_CATALOG, NODES).done is False


def test_accept_when_given_json_text_of_a_response_reads_it() -> None:
    text = msgspec.json.encode(subdivide()).decode()
    assert len(accept(text, "r", GN_CATALOG, NODES).operation_set.operations) == 5


def test_accept_when_given_an_operation_set_validates_it_as_before() -> None:
    plan = {
        "request_id": "r",
        "operations": [
            {
                "operation_id": "op1",
                "tool_name": "scene.snapshot",
                "args": {},
                "depends_on": [],
                "safety_level": "read_only",
            }
        ],
    }
    accepted = accept(plan, "ignored", GN_CATALOG, None)
    assert accepted.operation_set.request_id == "r" and accepted.done is True


def test_example_9_when_accepted_runs_its_python_step_safe_with_the_code_hash() -> None:
    accepted = accept(EXAMPLE_9, "r", GN_CATALOG, NODES)
    last = accepted.operation_set.operations[-1]
    code = EXAMPLE_9["steps"][2]["payload"]["code"]
    assert last.operation_id == "step_3.01" and last.tool_name == "python.safe"
    assert last.args == {"code": code, "timeout_ms": 3000, "code_sha256": code_sha256(code)}
    assert last.safety_level == "safe_write"
    assert last.depends_on == [accepted.operation_set.operations[-2].operation_id]


@pytest.mark.clause("004-§python.3")
def test_python_step_when_trusted_compiles_to_the_trusted_tool_that_asks() -> None:
    response = copy.deepcopy(EXAMPLE_9)
    response["steps"][2]["payload"]["mode"] = "trusted"
    last = accept(response, "r", GN_CATALOG, NODES).operation_set.operations[-1]
    assert (last.tool_name, last.safety_level) == ("python.trusted", "destructive")


def test_python_step_when_bridge_has_no_python_tools_is_refused_naming_the_tool() -> None:
    tools = [t for t in GN_CATALOG.tools if not t.name.startswith("python.")]
    catalog = ToolCatalog(version="no-python", blender_version="5.0.1", tools=tools)
    with pytest.raises(PlanInvalid) as caught:
        accept(EXAMPLE_9, "r", catalog, NODES)
    assert caught.value.failure.error_code == "TOOL_UNKNOWN"
    assert "python.safe" in caught.value.failure.retry_hint


@pytest.mark.clause("004-§validation.6")
def test_python_step_when_code_over_the_setting_is_schema_invalid() -> None:
    doc = copy.deepcopy(EXAMPLE_9)
    doc["steps"][2]["payload"]["code"] = "x" * 101
    with pytest.raises(PlanInvalid) as caught:
        accept(doc, "r", GN_CATALOG, NODES, PlanLimits(max_python_chars=100))
    assert caught.value.failure.error_code == "SCHEMA_INVALID"
    assert "101 characters" in caught.value.message
    assert "BLENDMESH_MAX_PYTHON_CHARS" in caught.value.message


def test_response_when_schema_invalid_names_the_path() -> None:
    doc = copy.deepcopy(EXAMPLE_9)
    doc["steps"][0]["type"] = "SHELL"
    with pytest.raises(PlanInvalid) as caught:
        accept(doc, "r", GN_CATALOG, NODES)
    assert caught.value.failure.error_code == "SCHEMA_INVALID"
    assert "geonode-response.v1" in caught.value.failure.retry_hint
    assert "$.steps[0].type" in caught.value.message


def test_response_when_no_node_catalog_is_refused() -> None:
    with pytest.raises(PlanInvalid) as caught:
        accept(subdivide(), "r", GN_CATALOG, None)
    assert caught.value.failure.error_code == "TOOL_UNKNOWN"
    assert "node catalog" in caught.value.message


def test_response_when_compiled_over_max_operations_is_refused() -> None:
    with pytest.raises(PlanInvalid) as caught:
        accept(subdivide(), "r", GN_CATALOG, NODES, PlanLimits(max_operations=4))
    assert caught.value.failure.error_code == "SCHEMA_INVALID"
    assert "BLENDMESH_MAX_OPERATIONS" in caught.value.message
