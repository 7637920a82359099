"""keyframe.insert: key an object's location, rotation or scale at a frame.

After keying, the keyed property shows its animated value at the scene's current frame,
as Blender shows it once it evaluates the scene. Without that, the first evaluation
(an inspection, a render) would move the object and change the scene hash.
"""

from __future__ import annotations

import math
from typing import Any

import bpy

from ..registry import Outcome, ToolError, Touches, name_schema, tool, vec3
from ..scene_state import fcurves
from .objects import require_object
from .placing import LOCATION_LIMIT, ROTATION_LIMIT

MAX_FRAME = 1048574  # Blender's last frame
MAX_SCALE = 1e4  # the policy's scale bound
PATHS = {"location": "location", "rotation": "rotation_euler", "scale": "scale"}
LIMITS = {"location": LOCATION_LIMIT, "rotation": ROTATION_LIMIT, "scale": MAX_SCALE}


@tool(
    name="keyframe.insert",
    touches=Touches(("name",)),
    description=(
        "Insert (or replace) a keyframe of an object's location, rotation or scale at a frame. "
        "With value, the property is set to it first (rotation in degrees); without, its "
        "current value is keyed. Afterwards the object shows its pose at the current frame."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "property", "frame"],
        "properties": {
            "name": name_schema("Object name."),
            "property": {"enum": sorted(PATHS)},
            "frame": {"type": "integer", "minimum": 0, "maximum": MAX_FRAME},
            "value": vec3(
                "Value to key: location in scene units (|v| <= 1e6), rotation in degrees "
                "(|v| <= 1e5), scale factors (|v| <= 1e4).",
                LOCATION_LIMIT,
            ),
        },
    },
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def insert(args: dict[str, Any]) -> Outcome:
    """Check the value and the rotation mode, set, key, then show the current frame's pose."""
    ob = require_object(args["name"])
    prop, frame = args["property"], args["frame"]
    path = PATHS[prop]
    if prop == "rotation" and ob.rotation_mode in ("QUATERNION", "AXIS_ANGLE"):
        raise ToolError(
            "invalid_input",
            f"{ob.name!r} rotates by {ob.rotation_mode}, not Euler angles; key location or scale",
        )
    value = args.get("value")
    if value is not None:
        limit = LIMITS[prop]
        if any(abs(v) > limit for v in value):
            raise ToolError(
                "invalid_input", f"a {prop} value must lie within -{limit:g}..{limit:g}"
            )
        setattr(ob, path, [math.radians(v) for v in value] if prop == "rotation" else value)
    if not ob.keyframe_insert(path, frame=float(frame)):
        raise ToolError("internal_error", f"Blender refused to key {ob.name!r}.{path}", True)
    current = bpy.context.scene.frame_current
    keyed = [c for c in fcurves(ob) if c.data_path == path]
    for curve in keyed:
        getattr(ob, path)[curve.array_index] = curve.evaluate(current)
    return Outcome(
        data={
            "name": ob.name,
            "property": prop,
            "frame": frame,
            "keyframes": {str(c.array_index): len(c.keyframe_points) for c in keyed},
        },
        mutated=True,
        message=f"keyed {ob.name!r} {prop} at frame {frame}",
    )
