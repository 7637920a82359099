"""The light tools' bodies: light.create and light.set.

"size" means what softens a light's shadows, per kind: the radius of a point or spot
light, the edge length of an area light, and the angular diameter in degrees of the sun
(0..180). Values Blender would clamp are refused before anything is written.
"""

from __future__ import annotations

import math
from typing import Any

import bpy

from . import Done, ToolFailure
from .objects import require_free_name
from .placing import link_new, require_kind

# Blender's own names for a new light of each kind (Add > Light).
DEFAULT_NAMES = {"POINT": "Point", "SUN": "Sun", "SPOT": "Spot", "AREA": "Area"}
MAX_SUN_ANGLE = 180.0
# The property that holds each kind's "size".
LIGHT_SIZE_PROPS: dict[str, str] = {
    "POINT": "shadow_soft_size",
    "SPOT": "shadow_soft_size",
    "AREA": "size",
    "SUN": "angle",
}


def _size_value(kind: str, size: float) -> float:
    """The RNA value for a ``size`` argument; the sun's must fit 0..180 degrees."""
    if kind != "SUN":
        return size
    if size > MAX_SUN_ANGLE:
        raise ToolFailure(
            "invalid_input",
            f"a sun's size is its angle in degrees, 0..{MAX_SUN_ANGLE:g}; got {size:g}",
        )
    return math.radians(size)


def _apply(light: Any, args: dict[str, Any], size: float | None) -> None:
    if "power" in args:
        light.energy = args["power"]
    if "color" in args:
        light.color = args["color"]
    if size is not None:
        setattr(light, LIGHT_SIZE_PROPS[light.type], size)


def create(args: dict[str, Any]) -> Done:
    """Check the name and the size, then create; the inverse deletes the light."""
    kind = args["kind"].upper()
    name = args.get("name", DEFAULT_NAMES[kind])
    require_free_name(name)
    size = _size_value(kind, args["size"]) if "size" in args else None
    light = bpy.data.lights.new(name, kind)
    _apply(light, args, size)
    ob = link_new(name, light, args)
    return Done(
        {"name": ob.name},
        f"created {kind.lower()} light {ob.name!r}",
        compensation=("object.delete", {"name": ob.name}),
    )


def set_light(args: dict[str, Any]) -> Done:
    """Check the light and the size, then set."""
    ob = require_kind(args["name"], "LIGHT", "light.set")
    size = _size_value(ob.data.type, args["size"]) if "size" in args else None
    _apply(ob.data, args, size)
    return Done({"name": ob.name}, f"set light {ob.name!r}")
