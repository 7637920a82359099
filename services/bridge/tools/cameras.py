"""Camera tools: create, set (lens, aim), set_active.

Aiming is by target: ``look_at_object`` (its world location) or ``look_at_point``; the
camera's -Z axis then points at the target with +Y up, as Blender's Track To constraint
does, but as a plain rotation so nothing keeps tracking afterwards.
"""

from __future__ import annotations

from typing import Any

import bpy

from blendmesh_addon.tools import Done
from blendmesh_addon.tools import cameras as body

from ..registry import Outcome, Touches, name_schema, outcome, tool
from .answers import BOOLEAN, NUMBER, STRING, TRANSFORM, answer
from .objects import transform_of
from .placing import location_schema, rotation_schema

LENS_SCHEMA: dict[str, Any] = {
    "type": "number",
    "minimum": 1,
    "maximum": 5000,
    "description": "Focal length in millimetres (50 is Blender's default).",
}
LOOK_AT_OBJECT = name_schema("Aim the camera at this object's world location.")
LOOK_AT_POINT = location_schema("Aim the camera at this world location.")
# Whether it is the active camera, its lens in millimetres and its transform.
CAMERA = answer({"name": STRING, "active": BOOLEAN, "lens": NUMBER, **TRANSFORM})


def _done(done: Done) -> Outcome:
    """The body's result with the camera's lens and transform, as a receipt shows them."""
    ob = bpy.data.objects[done.data["name"]]
    return outcome(done, lens=float(ob.data.lens), **transform_of(ob))


@tool(
    name="camera.create",
    touches=Touches(("name",)),
    description=(
        "Add a camera object to the scene collection. Aim it with rotation, look_at_object or "
        "look_at_point (only one). make_active defaults to true when the scene has no active "
        "camera; replacing another active camera makes the undo a checkpoint restore. An "
        "existing name is a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": name_schema("Object name (default 'Camera')."),
            "location": location_schema("Location in scene units (default 0,0,0)."),
            "rotation": rotation_schema("Default 0,0,0 (looking down -Z)."),
            "lens": LENS_SCHEMA,
            "look_at_object": LOOK_AT_OBJECT,
            "look_at_point": LOOK_AT_POINT,
            "make_active": {
                "type": "boolean",
                "description": "Make it the scene's active camera (default: when none is).",
            },
        },
    },
    output_schema=CAMERA,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def create(args: dict[str, Any]) -> Outcome:
    return _done(body.create(args))


@tool(
    name="camera.set",
    touches=Touches(("name",)),
    description=(
        "Change a camera's lens and/or aim it at look_at_object or look_at_point (one of "
        "them); the camera keeps its location. Naming an object that is not a camera is "
        "invalid."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "anyOf": [
            {"required": ["lens"]},
            {"required": ["look_at_object"]},
            {"required": ["look_at_point"]},
        ],
        "properties": {
            "name": name_schema("Camera object name."),
            "lens": LENS_SCHEMA,
            "look_at_object": LOOK_AT_OBJECT,
            "look_at_point": LOOK_AT_POINT,
        },
    },
    output_schema=CAMERA,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_camera(args: dict[str, Any]) -> Outcome:
    return _done(body.set_camera(args))


@tool(
    name="camera.set_active",
    touches=Touches(("name",)),
    description="Make a camera object the scene's active camera (the one that renders).",
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {"name": name_schema("Camera object name.")},
    },
    output_schema=CAMERA,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_active(args: dict[str, Any]) -> Outcome:
    return _done(body.set_active(args))
