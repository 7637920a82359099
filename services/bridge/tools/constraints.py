"""Object constraints that follow another object: track-to, damped-track, child-of,
follow-path, copy location and copy rotation; constraint.remove undoes any of them.

Each is its own tool with its own schema, so a plan names exactly the settings that
constraint has. A constraint is added to an object by name; its target must be another
object of the scene (follow-path: a curve). Adding is undone by removing the constraint
by the name the call answered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import bpy

from blendmesh_addon.tools.objects import require_object
from contracts.bridge import Compensation

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from .answers import NAMES, STRING, answer, nullable

AXES = ["x", "y", "z", "-x", "-y", "-z"]
TRACK_AXIS = {a: ("TRACK_NEGATIVE_" if a[0] == "-" else "TRACK_") + a[-1].upper() for a in AXES}
FORWARD_AXIS = {a: ("FORWARD_" if a[0] != "-" else "TRACK_NEGATIVE_") + a[-1].upper() for a in AXES}
UP_AXIS = {a: f"UP_{a.upper()}" for a in ("x", "y", "z")}
CONSTRAINT_ANSWER = answer(
    {
        "object": STRING,
        "constraint": STRING,
        "type": STRING,
        "target": nullable(STRING),
        "constraints": NAMES,
    }
)
OBJECT = name_schema("The object the constraint is added to.")
TARGET = name_schema("The object it follows (another object of the scene).")
LABEL = name_schema("Constraint name (default Blender's, e.g. 'Track To'); unique per object.")
USE_AXES: dict[str, Any] = {
    "type": "array",
    "items": {"enum": ["x", "y", "z"]},
    "minItems": 1,
    "maxItems": 3,
    "uniqueItems": True,
    "description": "The axes copied (default all three).",
}


def constrained(args: dict[str, Any], kind: str, target_type: str | None = None) -> Any:
    """Check the object, the constraint's name and the target, then add the constraint;
    nothing is written before every check has passed."""
    ob = require_object(args["object"])
    label = args.get("name")
    if label is not None and ob.constraints.get(label) is not None:
        raise ToolError(
            "conflict", f"{ob.name!r} already has a constraint named {label!r}; name another"
        )
    target = None
    if "target" in args:
        target = require_object(args["target"])
        if target == ob:
            raise ToolError(
                "invalid_input", f"{ob.name!r} cannot follow itself; name another target"
            )
        if target_type is not None and target.type != target_type:
            raise ToolError(
                "invalid_input",
                f"the target {target.name!r} is of type {target.type}; this constraint follows a "
                f"{target_type} object",
            )
    con = ob.constraints.new(kind)
    if label is not None:
        con.name = label
    if target is not None:
        con.target = target
    return con


def added(con: Any, message: str) -> Outcome:
    """The answer of every call that added ``con``; its inverse removes it."""
    ob = con.id_data
    target = getattr(con, "target", None)
    return Outcome(
        data={
            "object": ob.name,
            "constraint": con.name,
            "type": con.type.lower(),
            "target": target.name if target is not None else None,
            "constraints": [c.name for c in ob.constraints],
        },
        mutated=True,
        message=message,
        compensation=Compensation(
            tool="constraint.remove", arguments={"object": ob.name, "name": con.name}
        ),
    )


def _copy_axes(con: Any, args: dict[str, Any]) -> None:
    axes = args.get("axes", ["x", "y", "z"])
    for axis in "xyz":
        setattr(con, f"use_{axis}", axis in axes)


def constraint_tool(
    name: str, description: str, properties: dict[str, Any], required: tuple[str, ...] = ()
) -> Callable[[Callable[[dict[str, Any]], Outcome]], Callable[[dict[str, Any]], Outcome]]:
    """Register a constraint-adding tool with the schema and classes they all share."""
    return tool(
        name=name,
        touches=Touches(("object", "target")),
        description=description,
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["object", *required],
            "properties": {"object": OBJECT, "name": LABEL, **properties},
        },
        output_schema=CONSTRAINT_ANSWER,
        safety_level="safe_write",
        idempotence_class="non_idempotent",
        compensation="constraint.remove",
    )


@constraint_tool(
    "constraint.track_to",
    "Point an object's axis at a target object, keeping an up axis (cameras and lights "
    "aim down -Z with Y up, the default).",
    {
        "target": TARGET,
        "track_axis": {"enum": AXES, "description": "The axis that points (default -z)."},
        "up_axis": {"enum": sorted(UP_AXIS), "description": "The axis kept up (default y)."},
    },
    ("target",),
)
def track_to(args: dict[str, Any]) -> Outcome:
    track, up = args.get("track_axis", "-z"), args.get("up_axis", "y")
    if track[-1] == up:
        raise ToolError(
            "invalid_input", f"track_axis {track} and up_axis {up} are the same axis; pick two"
        )
    con = constrained(args, "TRACK_TO")
    con.track_axis, con.up_axis = TRACK_AXIS[track], UP_AXIS[up]
    return added(con, f"{con.id_data.name!r} tracks {con.target.name!r}")


@constraint_tool(
    "constraint.damped_track",
    "Turn an object's axis towards a target by the shortest rotation (no up axis kept).",
    {"target": TARGET, "track_axis": {"enum": AXES, "description": "Default y."}},
    ("target",),
)
def damped_track(args: dict[str, Any]) -> Outcome:
    con = constrained(args, "DAMPED_TRACK")
    con.track_axis = TRACK_AXIS[args.get("track_axis", "y")]
    return added(con, f"{con.id_data.name!r} turns towards {con.target.name!r}")


@constraint_tool(
    "constraint.child_of",
    "Make an object move with a target as if parented, without changing its parent; by "
    "default it stays where it is now (the inverse is set).",
    {
        "target": TARGET,
        "keep_in_place": {"type": "boolean", "description": "Set the inverse (default true)."},
    },
    ("target",),
)
def child_of(args: dict[str, Any]) -> Outcome:
    con = constrained(args, "CHILD_OF")
    if args.get("keep_in_place", True):
        bpy.context.view_layer.update()
        con.inverse_matrix = con.target.matrix_world.inverted()
    return added(con, f"{con.id_data.name!r} follows {con.target.name!r} as a child")


@constraint_tool(
    "constraint.follow_path",
    "Move an object along a curve: at a fixed place on it (offset 0..1 of its length) or "
    "over the curve's path animation, optionally turning with it.",
    {
        "target": name_schema("The curve the object follows."),
        "offset": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "Place along the curve, 0 its start and 1 its end (default 0).",
        },
        "follow_curve": {"type": "boolean", "description": "Turn with the curve (default off)."},
        "forward_axis": {"enum": AXES, "description": "Axis along the path (default y)."},
    },
    ("target",),
)
def follow_path(args: dict[str, Any]) -> Outcome:
    con = constrained(args, "FOLLOW_PATH", target_type="CURVE")
    con.use_fixed_location = True
    con.offset_factor = args.get("offset", 0.0)
    con.use_curve_follow = args.get("follow_curve", False)
    con.forward_axis = FORWARD_AXIS[args.get("forward_axis", "y")]
    return added(con, f"{con.id_data.name!r} follows the path {con.target.name!r}")


@constraint_tool(
    "constraint.copy_location",
    "Copy a target's location on the chosen axes, optionally as an offset from the object's own.",
    {
        "target": TARGET,
        "axes": USE_AXES,
        "offset": {"type": "boolean", "description": "Add to the object's own location."},
    },
    ("target",),
)
def copy_location(args: dict[str, Any]) -> Outcome:
    con = constrained(args, "COPY_LOCATION")
    _copy_axes(con, args)
    con.use_offset = args.get("offset", False)
    return added(con, f"{con.id_data.name!r} copies the location of {con.target.name!r}")


@constraint_tool(
    "constraint.copy_rotation",
    "Copy a target's rotation on the chosen axes.",
    {"target": TARGET, "axes": USE_AXES},
    ("target",),
)
def copy_rotation(args: dict[str, Any]) -> Outcome:
    con = constrained(args, "COPY_ROTATION")
    _copy_axes(con, args)
    return added(con, f"{con.id_data.name!r} copies the rotation of {con.target.name!r}")
