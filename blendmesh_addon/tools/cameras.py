"""The camera tools' bodies: camera.create, camera.set and camera.set_active."""

from __future__ import annotations

from typing import Any

import bpy
from mathutils import Matrix, Quaternion, Vector

from . import Done, ToolFailure
from .objects import require_free_name
from .placing import link_new, require_kind, world_location

AIMS = ("rotation", "look_at_object", "look_at_point")


def _target(args: dict[str, Any]) -> Vector | None:
    given = [k for k in AIMS if k in args]
    if len(given) > 1:
        raise ToolFailure(
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
        raise ToolFailure(
            "invalid_input",
            f"the look-at target {list(target)} is where the camera is; aim at another point",
        )
    return direction.to_track_quat("-Z", "Y")


def create(args: dict[str, Any]) -> Done:
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
    return Done(
        {"name": ob.name, "active": make_active},
        f"created camera {ob.name!r}" + (" (active)" if make_active else ""),
        compensation=None if replaced else ("object.delete", {"name": ob.name}),
    )


def set_camera(args: dict[str, Any]) -> Done:
    ob = require_kind(args["name"], "CAMERA", "camera.set")
    target = _target(args)
    if target is not None:
        origin, _, scale = _world_matrix(ob).decompose()
        turn = aim(origin, target)
    if "lens" in args:
        ob.data.lens = args["lens"]
    if target is not None:
        if ob.parent is None and ob.rotation_mode not in ("QUATERNION", "AXIS_ANGLE"):
            ob.rotation_euler = turn.to_euler(ob.rotation_mode)
        else:
            ob.matrix_world = Matrix.LocRotScale(origin, turn, scale)
    return Done(
        {"name": ob.name, "active": bpy.context.scene.camera == ob}, f"set camera {ob.name!r}"
    )


def _world_matrix(ob: Any) -> Matrix:
    bpy.context.view_layer.update()
    return ob.matrix_world.copy()


def set_active(args: dict[str, Any]) -> Done:
    ob = require_kind(args["name"], "CAMERA", "camera.set_active")
    scene = bpy.context.scene
    if scene.camera == ob:
        return Done({"name": ob.name, "active": True}, f"{ob.name!r} is active", mutated=False)
    scene.camera = ob
    return Done({"name": ob.name, "active": True}, f"{ob.name!r} is now active")
