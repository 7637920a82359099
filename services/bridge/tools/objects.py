"""Object tools: create, transform, rename, delete.

Everything that can be checked (existence, name conflicts) is checked before
the first write, so these tools fail without mutating the scene.
"""

from __future__ import annotations

import math
from typing import Any

import bpy

from blendmesh_addon.tools import primitives
from contracts.bridge import Compensation

from ..registry import Outcome, ToolError, Touches, name_schema, tool, vec3

ROTATION_DOC = "Euler XYZ rotation in DEGREES."
# Data the object tools create per object, removed with its object when nothing else uses it.
OWNED_DATA = (
    (bpy.types.Mesh, "meshes"),
    (bpy.types.Camera, "cameras"),
    (bpy.types.Light, "lights"),
)


def require_object(name: str) -> bpy.types.Object:
    """Look an object up by exact name or fail with ``not_found`` naming it."""
    ob = bpy.data.objects.get(name)
    if ob is None:
        raise ToolError("not_found", f"object {name!r} does not exist")
    return ob


def require_free_name(name: str) -> None:
    """Fail with ``conflict`` rather than letting Blender silently rename to 'Name.001'."""
    if len(name.encode("utf-8")) > 63:
        raise ToolError("invalid_input", f"name {name!r} is longer than 63 bytes")
    if bpy.data.objects.get(name) is not None:
        raise ToolError("conflict", f"an object named {name!r} already exists")


def transform_of(ob: bpy.types.Object) -> dict[str, list[float]]:
    """Location, rotation (degrees) and scale as plain lists, in tool-argument units."""
    return {
        "location": [float(v) for v in ob.location],
        "rotation": [math.degrees(v) for v in ob.rotation_euler],
        "scale": [float(v) for v in ob.scale],
    }


@tool(
    name="object.create",
    touches=Touches(("name",)),
    description=(
        "Create a mesh primitive object linked to the scene collection. Default sizes match "
        "Blender's Add menu (cube 2, spheres radius 1, plane 2, torus 1/0.25). An existing name "
        "is a conflict. " + ROTATION_DOC
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["primitive"],
        "properties": {
            "primitive": {"enum": sorted(primitives.BUILDERS)},
            "name": name_schema(
                "Object (and mesh) name; defaults to Blender's name for the primitive."
            ),
            "location": vec3("Location in scene units (default 0,0,0)."),
            "rotation": vec3(ROTATION_DOC + " Default 0,0,0."),
            "scale": vec3("Scale factors (default 1,1,1)."),
        },
    },
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def create(args: dict[str, Any]) -> Outcome:
    """Build the primitive with bmesh and link a new object to the scene."""
    primitive = args["primitive"]
    name = args.get("name", primitives.DEFAULT_NAMES[primitive])
    require_free_name(name)
    mesh = primitives.build_mesh(primitive, name)
    ob = bpy.data.objects.new(name, mesh)
    ob.location = args.get("location", (0.0, 0.0, 0.0))
    ob.rotation_euler = [math.radians(v) for v in args.get("rotation", (0.0, 0.0, 0.0))]
    ob.scale = args.get("scale", (1.0, 1.0, 1.0))
    bpy.context.scene.collection.objects.link(ob)
    return Outcome(
        data={"name": ob.name, **transform_of(ob)},
        mutated=True,
        message=f"created {primitive} {ob.name!r}",
        compensation=Compensation(tool="object.delete", arguments={"name": ob.name}),
    )


@tool(
    name="object.transform",
    touches=Touches(("name",)),
    description=(
        "Set (mode=absolute) or offset (mode=relative) an object's location, rotation and/or "
        "scale. Relative: location and rotation add, scale multiplies. " + ROTATION_DOC
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "anyOf": [{"required": ["location"]}, {"required": ["rotation"]}, {"required": ["scale"]}],
        "properties": {
            "name": name_schema("Object name."),
            "location": vec3("Location (absolute) or offset (relative)."),
            "rotation": vec3(ROTATION_DOC),
            "scale": vec3("Scale (absolute) or factors (relative)."),
            "mode": {"enum": ["absolute", "relative"], "default": "absolute"},
        },
    },
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="object.transform",
)
def transform(args: dict[str, Any]) -> Outcome:
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
    return Outcome(
        data={"name": ob.name, **transform_of(ob)},
        mutated=True,
        message=f"transformed {ob.name!r}",
        compensation=Compensation(
            tool="object.transform", arguments={"name": ob.name, "mode": "absolute", **before}
        ),
    )


@tool(
    name="object.rename",
    touches=Touches(("name", "new_name", "previous_name")),
    description=(
        "Rename an object. Its mesh data is renamed along with it when it was named like the "
        "object and has no other users. An existing target name is a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "new_name"],
        "properties": {
            "name": name_schema("Current object name."),
            "new_name": name_schema("New object name."),
        },
    },
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.rename",
)
def rename(args: dict[str, Any]) -> Outcome:
    """Rename without Blender's silent '.001' suffixing."""
    old, new = args["name"], args["new_name"]
    ob = require_object(old)
    if new == old:
        raise ToolError("conflict", f"object is already named {old!r}")
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
    return Outcome(
        data={"name": ob.name, "previous_name": old},
        mutated=True,
        message=f"renamed {old!r} to {ob.name!r}",
        compensation=Compensation(
            tool="object.rename", arguments={"name": ob.name, "new_name": old}
        ),
    )


@tool(
    name="object.delete",
    touches=Touches(("name",)),
    description=(
        "Delete an object; its mesh, camera or light datablock is removed too when nothing "
        "else uses it."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {"name": name_schema("Object name.")},
    },
    safety_level="destructive",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def delete(args: dict[str, Any]) -> Outcome:
    """Remove the object and its orphaned data; undo is only possible via checkpoint."""
    ob = require_object(args["name"])
    name = ob.name
    data = ob.data
    bpy.data.objects.remove(ob, do_unlink=True)
    removed_data = False
    # Left behind, the orphan would keep its name taken: the next object made like this
    # one (a replayed create) would get 'Name.001' data and hash differently.
    for kind, collection in OWNED_DATA:
        if isinstance(data, kind) and data.users == 0:
            getattr(bpy.data, collection).remove(data)
            removed_data = True
    return Outcome(
        data={"name": name, "removed_data": removed_data},
        mutated=True,
        message=f"deleted {name!r}",
    )
