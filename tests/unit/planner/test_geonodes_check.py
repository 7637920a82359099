"""A spec 004 response checked against the node catalog: each refusal names the step, the
op and what would be valid, with a "did you mean" from the catalog."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from contracts.failures import FailureContract
from contracts.geonodes import convert_geonode_response, step_of
from services.planner.geonodes.check import check_response
from services.planner.geonodes_values import links
from services.planner.graph import PlanInvalid
from tests.support.geonode_fixture import NODES, subdivide, with_ops


def refusal(doc: dict[str, Any]) -> tuple[FailureContract, str]:
    with pytest.raises(PlanInvalid) as caught:
        check_response(convert_geonode_response(doc), NODES)
    return caught.value.failure, caught.value.message


def ok(doc: dict[str, Any]) -> None:
    check_response(convert_geonode_response(doc), NODES)


def link(a: str, out: str, b: str, into: str) -> dict[str, Any]:
    return {
        "op": "link",
        "from": {"node_id": a, "socket": out},
        "to": {"node_id": b, "socket": into},
    }


def node(node_id: str, bl_idname: str) -> dict[str, Any]:
    return {"op": "create_node", "node_id": node_id, "bl_idname": bl_idname}


def set_input(node_id: str, socket: str, value: Any) -> dict[str, Any]:
    return {"op": "set_input_default", "node_id": node_id, "socket": socket, "value": value}


def set_prop(node_id: str, prop: str, value: Any) -> dict[str, Any]:
    return {"op": "set_property", "node_id": node_id, "property": prop, "value": value}


def test_section_3_example_when_checked_passes() -> None:
    ok(subdivide())


def test_unknown_bl_idname_when_a_typo_is_tool_unknown_with_did_you_mean() -> None:
    doc = with_ops(subdivide(), node("n2", "GeometryNodeSubdivideSurface"))
    contract, message = refusal(doc)
    assert contract.error_code == "TOOL_UNKNOWN"
    assert "step step_1, operations[4] (create_node)" in contract.retry_hint
    assert "'GeometryNodeSubdivideSurface' is not a node type of Blender 5.0.1" in message
    assert "did you mean 'GeometryNodeSubdivisionSurface'" in message
    assert [(s.operation_id, s.action) for s in contract.minimal_repair_plan] == [
        ("step_1.06", "replace_args")
    ]
    assert step_of(contract.minimal_repair_plan[0].operation_id) == "step_1"


def test_unknown_bl_idname_when_given_a_label_suggests_its_bl_idname() -> None:
    _, message = refusal(with_ops(subdivide(), node("n2", "Instance on Points")))
    assert "did you mean 'GeometryNodeInstanceOnPoints'" in message


def test_unknown_input_socket_when_misspelt_names_inputs_and_did_you_mean() -> None:
    contract, message = refusal(with_ops(subdivide(), set_input("n1", "Levle", 2)))
    assert contract.error_code == "ARGS_INVALID"
    assert "operations[4] (set_input_default)" in message
    assert "no input socket 'Levle' (did you mean 'Level'?)" in message
    assert "its inputs: Mesh, Level, Edge Crease" in message


def test_link_when_to_names_an_output_is_refused() -> None:
    doc = with_ops(
        subdivide(), node("n2", "GeometryNodeSetPosition"), link("n1", "Mesh", "n2", "Position")
    )
    doc["steps"][0]["payload"]["operations"][-1]["to"]["socket"] = "Geometry"
    ok(doc)
    bad = with_ops(
        subdivide(), node("n2", "GeometryNodeJoinGeometry"), link("n2", "Geometry", "n1", "Mesh")
    )
    ok(bad)  # Join Geometry has an output Geometry and an input Geometry: both fine
    doc = with_ops(
        subdivide(),
        node("p", "GeometryNodeDistributePointsOnFaces"),
        link("n1", "Mesh", "p", "Points"),
    )
    _, message = refusal(doc)
    assert "'Points' is an output of GeometryNodeDistributePointsOnFaces, not an input" in message


def test_link_when_from_names_an_input_is_refused() -> None:
    doc = with_ops(subdivide(), link("n1", "Level", "group_output", "Geometry"))
    _, message = refusal(doc)
    assert "'Level' is an input of GeometryNodeSubdivisionSurface, not an output" in message


def test_link_when_geometry_meets_a_number_is_refused_naming_what_fits() -> None:
    doc = with_ops(subdivide(), link("group_input", "Geometry", "n1", "Level"))
    contract, message = refusal(doc)
    assert contract.error_code == "ARGS_INVALID"
    assert "group_input.Geometry is GEOMETRY and n1.Level is INT" in message
    assert "link it to a socket of type GEOMETRY" in message


def test_link_when_numbers_convert_is_accepted() -> None:
    doc = with_ops(
        subdivide(),
        node("noise", "ShaderNodeTexNoise"),
        link("noise", "Fac", "n1", "Level"),
        link("noise", "Color", "n1", "Edge Crease"),
    )
    ok(doc)


def test_link_rule_when_read_as_a_table_follows_blender() -> None:
    assert links("VALUE", "INT") and links("BOOLEAN", "RGBA") and links("VECTOR", "ROTATION")
    assert links("ROTATION", "MATRIX") and links("MATRIX", "ROTATION")
    assert not links("INT", "ROTATION") and not links("RGBA", "ROTATION")
    assert not links("GEOMETRY", "VALUE") and not links("VALUE", "GEOMETRY")
    assert not links("STRING", "MENU") and not links("OBJECT", "GEOMETRY")
    assert links("GEOMETRY", "GEOMETRY") and links(None, "GEOMETRY")


@pytest.mark.parametrize(
    ("socket", "value", "said"),
    [
        ("Level", "two", "needs a whole number, not 'two'"),
        ("Level", 2.5, "needs a whole number, not 2.5"),
        ("Limit Surface", 1, "needs true or false, not 1"),
        ("Edge Crease", 1.5, "1.5 is above the socket's maximum 1"),
        ("Edge Crease", -0.5, "-0.5 is below the socket's minimum 0"),
        ("Mesh", 1, "a GEOMETRY socket holds no value of its own"),
    ],
)
def test_set_input_when_value_is_wrong_for_the_socket_is_refused(
    socket: str, value: Any, said: str
) -> None:
    contract, message = refusal(with_ops(subdivide(), set_input("n1", socket, value)))
    assert contract.error_code == "ARGS_INVALID"
    assert f"input '{socket}' of n1: {said}" in message


def test_set_input_when_integral_float_or_vector_fits_is_accepted() -> None:
    doc = with_ops(
        subdivide(level=2.0),
        node("line", "GeometryNodeMeshLine"),
        set_input("line", "Offset", [1, 0, 0]),
        node("info", "GeometryNodeObjectInfo"),
        set_input("info", "Object", "Rock"),
    )
    ok(doc)


def test_set_input_when_vector_has_wrong_length_is_refused() -> None:
    doc = with_ops(
        subdivide(), node("line", "GeometryNodeMeshLine"), set_input("line", "Offset", [1, 0])
    )
    _, message = refusal(doc)
    assert "needs a list of 3 numbers (VECTOR), not [1, 0]" in message


def test_set_input_when_socket_repeats_its_name_takes_the_identifier() -> None:
    doc = with_ops(
        subdivide(),
        node("math", "ShaderNodeMath"),
        set_input("math", "Value_001", 2.0),
        set_input("math", "Value", 1.0),
    )
    ok(doc)
    _, message = refusal(
        with_ops(subdivide(), node("math", "ShaderNodeMath"), set_input("math", "Valu", 1))
    )
    assert "its inputs: Value, Value_001" in message  # a divide's third input is off


def test_set_property_when_not_on_the_node_is_refused_with_did_you_mean() -> None:
    doc = with_ops(subdivide(), node("math", "ShaderNodeMath"), set_prop("math", "operaton", "ADD"))
    contract, message = refusal(doc)
    assert contract.error_code == "ARGS_INVALID"
    assert "ShaderNodeMath has no property 'operaton' (did you mean 'operation'?)" in message


def test_set_property_when_enum_value_not_an_item_is_refused_with_did_you_mean() -> None:
    doc = with_ops(
        subdivide(), node("math", "ShaderNodeMath"), set_prop("math", "operation", "DIVDE")
    )
    _, message = refusal(doc)
    assert "'DIVDE' is not an item of ShaderNodeMath.operation (did you mean 'DIVIDE'?)" in message
    assert "items: ADD, SUBTRACT" in message


def test_set_property_when_value_has_wrong_type_is_refused() -> None:
    doc = with_ops(
        subdivide(), node("math", "ShaderNodeMath"), set_prop("math", "use_clamp", "yes")
    )
    _, message = refusal(doc)
    assert "property 'use_clamp' of math: needs true or false" in message


def test_node_tree_when_naming_a_node_nobody_created_is_refused_with_did_you_mean() -> None:
    contract, message = refusal(with_ops(subdivide(), set_input("n2", "Level", 2)))
    assert contract.error_code == "ARGS_INVALID"
    assert "no earlier op of this response creates node 'n2'" in message
    assert "known here: n1, group_input, group_output" in message


def test_node_tree_when_a_group_node_is_misspelt_suggests_it() -> None:
    _, message = refusal(with_ops(subdivide(), link("group_inptu", "Geometry", "n1", "Mesh")))
    assert "creates node 'group_inptu' (did you mean 'group_input' or 'group_output'?)" in message


def test_node_tree_when_a_node_was_deleted_no_longer_knows_it() -> None:
    doc = with_ops(subdivide(), {"op": "delete_node", "node_id": "n1"}, set_input("n1", "Level", 1))
    _, message = refusal(doc)
    assert "creates node 'n1'" in message


def test_gn_ops_when_naming_a_node_of_the_scene_lets_it_through() -> None:
    doc = subdivide()
    doc["steps"].append(
        {
            "id": "step_2",
            "type": "GN_OPS",
            "payload": {
                "v": 1,
                "target": {"object_name": "Other", "modifier_name": "GeometryNodes"},
                "ops": [
                    {
                        "op": "set_input",
                        "node_id": "old_node",
                        "socket_name": "Anything",
                        "value": 1,
                    },
                    {
                        "op": "link",
                        "from_node": "old_node",
                        "from_socket": "Out",
                        "to_node": "group_output",
                        "to_socket": "Whatever",
                    },
                ],
            },
        }
    )
    ok(doc)


def test_gn_ops_when_it_names_a_known_node_checks_its_sockets() -> None:
    doc = subdivide()
    doc["steps"].append(
        {
            "id": "step_2",
            "type": "GN_OPS",
            "payload": {
                "v": 1,
                "target": {"object_name": "Cube", "modifier_name": "GeometryNodes"},
                "ops": [{"op": "set_input", "node_id": "n1", "socket_name": "Lvl", "value": 1}],
            },
        }
    )
    contract, message = refusal(doc)
    assert "step step_2, ops[0] (set_input)" in message
    assert contract.minimal_repair_plan[0].operation_id == "step_2.01"


def test_group_socket_when_unknown_is_refused_until_set_group_io_declares_it() -> None:
    doc = with_ops(subdivide(), link("group_input", "Geometri", "n1", "Mesh"))
    _, message = refusal(doc)
    assert "the group has no input 'Geometri' (did you mean 'Geometry'?)" in message
    io = {"op": "set_group_io", "in_out": "INPUT", "name": "Levels", "socket_type": "NodeSocketInt"}
    ok(with_ops(subdivide(), io, link("group_input", "Levels", "n1", "Level")))
    bad_type = {**io, "socket_type": "NodeSocketInteger"}
    _, message = refusal(with_ops(subdivide(), bad_type))
    assert "did you mean 'NodeSocketInt'" in message


def test_group_output_when_linked_from_is_refused() -> None:
    _, message = refusal(with_ops(subdivide(), link("group_output", "Geometry", "n1", "Mesh")))
    assert "group_output has only input sockets" in message


def test_create_node_when_id_is_taken_or_reserved_is_refused() -> None:
    _, message = refusal(with_ops(subdivide(), node("n1", "ShaderNodeMath")))
    assert "node id 'n1' is taken" in message
    _, message = refusal(with_ops(subdivide(), node("group_output", "ShaderNodeMath")))
    assert "'group_output' is the group's own node" in message
    _, message = refusal(with_ops(subdivide(), node("gi", "NodeGroupInput")))
    assert "NodeGroupInput is the group's own node" in message


def test_set_input_on_group_nodes_is_refused() -> None:
    _, message = refusal(with_ops(subdivide(), set_input("group_output", "Geometry", 1)))
    assert "group_output's sockets hold no values of their own" in message


def test_second_node_tree_when_naming_another_group_for_the_modifier_is_refused() -> None:
    doc = subdivide()
    second = copy.deepcopy(doc["steps"][0])
    second["id"] = "step_2"
    second["payload"]["target"]["node_group_name"] = "Other"
    second["payload"]["operations"] = []
    doc["steps"].append(second)
    contract, message = refusal(doc)
    assert "step step_2" in contract.retry_hint and "'GN_Assistant_Group'" in message
