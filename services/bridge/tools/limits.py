"""Constraints that hold an object within bounds: limit location, rotation and scale, and
constraint.remove, which undoes any constraint tool.

Each bound is given per axis as ``[min, max]``; an axis left out is free.
"""

from __future__ import annotations

import math
from typing import Any

from blendmesh_addon.tools.objects import require_object

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from .answers import NAMES, STRING, answer
from .constraints import added, constrained, constraint_tool
from .placing import LOCATION_LIMIT, ROTATION_LIMIT


def _range(description: str, bound: float) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "number", "minimum": -bound, "maximum": bound},
        "minItems": 2,
        "maxItems": 2,
        "description": description,
    }


def _ranges(unit: str, bound: float) -> dict[str, Any]:
    return {axis: _range(f"[min, max] on {axis.upper()}, in {unit}.", bound) for axis in "xyz"}


def _limit(args: dict[str, Any], kind: str, scale: float = 1.0) -> Any:
    require_object(args["object"])  # a missing object is named before missing bounds
    given = {axis: args[axis] for axis in "xyz" if axis in args}
    if not given:
        raise ToolError("invalid_input", "give at least one of x, y, z as [min, max]")
    for axis, (low, high) in given.items():
        if low > high:
            raise ToolError(
                "invalid_input", f"{axis}: min {low:g} is above max {high:g}; swap them"
            )
    con = constrained(args, kind)
    for axis, (low, high) in given.items():
        if kind == "LIMIT_ROTATION":
            setattr(con, f"use_limit_{axis}", True)
        else:
            setattr(con, f"use_min_{axis}", True)
            setattr(con, f"use_max_{axis}", True)
        setattr(con, f"min_{axis}", low * scale)
        setattr(con, f"max_{axis}", high * scale)
    return con


@constraint_tool(
    "constraint.limit_location",
    "Keep an object's location within [min, max] on the axes given.",
    _ranges("scene units", LOCATION_LIMIT),
)
def limit_location(args: dict[str, Any]) -> Outcome:
    con = _limit(args, "LIMIT_LOCATION")
    return added(con, f"{con.id_data.name!r} keeps within its location limits")


@constraint_tool(
    "constraint.limit_rotation",
    "Keep an object's rotation within [min, max] degrees on the axes given.",
    _ranges("degrees", ROTATION_LIMIT),
)
def limit_rotation(args: dict[str, Any]) -> Outcome:
    con = _limit(args, "LIMIT_ROTATION", math.radians(1))
    return added(con, f"{con.id_data.name!r} keeps within its rotation limits")


@constraint_tool(
    "constraint.limit_scale",
    "Keep an object's scale within [min, max] factors on the axes given.",
    {axis: _range(f"[min, max] scale on {axis.upper()}.", 1e4) for axis in "xyz"},
)
def limit_scale(args: dict[str, Any]) -> Outcome:
    con = _limit(args, "LIMIT_SCALE")
    return added(con, f"{con.id_data.name!r} keeps within its scale limits")


@tool(
    name="constraint.remove",
    touches=Touches(("object",)),
    description="Remove an object's constraint by name (what each constraint tool answered).",
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "name"],
        "properties": {
            "object": name_schema("The constrained object."),
            "name": name_schema("The constraint's name."),
        },
    },
    output_schema=answer({"object": STRING, "removed": STRING, "constraints": NAMES}),
    safety_level="destructive",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def remove(args: dict[str, Any]) -> Outcome:
    ob = require_object(args["object"])
    con = ob.constraints.get(args["name"])
    if con is None:
        have = [c.name for c in ob.constraints]
        raise ToolError(
            "not_found",
            f"{ob.name!r} has no constraint {args['name']!r}; it has {have or 'none'}",
        )
    ob.constraints.remove(con)
    return Outcome(
        data={
            "object": ob.name,
            "removed": args["name"],
            "constraints": [c.name for c in ob.constraints],
        },
        mutated=True,
        message=f"removed {args['name']!r} from {ob.name!r}",
    )
