"""Caps on the modifier properties that multiply geometry (finding D).

The caps are a maximum in the tools' JSON schemas, so the planner refuses an operation
over one with ARGS_INVALID before anything runs (the real catalog is checked on a mesh
in test_mesh_limits.py). Blender's own hard limits are far higher: an ARRAY count up to
2**31 - 1, subdivision levels up to 11.
"""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from services.bridge.budget.caps import PROPERTY_CAPS, capped_properties
from services.bridge.registry import Outcome, RegisteredTool, ToolSpec, validate

VALIDATOR = Draft202012Validator({"type": "object", "properties": capped_properties()})

EXPECTED = {
    "count": 1000,
    "levels": 6,
    "render_levels": 6,
    "segments": 100,
    "steps": 256,
    "render_steps": 256,
    "iterations": 100,
    "octree_depth": 10,
}


def test_caps_when_listed_are_the_documented_ones() -> None:
    assert {name: cap for name, (cap, _) in PROPERTY_CAPS.items()} == EXPECTED


@pytest.mark.parametrize(("name", "cap"), sorted(EXPECTED.items()))
def test_caps_when_value_over_cap_schema_refuses_naming_maximum(name: str, cap: int) -> None:
    errors = list(VALIDATOR.iter_errors({name: cap + 1}))
    assert len(errors) == 1 and list(errors[0].absolute_path) == [name]
    assert f"maximum of {cap}" in errors[0].message


@pytest.mark.parametrize(("name", "cap"), sorted(EXPECTED.items()))
def test_caps_when_value_at_cap_schema_accepts(name: str, cap: int) -> None:
    assert not list(VALIDATOR.iter_errors({name: cap}))


def test_caps_when_property_uncapped_or_not_a_number_leaves_it_to_the_tool() -> None:
    assert not list(VALIDATOR.iter_errors({"width": 1e5, "count": "many"}))


def test_caps_when_described_say_what_they_cap() -> None:
    described = capped_properties()
    assert "ARRAY" in described["count"]["description"]
    assert "SUBSURF" in described["levels"]["description"]


def _modifier_tool() -> RegisteredTool:
    schema = {
        "type": "object",
        "properties": {
            "object": {"type": "string"},
            "properties": {"type": "object", "properties": capped_properties()},
        },
    }
    spec = ToolSpec(
        name="modifier.add",
        description="",
        input_schema=schema,
        safety_level="safe_write",
        idempotence_class="non_idempotent",
        compensation="modifier.remove",
    )
    return RegisteredTool(
        spec, lambda args: Outcome(data=None, mutated=False), Draft202012Validator(schema)
    )


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"object": "Box", "properties": {"count": 200_000}}, "maximum of 1000"),
        ({"object": "A\x00B"}, "argument 'object' contains a control character (U+0000)"),
        ({"object": "Box", "properties": {"count": int("9" * 400)}}, "is too large a number"),
    ],
)
def test_bridge_validate_when_called_directly_refuses_what_the_planner_refuses(
    arguments: dict[str, object], named: str
) -> None:
    reason = validate(_modifier_tool(), arguments)
    assert reason is not None and named in reason
