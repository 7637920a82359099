"""The generated planner schema accepts and rejects what spec 000's own schema does."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from contracts.operations import convert_operation_set
from contracts.schema_gen import SCHEMA_DIR, main, planner_operations_schema, render

# The normative schema of spec 000 §Planner Output Schema, copied verbatim so the test
# does not depend on files outside the repository.
SPEC_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["request_id", "operations"],
    "properties": {
        "request_id": {"type": "string", "minLength": 1},
        "operations": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["operation_id", "tool_name", "args", "depends_on", "safety_level"],
                "properties": {
                    "operation_id": {"type": "string", "pattern": "^[a-zA-Z0-9_.:-]{1,128}$"},
                    "tool_name": {"type": "string", "minLength": 1},
                    "args": {"type": "object", "additionalProperties": True},
                    "depends_on": {
                        "type": "array",
                        "items": {"type": "string", "pattern": "^[a-zA-Z0-9_.:-]{1,128}$"},
                        "uniqueItems": True,
                    },
                    "safety_level": {
                        "type": "string",
                        "enum": ["read_only", "safe_write", "destructive"],
                    },
                },
            },
        },
    },
}

GOOD: dict[str, Any] = {
    "request_id": "req-1",
    "operations": [
        {
            "operation_id": "op1",
            "tool_name": "object.create",
            "args": {"primitive": "cube"},
            "depends_on": [],
            "safety_level": "safe_write",
        },
        {
            "operation_id": "op2:b.c-d",
            "tool_name": "object.delete",
            "args": {"name": "Cube"},
            "depends_on": ["op1"],
            "safety_level": "destructive",
        },
    ],
}


def mutate(path: list[Any], value: Any = None, delete: bool = False) -> dict[str, Any]:
    doc = copy.deepcopy(GOOD)
    target = doc
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


CASES = {
    "good": GOOD,
    "extra_top_level": {**GOOD, "extra": 1},
    "extra_in_operation": mutate(["operations", 0, "note"], "x"),
    "missing_request_id": mutate(["request_id"], delete=True),
    "empty_request_id": mutate(["request_id"], ""),
    "no_operations": mutate(["operations"], []),
    "missing_depends_on": mutate(["operations", 0, "depends_on"], delete=True),
    "bad_operation_id": mutate(["operations", 0, "operation_id"], "op 1"),
    "long_operation_id": mutate(["operations", 0, "operation_id"], "a" * 129),
    "max_operation_id": mutate(["operations", 0, "operation_id"], "a" * 128),
    "newline_operation_id": mutate(["operations", 0, "operation_id"], "op1\n"),
    "duplicate_depends_on": mutate(["operations", 1, "depends_on"], ["op1", "op1"]),
    "bad_dependency_id": mutate(["operations", 1, "depends_on"], ["op/1"]),
    "bad_safety_level": mutate(["operations", 0, "safety_level"], "harmless"),
    "empty_tool_name": mutate(["operations", 0, "tool_name"], ""),
    "args_not_object": mutate(["operations", 0, "args"], [1]),
    "args_with_anything": mutate(["operations", 0, "args"], {"nested": {"x": [1, None]}}),
    "request_id_number": mutate(["request_id"], 5),
}


def spec_accepts(doc: Any) -> bool:
    return Draft202012Validator(SPEC_SCHEMA).is_valid(doc)


def spec_accepts_ecma(doc: Any) -> bool:
    """JSON Schema patterns are ECMA-262, where "$" never matches before a final newline;
    Python's re (used by the jsonschema package) lets "op1\n" through. The contract type
    follows the spec's ECMA meaning."""
    if not spec_accepts(doc):
        return False
    ids = [i for op in doc["operations"] for i in (op["operation_id"], *op["depends_on"])]
    return not any(i.endswith("\n") for i in ids)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.clause(
    "000-§planning.2",
    "000-§planner-schema.1",
    "000-§planner-schema.2",
    "000-§planner-schema.3",
    "000-§planner-schema.4",
    "000-§planner-schema.5",
    "000-§planner-schema.6",
    "000-§planner-schema.7",
    "000-§planner-schema.8",
    "000-§planner-schema.9",
)
def test_generated_schema_when_validating_matches_spec_schema(name: str) -> None:
    doc = CASES[name]
    generated = Draft202012Validator(planner_operations_schema())
    assert generated.is_valid(doc) == spec_accepts(doc)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.clause(
    "000-§planning.1",
    "000-§planner-schema.1",
    "000-§planner-schema.2",
    "000-§planner-schema.3",
    "000-§planner-schema.4",
    "000-§planner-schema.5",
    "000-§planner-schema.7",
    "000-§planner-schema.8",
    "000-§planner-schema.9",
)
def test_operation_set_type_when_decoding_matches_spec_schema(name: str) -> None:
    doc = CASES[name]
    try:
        convert_operation_set(doc)
        accepted = True
    except msgspec.ValidationError:
        accepted = False
    assert accepted == spec_accepts_ecma(doc)


@pytest.mark.clause("000-§adoption.2")
def test_committed_schema_when_regenerated_is_identical() -> None:
    assert main(["--check"]) == 0
    committed = json.loads((SCHEMA_DIR / "planner-operations.v1.json").read_text())
    assert committed == planner_operations_schema()


class _Indented(msgspec.Struct):
    """First line.

    A second paragraph, indented as every docstring in a class body is."""

    n: int


def test_published_schema_when_rendered_does_not_depend_on_msgspec_dedenting() -> None:
    # msgspec 0.22 keeps a docstring's indentation in a description and 0.23 strips it;
    # a README install resolves the newer one, CI the lock's, and both must publish the same.
    text = render(msgspec.json.schema(_Indented))
    description = json.loads(text)["$defs"]["_Indented"]["description"]
    assert (
        description
        == "First line.\n\nA second paragraph, indented as every docstring in a class body is."
    )
