"""What the modelling tools share: the mesh they may edit, editing it through bmesh without
a UI context, the faces and edges a selection rule picks, and the geometry budget checked
before an edit makes anything."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import bmesh
import bpy
from mathutils import Vector

from services.bridge.budget import bounded

from ...registry import ToolError, name_schema
from ..placing import require_kind

AXES: dict[str, Vector] = {
    "+X": Vector((1, 0, 0)), "-X": Vector((-1, 0, 0)), "+Y": Vector((0, 1, 0)),
    "-Y": Vector((0, -1, 0)), "+Z": Vector((0, 0, 1)), "-Z": Vector((0, 0, -1)),
}  # fmt: skip
FACING_COS = math.cos(math.radians(45))  # a face "faces" an axis within 45 degrees
MAX_VERTEX_GROUP = 63

OBJECT = name_schema("Mesh object name.")
EDGE_RULE: dict[str, Any] = {
    "enum": ["all", "sharp", "boundary", "vertex_group"],
    "default": "all",
    "description": (
        "Which edges (or vertices): all; sharp (faces meeting at more than `angle` degrees); "
        "boundary (open edges); vertex_group (both ends in `vertex_group`)."
    ),
}
FACE_RULE: dict[str, Any] = {
    "enum": ["all", "facing", "material_slot", "vertex_group"],
    "default": "all",
    "description": (
        "Which faces: all; facing (normal within 45 degrees of `axis`, in object space); "
        "material_slot (faces using slot `slot`); vertex_group (every corner in `vertex_group`)."
    ),
}
RULE_ARGS: dict[str, Any] = {
    "angle": {
        "type": "number", "minimum": 0, "maximum": 180, "default": 30,
        "description": "sharp: the least angle in degrees between the faces of an edge.",
    },
    "axis": {"enum": sorted(AXES), "default": "+Z", "description": "facing: the axis."},
    "slot": {
        "type": "integer", "minimum": 0, "maximum": 255, "default": 0,
        "description": "material_slot: the slot's index, from 0.",
    },
    "vertex_group": name_schema("vertex_group: the vertex group's name."),
}  # fmt: skip


def require_mesh(name: str, tool: str) -> bpy.types.Object:
    """A mesh object whose mesh this edit may change: its own, without shape keys."""
    ob = require_kind(name, "MESH", tool)
    mesh = ob.data
    if mesh.users > 1:
        raise ToolError(
            "invalid_input",
            f"mesh {mesh.name!r} of {ob.name!r} is shared by {mesh.users} users; make a full "
            "copy first (object.duplicate with linked=false) so the edit changes one object",
        )
    if mesh.shape_keys is not None:
        raise ToolError(
            "invalid_input",
            f"mesh {mesh.name!r} has shape keys, which {tool} would break; remove them first",
        )
    return ob


@contextmanager
def edited(ob: bpy.types.Object) -> Iterator[bmesh.types.BMesh]:
    """The object's mesh as a BMesh, written back when the block ends without an error
    (a refusal inside it leaves the mesh as it was)."""
    bm = bmesh.new()
    try:
        bm.from_mesh(ob.data)
        yield bm
        bm.normal_update()
        bm.to_mesh(ob.data)
        ob.data.update()
    finally:
        bm.free()


def within_budget(ob: bpy.types.Object, vertices: int, because: str) -> None:
    """Refuse, before anything is made, an edit whose estimate of the object's vertices is
    over the object budget (and more than it has now)."""
    budget = bounded.BUDGET
    if vertices > budget.object_vertices and vertices > len(ob.data.vertices):
        raise ToolError(
            "invalid_input",
            budget.refusal("object_vertices", vertices, f"object {ob.name!r}", f": {because}"),
        )


def _group_index(ob: bpy.types.Object, args: dict[str, Any]) -> int:
    name = args.get("vertex_group")
    if name is None:
        raise ToolError("invalid_input", "rule vertex_group needs the argument vertex_group")
    group = ob.vertex_groups.get(name)
    if group is None:
        have = ", ".join(sorted(g.name for g in ob.vertex_groups)) or "none"
        raise ToolError(
            "not_found", f"object {ob.name!r} has no vertex group {name!r}; it has: {have}"
        )
    return int(group.index)


def _in_group(bm: bmesh.types.BMesh, index: int) -> set[int]:
    layer = bm.verts.layers.deform.active
    if layer is None:
        return set()
    return {v.index for v in bm.verts if v[layer].get(index, 0.0) > 0.0}


def edges_by_rule(
    ob: bpy.types.Object, bm: bmesh.types.BMesh, args: dict[str, Any]
) -> list[bmesh.types.BMEdge]:
    """The edges ``args["rule"]`` picks; ToolError when it picks none."""
    rule = args.get("rule", "all")
    bm.verts.ensure_lookup_table()
    if rule == "all":
        picked = list(bm.edges)
    elif rule == "boundary":
        picked = [e for e in bm.edges if e.is_boundary]
    elif rule == "sharp":
        least = math.radians(args.get("angle", 30))
        picked = [e for e in bm.edges if len(e.link_faces) == 2 and e.calc_face_angle(0.0) >= least]
    else:
        members = _in_group(bm, _group_index(ob, args))
        picked = [e for e in bm.edges if all(v.index in members for v in e.verts)]
    if not picked:
        raise ToolError("invalid_input", f"rule {rule!r} picks no edges of {ob.name!r}")
    return picked


def faces_by_rule(
    ob: bpy.types.Object, bm: bmesh.types.BMesh, args: dict[str, Any]
) -> list[bmesh.types.BMFace]:
    """The faces ``args["rule"]`` picks; ToolError when it picks none."""
    rule = args.get("rule", "all")
    if rule == "all":
        picked = list(bm.faces)
    elif rule == "facing":
        axis = AXES[args.get("axis", "+Z")]
        picked = [f for f in bm.faces if f.normal.dot(axis) >= FACING_COS]
    elif rule == "material_slot":
        slot = args.get("slot", 0)
        picked = [f for f in bm.faces if f.material_index == slot]
    else:
        bm.verts.ensure_lookup_table()
        members = _in_group(bm, _group_index(ob, args))
        picked = [f for f in bm.faces if all(v.index in members for v in f.verts)]
    if not picked:
        raise ToolError("invalid_input", f"rule {rule!r} picks no faces of {ob.name!r}")
    return picked


def counts(ob: bpy.types.Object) -> dict[str, Any]:
    """What an edit's result says of the mesh it left."""
    mesh = ob.data
    return {
        "object": ob.name,
        "vertices": len(mesh.vertices),
        "edges": len(mesh.edges),
        "faces": len(mesh.polygons),
    }


def result_schema(**extra: dict[str, Any]) -> dict[str, Any]:
    """The output schema of an edit: the mesh's counts after it, and ``extra`` fields."""
    count = {"type": "integer", "minimum": 0}
    properties = {
        "object": {"type": "string"},
        "vertices": count,
        "edges": count,
        "faces": count,
        **extra,
    }
    return {"type": "object", "required": ["object", "vertices", "faces"], "properties": properties}
