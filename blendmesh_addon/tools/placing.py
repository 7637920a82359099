"""What the tools that add or aim objects share: the check of an object's kind, linking a
new object into the scene, and where an object is in the world."""

from __future__ import annotations

import math
from typing import Any

import bpy
from mathutils import Vector

from . import ToolFailure
from .objects import require_object

LOCATION_LIMIT = 1e6  # the policy refuses larger coordinates too
ROTATION_LIMIT = 1e5  # degrees: hundreds of turns, far beyond any pose


def require_kind(name: str, kind: str, tool: str) -> Any:
    """The object ``name``, which must be of Blender type ``kind`` (CAMERA, LIGHT, MESH)."""
    ob = require_object(name)
    if ob.type != kind:
        raise ToolFailure(
            "invalid_input",
            f"{tool} needs a {kind} object, but {ob.name!r} is a {ob.type}; name a {kind} object",
        )
    return ob


def link_new(name: str, data: Any, args: dict[str, Any]) -> Any:
    """A new object holding ``data``, placed by the args' location and rotation (degrees)
    and linked to the scene collection."""
    ob = bpy.data.objects.new(name, data)
    ob.location = args.get("location", (0.0, 0.0, 0.0))
    ob.rotation_euler = [math.radians(v) for v in args.get("rotation", (0.0, 0.0, 0.0))]
    bpy.context.scene.collection.objects.link(ob)
    return ob


def world_location(name: str) -> Vector:
    """Where an object is in the world, after evaluating pending changes (a parent moved
    by an earlier call)."""
    ob = require_object(name)
    bpy.context.view_layer.update()
    return ob.matrix_world.translation.copy()
