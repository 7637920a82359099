"""The spec 004 response contract: what it accepts, what §7's strict mode refuses, the
published schema, and the operation ids that carry their step."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from contracts.geonodes import (
    MAX_OPS_PER_STEP,
    MAX_STEPS,
    NodeTreeStep,
    PythonStep,
    convert_geonode_response,
    decode_geonode_response,
    is_geonode_response,
    operation_id,
    step_of,
)
from contracts.limits import LimitExceeded, RequestRefused, check_plan
from contracts.operations import _ID_RE
from contracts.schema_gen import SCHEMA_DIR, geonode_response_schema, published
from tests.support.geonode_fixture import EXAMPLE_9, subdivide


def changed(doc: dict[str, Any], path: list[Any], value: Any = None, delete: bool = False) -> Any:
    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


@pytest.mark.clause(
    "004-§example.1", "004-§contract.2", "004-§step-schema.1", "004-§step-schema.2", "004-§python.1"
)
def test_example_9_when_converted_parses_every_step_including_python() -> None:
    response = convert_geonode_response(EXAMPLE_9)
    assert [type(s).__name__ for s in response.steps] == [
        "NodeTreeStep",
        "GnOpsStep",
        "PythonStep",
    ]
    python = response.steps[2]
    assert isinstance(python, PythonStep)
    assert python.payload.mode == "safe" and python.payload.timeout_ms == 3000
    assert response.done and response.meta.requires_gate_verification


def test_response_when_no_steps_and_done_is_the_shape_section_1_shows() -> None:
    """004 §1 shows ``{"steps": [], "done": true}``: an answer that changes nothing."""
    shown = {
        "version": "1.0",
        "steps": [],
        "done": True,
        "final_message": "string",
        "meta": {"requires_gate_verification": True},
    }
    response = convert_geonode_response(shown)
    assert response.steps == [] and response.done


def test_response_when_no_steps_but_not_done_is_rejected_saying_why() -> None:
    doc = {**EXAMPLE_9, "steps": [], "done": False}
    with pytest.raises(msgspec.ValidationError, match="no steps must set done to true"):
        convert_geonode_response(doc)


@pytest.mark.clause("004-§contract.1", "004-§example.1")
def test_example_9_when_decoded_from_text_equals_the_converted_one() -> None:
    assert decode_geonode_response(json.dumps(EXAMPLE_9)) == convert_geonode_response(EXAMPLE_9)


@pytest.mark.clause("004-§python.2")
def test_python_payload_when_mode_omitted_is_safe() -> None:
    doc = changed(EXAMPLE_9, ["steps", 2, "payload", "mode"], delete=True)
    step = convert_geonode_response(doc).steps[2]
    assert isinstance(step, PythonStep) and step.payload.mode == "safe"


@pytest.mark.clause("004-§node-tree.6")
def test_node_tree_ops_when_converted_keep_from_and_to() -> None:
    step = convert_geonode_response(subdivide()).steps[0]
    assert isinstance(step, NodeTreeStep)
    link = step.payload.operations[-1]
    assert msgspec.to_builtins(link) == {
        "op": "link",
        "from": {"node_id": "n1", "socket": "Mesh"},
        "to": {"node_id": "group_output", "socket": "Geometry"},
    }


REJECTED = {
    "unknown top-level field": (["extra"], 1),
    "unknown step field": (["steps", 0, "extra"], 1),
    "unknown payload field": (["steps", 1, "payload", "extra"], 1),
    "unknown op field": (["steps", 1, "payload", "ops", 0, "extra"], 1),
    "unknown step type": (["steps", 0, "type"], "SHELL"),
    "unknown GN op": (["steps", 1, "payload", "ops", 0, "op"], "explode"),
    "unknown NODE_TREE op": (
        ["steps", 0, "payload", "operations"],
        [{"op": "create_group", "node_id": "a"}],
    ),
    "wrong version": (["version"], "2.0"),
    "wrong GN_OPS v": (["steps", 1, "payload", "v"], 2),
    "unknown python mode": (["steps", 2, "payload", "mode"], "root"),
    "timeout too long": (["steps", 2, "payload", "timeout_ms"], 600_000),
    "step id with a dot": (["steps", 0, "id"], "step.1"),
    "step id with a newline": (["steps", 0, "id"], "step_1\n"),
    "duplicate step ids": (["steps", 1, "id"], "step_1"),
    "too many steps": (["steps"], [EXAMPLE_9["steps"][1]] * (MAX_STEPS + 1)),
    "done not a boolean": (["done"], "yes"),
    "final message too long": (["final_message"], "x" * 2001),
}
# What each refusal says: the model's next answer is repaired from these words, so they
# name the field (its JSON path) and what is wrong with it.
SAID = {
    "unknown top-level field": "unknown field `extra`",
    "unknown step field": "unknown field `extra` - at `$.steps[0]`",
    "unknown payload field": "unknown field `extra` - at `$.steps[1].payload`",
    "unknown op field": "unknown field `extra` - at `$.steps[1].payload.ops[0]`",
    "unknown step type": "Invalid value 'SHELL' - at `$.steps[0].type`",
    "unknown GN op": "Invalid value 'explode' - at `$.steps[1].payload.ops[0].op`",
    "unknown NODE_TREE op": "Invalid value 'create_group' - at `$.steps[0].payload.operations",
    "wrong version": "Invalid enum value '2.0' - at `$.version`",
    "wrong GN_OPS v": "Invalid enum value 2 - at `$.steps[1].payload.v`",
    "unknown python mode": "Invalid enum value 'root' - at `$.steps[2].payload.mode`",
    "timeout too long": "<= 60000 - at `$.steps[2].payload.timeout_ms`",
    "step id with a dot": "- at `$.steps[0].id`",
    "step id with a newline": r"step id 'step_1\n' must match",
    "duplicate step ids": "step ids must be unique; repeated: step_1",
    "too many steps": f"length <= {MAX_STEPS} - at `$.steps`",
    "done not a boolean": "Expected `bool`, got `str` - at `$.done`",
    "final message too long": "length <= 2000 - at `$.final_message`",
}


@pytest.mark.parametrize("case", list(REJECTED))
@pytest.mark.clause("004-§validation.1", "004-§validation.2", "004-§contract.1")
def test_response_when_not_strictly_valid_is_rejected(case: str) -> None:
    path, value = REJECTED[case]
    doc = changed(EXAMPLE_9, path, value)
    if case == "too many steps":
        doc["steps"] = [{**s, "id": f"s{i}"} for i, s in enumerate(doc["steps"])]
    with pytest.raises(msgspec.ValidationError) as refused:
        convert_geonode_response(doc)
    assert SAID[case] in str(refused.value)


@pytest.mark.clause("004-§validation.3")
def test_response_when_final_message_missing_is_rejected() -> None:
    with pytest.raises(msgspec.ValidationError, match="final_message"):
        convert_geonode_response(changed(EXAMPLE_9, ["final_message"], delete=True))


@pytest.mark.clause("004-§validation.5")
def test_step_when_ops_over_the_limit_is_rejected() -> None:
    ops = [{"op": "cleanup_unused"}] * (MAX_OPS_PER_STEP + 1)
    with pytest.raises(msgspec.ValidationError, match="length <= 200"):
        convert_geonode_response(changed(EXAMPLE_9, ["steps", 1, "payload", "ops"], ops))


def test_node_id_when_it_holds_a_space_is_rejected() -> None:
    doc = changed(subdivide(), ["steps", 0, "payload", "operations", 0, "node_id"], "my node")
    with pytest.raises(
        msgspec.ValidationError, match=r"at `\$\.steps\[0\]\.payload\.operations\[0\]\.node_id`"
    ):
        convert_geonode_response(doc)


def test_create_node_when_location_has_three_numbers_is_rejected() -> None:
    doc = changed(subdivide(), ["steps", 0, "payload", "operations", 0, "location"], [1, 2, 3])
    with pytest.raises(msgspec.ValidationError, match=r"length <= 2 - at `\$.+\.location`"):
        convert_geonode_response(doc)


def test_shape_when_steps_or_version_is_a_geonode_response() -> None:
    assert is_geonode_response(EXAMPLE_9)
    assert is_geonode_response({"version": "1.0"})
    assert not is_geonode_response({"request_id": "r", "operations": []})
    assert not is_geonode_response({"steps": [], "operations": []})
    assert not is_geonode_response([EXAMPLE_9])


def test_published_schema_when_generated_matches_the_committed_file() -> None:
    committed = json.loads((SCHEMA_DIR / "geonode-response.v1.json").read_text())
    assert committed == published("geonode-response.v1.json")


@pytest.mark.clause("004-§validation.1", "004-§example.1")
def test_published_schema_when_validating_accepts_example_and_rejects_unknowns() -> None:
    validator = Draft202012Validator(geonode_response_schema())
    assert list(validator.iter_errors(EXAMPLE_9)) == []
    assert list(validator.iter_errors(subdivide())) == []
    for case in ("unknown step type", "unknown op field", "unknown GN op", "wrong version"):
        path, value = REJECTED[case]
        assert list(validator.iter_errors(changed(EXAMPLE_9, path, value))), case
    missing = changed(EXAMPLE_9, ["final_message"], delete=True)
    assert list(validator.iter_errors(missing))


def test_operation_id_when_derived_fits_spec_000_and_reads_back_its_step() -> None:
    for step, index, count in (("step_1", 1, 3), ("s-9", 12, 201), ("a" * 64, 201, 201)):
        op = operation_id(step, index, count)
        assert _ID_RE.fullmatch(op)
        assert step_of(op) == step
    assert operation_id("step_1", 2, 9) == "step_1.02"
    assert operation_id("step_1", 2, 150) == "step_1.002"


@pytest.mark.parametrize("op", ["op01", "step_1", "step.1.x", "a.1", "step_1.", ".01", "a.0001"])
def test_step_of_when_id_is_not_compiled_shape_is_none(op: str) -> None:
    assert step_of(op) is None


@pytest.mark.clause("004-§validation.5")
def test_check_plan_when_response_has_too_many_steps_raises_limit() -> None:
    doc = changed(EXAMPLE_9, ["steps"], [EXAMPLE_9["steps"][1]] * (MAX_STEPS + 1))
    with pytest.raises(LimitExceeded, match="26 steps"):
        check_plan(doc, 500)


@pytest.mark.clause("004-§validation.5")
def test_check_plan_when_response_has_exactly_the_most_steps_passes() -> None:
    # The boundary itself: 25 steps are allowed (004 §7: "at most 25").
    step = EXAMPLE_9["steps"][1]
    doc = changed(EXAMPLE_9, ["steps"], [{**step, "id": f"s{n}"} for n in range(MAX_STEPS)])
    assert MAX_STEPS == 25
    check_plan(doc, 500)
    assert len(convert_geonode_response(doc).steps) == MAX_STEPS


def test_check_plan_when_response_compiles_to_too_many_operations_raises_limit() -> None:
    with pytest.raises(LimitExceeded, match="BLENDMESH_MAX_OPERATIONS"):
        check_plan(subdivide(), 3)


def test_check_plan_when_a_value_is_not_finite_names_the_step() -> None:
    with pytest.raises(RequestRefused, match=r"step step_1: payload .*not a finite number"):
        check_plan(subdivide(level=float("nan")), 500)


def test_check_plan_when_python_code_has_newlines_lets_it_through() -> None:
    doc = changed(EXAMPLE_9, ["steps", 2, "payload", "code"], "import bpy\nprint(1)\n")
    check_plan(doc, 500)
