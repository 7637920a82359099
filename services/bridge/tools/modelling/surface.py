"""Edits that clean a named mesh's surface without adding to it: merge by distance,
recalculate normals, shade auto smooth."""

from __future__ import annotations

import math
from typing import Any

import bmesh

from ...registry import Outcome, Touches, tool
from .common import OBJECT, counts, edited, require_mesh, result_schema


def _schema(**own: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["object"],
        "properties": {"object": OBJECT, **own},
    }


@tool(
    name="mesh.merge_by_distance",
    touches=Touches(("object",)),
    description=(
        "Weld a mesh object's vertices closer together than `distance` (Blender's Merge by "
        "Distance). Answers how many vertices it removed. Undo restores a checkpoint."
    ),
    input_schema=_schema(
        distance={"type": "number", "minimum": 0, "maximum": 10, "default": 0.0001}
    ),
    output_schema=result_schema(removed={"type": "integer", "minimum": 0}),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def merge_by_distance(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.merge_by_distance")
    before = len(ob.data.vertices)
    with edited(ob) as bm:
        bmesh.ops.remove_doubles(bm, verts=list(bm.verts), dist=args.get("distance", 0.0001))
    removed = before - len(ob.data.vertices)
    return Outcome(
        data={**counts(ob), "removed": removed},
        mutated=removed > 0,
        message=f"merged {removed} vertices of {ob.name!r}",
    )


@tool(
    name="mesh.recalculate_normals",
    touches=Touches(("object",)),
    description=(
        "Make a mesh object's face normals consistent, pointing outside (default) or inside. "
        "Undo restores a checkpoint."
    ),
    input_schema=_schema(inside={"type": "boolean", "default": False}),
    output_schema=result_schema(flipped={"type": "integer", "minimum": 0}),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def recalculate_normals(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.recalculate_normals")
    before = [p.normal.copy() for p in ob.data.polygons]
    with edited(ob) as bm:
        bmesh.ops.recalc_face_normals(bm, faces=list(bm.faces))
        if args.get("inside", False):
            bmesh.ops.reverse_faces(bm, faces=list(bm.faces))
    after = [p.normal for p in ob.data.polygons]
    flipped = sum(1 for was, now in zip(before, after, strict=True) if was.dot(now) < 0)
    return Outcome(
        data={**counts(ob), "flipped": flipped},
        mutated=flipped > 0,
        message=f"recalculated the normals of {ob.name!r}: {flipped} faces flipped",
    )


@tool(
    name="mesh.shade_auto_smooth",
    touches=Touches(("object",)),
    description=(
        "Shade a mesh object smooth except across edges whose faces meet at more than "
        "`angle` degrees, which stay sharp (Blender's Shade Auto Smooth). object.shade "
        "shades all smooth or all flat. Undo restores a checkpoint."
    ),
    input_schema=_schema(angle={"type": "number", "minimum": 0, "maximum": 180, "default": 30}),
    output_schema=result_schema(sharp_edges={"type": "integer", "minimum": 0}),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def shade_auto_smooth(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.shade_auto_smooth")
    mesh = ob.data
    mesh.shade_smooth()
    mesh.set_sharp_from_angle(angle=math.radians(args.get("angle", 30)))
    sharp = mesh.attributes.get("sharp_edge")
    count = sum(1 for v in sharp.data if v.value) if sharp is not None else 0
    mesh.update()
    return Outcome(
        data={**counts(ob), "sharp_edges": count},
        mutated=True,
        message=f"shaded {ob.name!r} smooth with {count} sharp edges",
    )
