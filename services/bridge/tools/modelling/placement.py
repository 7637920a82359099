"""Edits of where a named mesh sits in its object: origin to geometry or bounds, and
applying the object's location, rotation or scale to the mesh. The object's world look
stays as it was, and so do its children's."""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
from mathutils import Matrix, Vector

from ...registry import Outcome, ToolError, Touches, tool
from .common import OBJECT, counts, require_mesh, result_schema

NAMES = {"type": "array", "items": {"type": "string"}}
VEC = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}


def _moved(ob: bpy.types.Object, old_basis: Matrix, new_basis: Matrix) -> list[str]:
    """Set the new basis and the mesh under it so nothing moves in the world; children
    keep their world transforms through their parent inverse."""
    change = new_basis.inverted() @ old_basis
    ob.data.transform(change)
    if change.determinant() < 0:
        ob.data.flip_normals()
    ob.matrix_basis = new_basis
    for child in ob.children:
        child.matrix_parent_inverse = change @ child.matrix_parent_inverse
    ob.data.update()
    return sorted(child.name for child in ob.children)


@tool(
    name="mesh.origin_set",
    touches=Touches(("object", "children")),
    description=(
        "Move a mesh object's origin to the centre of its geometry (the mean of its "
        "vertices, to=geometry) or of its bounding box (to=bounds), without moving the mesh "
        "in the world. Undo restores a checkpoint."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object"],
        "properties": {
            "object": OBJECT,
            "to": {"enum": ["geometry", "bounds"], "default": "bounds"},
        },
    },
    output_schema=result_schema(origin=VEC, children=NAMES),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def origin_set(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.origin_set")
    mesh = ob.data
    if len(mesh.vertices) == 0:
        raise ToolError("invalid_input", f"{ob.name!r} has no vertices to centre on")
    points = np.empty(len(mesh.vertices) * 3, dtype=np.float64)
    mesh.vertices.foreach_get("co", points)
    points = points.reshape(-1, 3)
    if args.get("to", "bounds") == "geometry":
        centre = Vector(points.mean(axis=0))
    else:
        centre = Vector((points.min(axis=0) + points.max(axis=0)) / 2)
    old = ob.matrix_basis.copy()
    children = _moved(ob, old, old @ Matrix.Translation(centre))
    return Outcome(
        data={**counts(ob), "origin": list(ob.matrix_world.translation), "children": children},
        mutated=centre.length > 0,
        message=f"moved the origin of {ob.name!r} to its {args.get('to', 'bounds')}",
    )


@tool(
    name="mesh.apply_transform",
    touches=Touches(("object", "children")),
    description=(
        "Apply a mesh object's location, rotation and/or scale to its mesh (Blender's Apply "
        "Transform): the object's values become identity, the mesh looks the same in the "
        "world. Give at least one of location, rotation, scale as true. Undo restores a "
        "checkpoint."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object"],
        "properties": {
            "object": OBJECT,
            "location": {"type": "boolean", "default": False},
            "rotation": {"type": "boolean", "default": False},
            "scale": {"type": "boolean", "default": False},
        },
    },
    output_schema=result_schema(applied=NAMES, children=NAMES),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def apply_transform(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.apply_transform")
    applied = [k for k in ("location", "rotation", "scale") if args.get(k, False)]
    if not applied:
        raise ToolError("invalid_input", "give at least one of location, rotation, scale as true")
    location, rotation, scale = ob.matrix_basis.decompose()
    kept_scale = Vector((1, 1, 1)) if "scale" in applied else scale
    if any(abs(s) < 1e-9 for s in kept_scale):
        raise ToolError(
            "invalid_input",
            f"{ob.name!r} has a zero scale, which cannot be kept; apply scale too",
        )
    new = Matrix.LocRotScale(
        Vector() if "location" in applied else location,
        None if "rotation" in applied else rotation,
        kept_scale,
    )
    old = ob.matrix_basis.copy()
    children = _moved(ob, old, new)
    return Outcome(
        data={**counts(ob), "applied": applied, "children": children},
        mutated=old != new,
        message=f"applied {', '.join(applied)} of {ob.name!r}",
    )
