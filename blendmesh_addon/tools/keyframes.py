"""The keyframe tool's body: keyframe.insert, and the F-curves that animate an object."""

from __future__ import annotations

import math
from typing import Any

import bpy

from . import Done, ToolFailure
from .objects import require_object
from .placing import LOCATION_LIMIT, ROTATION_LIMIT

PATHS = {"location": "location", "rotation": "rotation_euler", "scale": "scale"}
MAX_SCALE = 1e4  # the policy's scale bound
LIMITS = {"location": LOCATION_LIMIT, "rotation": ROTATION_LIMIT, "scale": MAX_SCALE}


def fcurves(ob: Any) -> list[Any]:
    """The F-curves animating the object itself, in a stable order (path, then index)."""
    anim = ob.animation_data
    if anim is None or anim.action is None:
        return []
    action = anim.action
    if hasattr(action, "fcurves"):  # before Blender 4.4's slotted actions
        found = list(action.fcurves)
    else:
        from bpy_extras import anim_utils

        bag = anim_utils.action_get_channelbag_for_slot(action, anim.action_slot)
        found = [] if bag is None else list(bag.fcurves)
    return sorted(found, key=lambda f: (f.data_path, f.array_index))


def insert(args: dict[str, Any]) -> Done:
    """Check the value and the rotation mode, set, key, then show the current frame's pose."""
    ob = require_object(args["name"])
    prop, frame = args["property"], args["frame"]
    path = PATHS[prop]
    if prop == "rotation" and ob.rotation_mode in ("QUATERNION", "AXIS_ANGLE"):
        raise ToolFailure(
            "invalid_input",
            f"{ob.name!r} rotates by {ob.rotation_mode}, not Euler angles; key location or scale",
        )
    value = args.get("value")
    if value is not None:
        limit = LIMITS[prop]
        if any(abs(v) > limit for v in value):
            raise ToolFailure(
                "invalid_input", f"a {prop} value must lie within -{limit:g}..{limit:g}"
            )
        setattr(ob, path, [math.radians(v) for v in value] if prop == "rotation" else value)
    if not ob.keyframe_insert(path, frame=float(frame)):
        raise ToolFailure("internal_error", f"Blender refused to key {ob.name!r}.{path}", True)
    current = bpy.context.scene.frame_current
    keyed = [c for c in fcurves(ob) if c.data_path == path]
    for curve in keyed:
        getattr(ob, path)[curve.array_index] = curve.evaluate(current)
    return Done(
        {
            "name": ob.name,
            "property": prop,
            "frame": frame,
            "keyframes": {str(c.array_index): len(c.keyframe_points) for c in keyed},
        },
        f"keyed {ob.name!r} {prop} at frame {frame}",
    )
