"""Empties and simple armatures: empty.create, armature.create and armature.bind.

Bones exist only in an armature's edit mode, and weights by bone heat only through
``bpy.ops.object.parent_set``; both are operators, which in a window-less Blender run
with the objects they act on made active and selected (``temp_override`` and the view
layer's active object), and the mode is back to object mode before the call returns, even
when it fails, so no later call finds the scene in edit mode.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import bpy
from mathutils import Vector

from blendmesh_addon.tools.objects import require_free_name

from ..registry import Outcome, ToolError, Touches, name_schema, tool, vec3
from .answers import INTEGER, NAMES, NUMBER, STRING, VECTOR, answer, deleting
from .placing import LOCATION_LIMIT, link_new, location_schema, require_kind, rotation_schema

MAX_BONES = 64
MAX_BOUND_VERTICES = 50_000  # bone heat solves per vertex: past this it outlasts a call
DISPLAYS = {
    "plain_axes": "PLAIN_AXES",
    "arrows": "ARROWS",
    "single_arrow": "SINGLE_ARROW",
    "circle": "CIRCLE",
    "cube": "CUBE",
    "sphere": "SPHERE",
    "cone": "CONE",
}
POINT = {
    "type": "array",
    "items": {"type": "number", "minimum": -LOCATION_LIMIT, "maximum": LOCATION_LIMIT},
    "minItems": 3,
    "maxItems": 3,
}
BONE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "head", "tail"],
    "properties": {
        "name": name_schema("Bone name, unique in the armature."),
        "head": {**POINT, "description": "Where the bone starts, in the armature's space."},
        "tail": {**POINT, "description": "Where it ends; not the head."},
        "parent": name_schema("An earlier bone of this list it hangs from."),
        "connected": {"type": "boolean", "description": "Head joined to the parent's tail."},
    },
}


@tool(
    name="empty.create",
    touches=Touches(("name",)),
    description=(
        "Add an empty: an object without geometry that marks a place, a target to aim at "
        "or a handle to parent to. An existing name is a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": name_schema("Object name (default Empty)."),
            "display": {"enum": sorted(DISPLAYS), "description": "How it is drawn."},
            "size": {"type": "number", "minimum": 0.001, "maximum": 1e4},
            "location": location_schema("Location in scene units (default 0,0,0)."),
            "rotation": rotation_schema("Default 0,0,0."),
        },
    },
    output_schema=answer({"name": STRING, "display": STRING, "size": NUMBER}),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def create_empty(args: dict[str, Any]) -> Outcome:
    name = args.get("name", "Empty")
    require_free_name(name)
    ob = link_new(name, None, args)
    ob.empty_display_type = DISPLAYS[args.get("display", "plain_axes")]
    ob.empty_display_size = args.get("size", 1.0)
    return Outcome(
        data={
            "name": ob.name,
            "display": args.get("display", "plain_axes"),
            "size": round(ob.empty_display_size, 6),
        },
        mutated=True,
        message=f"created empty {ob.name!r}",
        compensation=deleting(ob.name),
    )


@contextmanager
def _editing(ob: bpy.types.Object) -> Iterator[None]:
    layer = bpy.context.view_layer
    active = layer.objects.active
    layer.objects.active = ob
    try:
        with bpy.context.temp_override(active_object=ob, object=ob):
            bpy.ops.object.mode_set(mode="EDIT")
            try:
                yield
            finally:
                bpy.ops.object.mode_set(mode="OBJECT")
    finally:
        layer.objects.active = active


def _bones_problem(bones: list[dict[str, Any]]) -> str | None:
    seen: set[str] = set()
    for bone in bones:
        name = bone["name"]
        if name in seen:
            return f"two bones are named {name!r}; name each bone once"
        if Vector(bone["head"]) == Vector(bone["tail"]):
            return f"bone {name!r} has its tail at its head; give it a length"
        parent = bone.get("parent")
        if parent is not None and parent not in seen:
            return f"bone {name!r} hangs from {parent!r}, which is not an earlier bone"
        if bone.get("connected") and parent is None:
            return f"bone {name!r} is connected but has no parent; name its parent"
        seen.add(name)
    return None


@tool(
    name="armature.create",
    touches=Touches(("name",)),
    description=(
        f"Add an armature with named bones (1 to {MAX_BONES}), each from head to tail, "
        "optionally hanging from an earlier bone (connected: its head at the parent's "
        "tail). Default: one bone 'Bone' from 0,0,0 to 0,0,1. An existing name is a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": name_schema("Object name (default Armature)."),
            "bones": {"type": "array", "items": BONE, "minItems": 1, "maxItems": MAX_BONES},
            "location": location_schema("Location in scene units (default 0,0,0)."),
            "rotation": rotation_schema("Default 0,0,0."),
        },
    },
    output_schema=answer({"name": STRING, "bones": NAMES}),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def create_armature(args: dict[str, Any]) -> Outcome:
    name = args.get("name", "Armature")
    bones = args.get("bones", [{"name": "Bone", "head": [0, 0, 0], "tail": [0, 0, 1]}])
    problem = _bones_problem(bones)
    if problem is not None:
        raise ToolError("invalid_input", problem)
    require_free_name(name)
    ob = link_new(name, bpy.data.armatures.new(name), args)
    with _editing(ob):
        edit = ob.data.edit_bones
        for bone in bones:
            made = edit.new(bone["name"])
            made.head, made.tail = bone["head"], bone["tail"]
            if "parent" in bone:
                made.parent = edit[bone["parent"]]
                made.use_connect = bool(bone.get("connected", False))
    return Outcome(
        data={"name": ob.name, "bones": [b.name for b in ob.data.bones]},
        mutated=True,
        message=f"created armature {ob.name!r} with {len(bones)} bones",
        compensation=deleting(ob.name),
    )


@tool(
    name="armature.bind",
    touches=Touches(("object", "armature")),
    description=(
        "Parent a mesh object to an armature with automatic weights: one vertex group per "
        "bone, weighted by bone heat, and an Armature modifier. The mesh's vertices "
        f"(at most {MAX_BOUND_VERTICES:,}) must lie near the bones to be weighted."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "armature"],
        "properties": {
            "object": name_schema("The mesh object to bind."),
            "armature": name_schema("The armature object."),
        },
    },
    output_schema=answer(
        {"object": STRING, "armature": STRING, "groups": NAMES, "weighted_vertices": INTEGER}
    ),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def bind(args: dict[str, Any]) -> Outcome:
    mesh = require_kind(args["object"], "MESH", "armature.bind")
    rig = require_kind(args["armature"], "ARMATURE", "armature.bind")
    if len(mesh.data.vertices) > MAX_BOUND_VERTICES:
        raise ToolError(
            "invalid_input",
            f"{mesh.name!r} has {len(mesh.data.vertices):,} vertices, more than the "
            f"{MAX_BOUND_VERTICES:,} automatic weights take; decimate it first",
        )
    if not rig.data.bones:
        raise ToolError("invalid_input", f"armature {rig.name!r} has no bones to weight by")
    layer = bpy.context.view_layer
    active = layer.objects.active
    selected = [ob for ob in layer.objects if ob.select_get()]
    try:
        layer.objects.active = rig
        with bpy.context.temp_override(
            active_object=rig,
            object=rig,
            selected_objects=[mesh, rig],
            selected_editable_objects=[mesh, rig],
        ):
            result = bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    finally:
        layer.objects.active = active
        for ob in layer.objects:
            ob.select_set(ob in selected)
    if "FINISHED" not in result or mesh.parent != rig:
        raise ToolError(
            "internal_error", f"Blender did not bind {mesh.name!r} to {rig.name!r}", mutated=True
        )
    weighted = sum(1 for v in mesh.data.vertices if any(g.weight > 0 for g in v.groups))
    return Outcome(
        data={
            "object": mesh.name,
            "armature": rig.name,
            "groups": [g.name for g in mesh.vertex_groups],
            "weighted_vertices": weighted,
        },
        mutated=True,
        message=f"bound {mesh.name!r} to {rig.name!r}: {weighted} vertices weighted",
    )


@tool(
    name="armature.pose",
    touches=Touches(("armature",)),
    description=(
        "Pose one bone of an armature: its rotation (degrees, XYZ Euler), location and/or "
        "scale relative to its rest position; what the bound mesh follows."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["armature", "bone"],
        "anyOf": [{"required": ["rotation"]}, {"required": ["location"]}, {"required": ["scale"]}],
        "properties": {
            "armature": name_schema("The armature object."),
            "bone": name_schema("The bone's name."),
            "rotation": rotation_schema("Relative to the bone's rest pose."),
            "location": location_schema("Offset from the bone's rest position, in its space."),
            "scale": vec3("Scale factors of the bone, each 0.001..1000.", 1000),
        },
    },
    output_schema=answer(
        {
            "armature": STRING,
            "bone": STRING,
            "rotation": VECTOR,
            "location": VECTOR,
            "scale": VECTOR,
        }
    ),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def pose(args: dict[str, Any]) -> Outcome:
    rig = require_kind(args["armature"], "ARMATURE", "armature.pose")
    bone = rig.pose.bones.get(args["bone"])
    if bone is None:
        have = [b.name for b in rig.pose.bones][:20]
        raise ToolError("not_found", f"{rig.name!r} has no bone {args['bone']!r}; it has {have}")
    if "scale" in args and any(abs(v) < 0.001 for v in args["scale"]):
        raise ToolError("invalid_input", "scale: each factor must be at least 0.001 away from 0")
    if "rotation" in args:
        bone.rotation_mode = "XYZ"
        bone.rotation_euler = [math.radians(v) for v in args["rotation"]]
    if "location" in args:
        bone.location = args["location"]
    if "scale" in args:
        bone.scale = args["scale"]
    return Outcome(
        data={
            "armature": rig.name,
            "bone": bone.name,
            # Four places: a float32 angle is 90.000003 degrees back, not 90.
            "rotation": [round(math.degrees(v), 4) + 0.0 for v in bone.rotation_euler],
            "location": [round(v, 6) for v in bone.location],
            "scale": [round(v, 6) for v in bone.scale],
        },
        mutated=True,
        message=f"posed {bone.name!r} of {rig.name!r}",
    )
