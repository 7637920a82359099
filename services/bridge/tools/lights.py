"""Light and world tools: light.create, light.set, world.set.

"size" means what softens a light's shadows, per kind: the radius of a point or spot
light, the edge length of an area light, and the angular diameter in degrees of the sun
(0..180). Values Blender would clamp are refused before anything is written.
"""

from __future__ import annotations

import math
from typing import Any

import bpy

from blendmesh_addon.tools import lights as body
from blendmesh_addon.tools.lights import MAX_SUN_ANGLE
from services.bridge.scene.canonical import r
from services.bridge.scene.scene_state import background, light_values, world_values

from ..registry import Outcome, ToolError, Touches, name_schema, outcome, rgb, tool
from .answers import NUMBER, RGB, STRING, answer, nullable
from .placing import location_schema, rotation_schema

POWER_SCHEMA: dict[str, Any] = {
    "type": "number",
    "minimum": 0,
    "maximum": 1e6,
    "description": "Power in watts (sun: irradiance in W/m2).",
}
SIZE_SCHEMA: dict[str, Any] = {
    "type": "number",
    "minimum": 0,
    "maximum": 1e4,
    "description": (
        "Shadow softness: radius for point and spot, edge length for area (scene units), "
        f"angular diameter in degrees for sun (0..{MAX_SUN_ANGLE:g})."
    ),
}
COLOR_SCHEMA = rgb("Linear RGB, each channel 0..1.")
# Power in watts; size as the size argument gives it (the sun's in degrees).
LIGHT_ANSWER = answer(
    {
        "name": STRING,
        "type": {"enum": ["AREA", "POINT", "SPOT", "SUN"]},
        "energy": NUMBER,
        "color": RGB,
        "size": NUMBER,
    }
)
# The Background node's colour and strength; no strength when the world has no such node.
WORLD_ANSWER = answer({"name": STRING, "color": RGB, "strength": nullable(NUMBER)})


def _data(ob: bpy.types.Object) -> dict[str, Any]:
    values = light_values(ob.data)
    if ob.data.type == "SUN":
        values["size"] = r(math.degrees(ob.data.angle))
    return {"name": ob.name, **values}


@tool(
    name="light.create",
    touches=Touches(("name",)),
    description=(
        "Add a light object (point, sun, spot or area) to the scene collection. size is the "
        "radius (point, spot), the edge length (area) or the angle in degrees (sun, 0..180). "
        "An existing name is a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["kind"],
        "properties": {
            "kind": {"enum": ["point", "sun", "spot", "area"]},
            "name": name_schema("Object name (default: Point, Sun, Spot or Area)."),
            "location": location_schema("Location in scene units (default 0,0,0)."),
            "rotation": rotation_schema("Default 0,0,0 (shining down -Z)."),
            "power": POWER_SCHEMA,
            "color": COLOR_SCHEMA,
            "size": SIZE_SCHEMA,
        },
    },
    output_schema=LIGHT_ANSWER,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def create(args: dict[str, Any]) -> Outcome:
    """Check the name and the size, then create; the inverse deletes the light."""
    done = body.create(args)
    return outcome(done, **_data(bpy.data.objects[done.data["name"]]))


@tool(
    name="light.set",
    touches=Touches(("name",)),
    description=(
        "Change a light's power, colour and/or size (radius, edge length or sun angle in "
        "degrees). Naming an object that is not a light is invalid."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "anyOf": [{"required": ["power"]}, {"required": ["color"]}, {"required": ["size"]}],
        "properties": {
            "name": name_schema("Light object name."),
            "power": POWER_SCHEMA,
            "color": COLOR_SCHEMA,
            "size": SIZE_SCHEMA,
        },
    },
    output_schema=LIGHT_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_light(args: dict[str, Any]) -> Outcome:
    """Check the light and the size, then set."""
    done = body.set_light(args)
    return outcome(done, **_data(bpy.data.objects[done.data["name"]]))


@tool(
    name="world.set",
    touches=Touches(),  # the world is in the scene-level digest, always recomputed
    description=(
        "Set the world's background colour and/or strength (what lights the scene from "
        "all around). A scene without a world gets one named 'World'."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "anyOf": [{"required": ["color"]}, {"required": ["strength"]}],
        "properties": {
            "color": COLOR_SCHEMA,
            "strength": {
                "type": "number",
                "minimum": 0,
                "maximum": 1000,
                "description": "Background strength (1 is Blender's default).",
            },
        },
    },
    output_schema=WORLD_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_world(args: dict[str, Any]) -> Outcome:
    """Set the Background node's inputs (what renders) and the viewport colour."""
    scene = bpy.context.scene
    world = scene.world or bpy.data.worlds.get("World")
    if world is not None and "strength" in args and background(world) is None:
        raise ToolError(
            "invalid_input",
            f"world {world.name!r} has no Background node to give a strength; set color only",
        )
    if world is None:
        world = new_world("World")
    if scene.world != world:
        scene.world = world
    node = background(world)
    if "color" in args:
        world.color = args["color"]
        if node is not None:
            node.inputs["Color"].default_value = [*args["color"], 1.0]
    if "strength" in args and node is not None:
        node.inputs["Strength"].default_value = args["strength"]
    return Outcome(data=world_values(world), mutated=True, message=f"set world {world.name!r}")


def new_world(name: str) -> bpy.types.World:
    """A world with Blender's default nodes (a Background into the World Output)."""
    world = bpy.data.worlds.new(name)
    if world.node_tree is None:  # before Blender 5.0 a new world has no nodes until asked
        world.use_nodes = True
    return world
