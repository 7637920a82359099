"""Object tools' bodies: create, transform, rename, delete.

Everything that can be checked (existence, name conflicts) is checked before the first
write, so these fail without changing the scene.
"""

from __future__ import annotations

import math
from typing import Any

import bpy

from . import Done, ToolFailure, primitives
from .defaults import DEFAULT_NAMES

# Data the object tools create per object, removed with its object when nothing else uses it.
OWNED_DATA = (
    (bpy.types.Mesh, "meshes"),
    (bpy.types.Camera, "cameras"),
    (bpy.types.Light, "lights"),
    (bpy.types.Curve, "curves"),
    (bpy.types.Armature, "armatures"),
)


def require_object(name: str) -> Any:
    """Look an object up by exact name or fail with ``not_found`` naming it."""
    ob = bpy.data.objects.get(name)
    if ob is None:
        raise ToolFailure("not_found", f"object {name!r} does not exist")
    return ob


def require_free_name(name: str) -> None:
    """Fail with ``conflict`` rather than letting Blender silently rename to 'Name.001'."""
    if len(name.encode("utf-8")) > 63:
        raise ToolFailure("invalid_input", f"name {name!r} is longer than 63 bytes")
    if bpy.data.objects.get(name) is not None:
        raise ToolFailure("conflict", f"an object named {name!r} already exists")


def transform_of(ob: Any) -> dict[str, list[float]]:
    """Location, rotation (degrees) and scale as plain lists, in tool-argument units."""
    return {
        "location": [float(v) for v in ob.location],
        "rotation": [math.degrees(v) for v in ob.rotation_euler],
        "scale": [float(v) for v in ob.scale],
    }


def create(args: dict[str, Any]) -> Done:
    """Build the primitive with bmesh and link a new object to the scene."""
    primitive = args["primitive"]
    name = args.get("name", DEFAULT_NAMES[primitive])
    require_free_name(name)
    try:
        mesh = primitives.build_mesh(primitive, name, args.get("dimensions"))
    except ValueError as err:
        raise ToolFailure(
            "invalid_input", f"dimensions: {err}; give a size above 0 for each axis"
        ) from None
    ob = bpy.data.objects.new(name, mesh)
    ob.location = args.get("location", (0.0, 0.0, 0.0))
    ob.rotation_euler = [math.radians(v) for v in args.get("rotation", (0.0, 0.0, 0.0))]
    ob.scale = args.get("scale", (1.0, 1.0, 1.0))
    bpy.context.scene.collection.objects.link(ob)
    return Done(
        {"name": ob.name, **transform_of(ob)},
        f"created {primitive} {ob.name!r}",
        compensation=("object.delete", {"name": ob.name}),
    )


def transform(args: dict[str, Any]) -> Done:
    """Apply the transform; the compensation restores the previous absolute values."""
    ob = require_object(args["name"])
    before = transform_of(ob)
    relative = args.get("mode", "absolute") == "relative"
    if "location" in args:
        loc = args["location"]
        ob.location = [a + b for a, b in zip(ob.location, loc, strict=True)] if relative else loc
    if "rotation" in args:
        rot = [math.radians(v) for v in args["rotation"]]
        ob.rotation_euler = (
            [a + b for a, b in zip(ob.rotation_euler, rot, strict=True)] if relative else rot
        )
    if "scale" in args:
        scale = args["scale"]
        ob.scale = [a * b for a, b in zip(ob.scale, scale, strict=True)] if relative else scale
    return Done(
        {"name": ob.name, **transform_of(ob)},
        f"transformed {ob.name!r}",
        compensation=("object.transform", {"name": ob.name, "mode": "absolute", **before}),
    )


def rename(args: dict[str, Any]) -> Done:
    """Rename without Blender's silent '.001' suffixing."""
    old, new = args["name"], args["new_name"]
    ob = require_object(old)
    if new == old:
        raise ToolFailure("conflict", f"object is already named {old!r}")
    require_free_name(new)
    data = ob.data
    # Keep the "mesh named like its object" convention that object.create sets up.
    rename_data = (
        isinstance(data, bpy.types.Mesh)
        and data.name == old
        and data.users == 1
        and bpy.data.meshes.get(new) is None
    )
    ob.name = new
    if rename_data:
        data.name = new
    return Done(
        {"name": ob.name, "previous_name": old},
        f"renamed {old!r} to {ob.name!r}",
        compensation=("object.rename", {"name": ob.name, "new_name": old}),
    )


def delete(args: dict[str, Any]) -> Done:
    """Remove the object and its orphaned data; undo is only possible via checkpoint."""
    ob = require_object(args["name"])
    name = ob.name
    # By name, not by reference: Blender 3.4 may free the data with its last user, and a
    # reference kept across the removal then raises ReferenceError.
    owned = [(c, ob.data.name) for kind, c in OWNED_DATA if isinstance(ob.data, kind)]
    bpy.data.objects.remove(ob, do_unlink=True)
    removed_data = False
    # Left behind, the orphan would keep its name taken: the next object made like this
    # one (a replayed create) would get 'Name.001' data and hash differently.
    for collection, data_name in owned:
        blocks = getattr(bpy.data, collection)
        data = blocks.get(data_name)
        if data is not None and data.users == 0 and data.library is None:
            blocks.remove(data)
            removed_data = True
    return Done({"name": name, "removed_data": removed_data}, f"deleted {name!r}")
