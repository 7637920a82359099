"""Camera tools: create, set (lens, aim), set_active.

Aiming is by target: ``look_at_object`` (its world location) or ``look_at_point``; the
camera's -Z axis then points at the target with +Y up, as Blender's Track To constraint
does, but as a plain rotation so nothing keeps tracking afterwards.
"""

from __future__ import annotations

from typing import Any

import bpy
from mathutils import Matrix, Quaternion, Vector

from contracts.bridge import Compensation

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from .objects import require_free_name, transform_of
from .placing import link_new, location_schema, require_kind, rotation_schema, world_location

LENS_SCHEMA: dict[str, Any] = {
    "type": "number",
    "minimum": 1,
    "maximum": 5000,
    "description": "Focal length in millimetres (50 is Blender's default).",
}
LOOK_AT_OBJECT = name_schema("Aim the camera at this object's world location.")
LOOK_AT_POINT = location_schema("Aim the camera at this world location.")
AIMS = ("rotation", "look_at_object", "look_at_point")


def _target(args: dict[str, Any]) -> Vector | None:
    given = [k for k in AIMS if k in args]
    if len(given) > 1:
        raise ToolError(
            "invalid_input", f"give only one of {', '.join(AIMS)}; got {', '.join(given)}"
        )
    if "look_at_object" in args:
        return world_location(args["look_at_object"])
    if "look_at_point" in args:
        return Vector(args["look_at_point"])
    return None


def aim(origin: Vector, target: Vector) -> Quaternion:
    """The rotation that points -Z from ``origin`` at ``target`` with +Y up."""
    direction = target - origin
    if direction.length < 1e-6:
        raise ToolError(
            "invalid_input",
            f"the look-at target {list(target)} is where the camera is; aim at another point",
        )
    return direction.to_track_quat("-Z", "Y")


def _data(ob: bpy.types.Object, active: bool) -> dict[str, Any]:
    return {
        "name": ob.name,
        "lens": float(ob.data.lens),
        "active": active,
        **transform_of(ob),
    }


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
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def create(args: dict[str, Any]) -> Outcome:
    """Check the name and the target, then create; the inverse deletes the camera."""
    name = args.get("name", "Camera")
    require_free_name(name)
    target = _target(args)
    location = Vector(args.get("location", (0.0, 0.0, 0.0)))
    rotation = None if target is None else aim(location, target).to_euler()
    scene = bpy.context.scene
    previous = scene.camera
    make_active = args.get("make_active", previous is None)
    data = bpy.data.cameras.new(name)
    data.lens = args.get("lens", 50.0)
    ob = link_new(name, data, args)
    if rotation is not None:
        ob.rotation_euler = rotation
    if make_active:
        scene.camera = ob
    # Deleting the camera cannot bring back the camera it replaced as the active one.
    replaced = make_active and previous is not None
    return Outcome(
        data=_data(ob, make_active),
        mutated=True,
        message=f"created camera {ob.name!r}" + (" (active)" if make_active else ""),
        compensation=None
        if replaced
        else Compensation(tool="object.delete", arguments={"name": ob.name}),
    )


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
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_camera(args: dict[str, Any]) -> Outcome:
    """Check the camera and the target, then set the lens and the world rotation."""
    ob = require_kind(args["name"], "CAMERA", "camera.set")
    target = _target(args)
    if target is not None:
        origin, _, scale = world_matrix(ob).decompose()
        turn = aim(origin, target)
    if "lens" in args:
        ob.data.lens = args["lens"]
    if target is not None:
        if ob.parent is None and ob.rotation_mode not in ("QUATERNION", "AXIS_ANGLE"):
            ob.rotation_euler = turn.to_euler(ob.rotation_mode)
        else:
            ob.matrix_world = Matrix.LocRotScale(origin, turn, scale)
    return Outcome(
        data=_data(ob, bpy.context.scene.camera == ob),
        mutated=True,
        message=f"set camera {ob.name!r}",
    )


def world_matrix(ob: bpy.types.Object) -> Matrix:
    """The object's world matrix with pending changes evaluated."""
    bpy.context.view_layer.update()
    return ob.matrix_world.copy()


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
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_active(args: dict[str, Any]) -> Outcome:
    """Point the scene at the camera; already active is a no-op."""
    ob = require_kind(args["name"], "CAMERA", "camera.set_active")
    scene = bpy.context.scene
    if scene.camera == ob:
        return Outcome(data=_data(ob, True), mutated=False, message=f"{ob.name!r} is active")
    scene.camera = ob
    return Outcome(data=_data(ob, True), mutated=True, message=f"{ob.name!r} is now active")
