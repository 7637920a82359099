"""Edits that add geometry to a named mesh: extrude, inset, bevel, solidify, mirror.

Each is a bmesh operation on the object's own mesh, so it needs no edit mode and no UI
context. What an edit would make is estimated and held to the geometry budget before
anything is made; the bridge holds the result to it again after the call. Undo restores a
checkpoint: an edit that adds and moves vertices has no exact inverse.
"""

from __future__ import annotations

from typing import Any

import bmesh

from ...registry import Outcome, ToolError, Touches, tool
from .common import (
    EDGE_RULE,
    FACE_RULE,
    OBJECT,
    RULE_ARGS,
    counts,
    edges_by_rule,
    edited,
    faces_by_rule,
    require_mesh,
    result_schema,
    within_budget,
)

DISTANCE = {"type": "number", "minimum": -100, "maximum": 100}
PICKED = {"type": "integer", "minimum": 0}


def _schema(required: list[str], **own: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["object", *required],
        "properties": {"object": OBJECT, **own},
    }


@tool(
    name="mesh.extrude",
    touches=Touches(("object",)),
    description=(
        "Extrude faces of a mesh object, picked by a rule (all, facing an axis, a material "
        "slot, a vertex group), by `distance`: as one region along its mean normal "
        "(default; refused when the faces face every way, as a closed mesh's all do) or "
        "each face on its own along its normal. Undo restores a checkpoint."
    ),
    input_schema=_schema(
        ["distance"],
        distance={**DISTANCE, "description": "How far, in object units; negative goes in."},
        rule=FACE_RULE,
        individual={"type": "boolean", "default": False, "description": "Each face alone."},
        **RULE_ARGS,
    ),
    output_schema=result_schema(extruded=PICKED),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def extrude(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.extrude")
    with edited(ob) as bm:
        faces = faces_by_rule(ob, bm, args)
        corners = sum(len(f.verts) for f in faces)
        within_budget(ob, len(bm.verts) + corners, f"extruding {len(faces)} faces")
        distance = args["distance"]
        if args.get("individual", False):
            made = bmesh.ops.extrude_discrete_faces(bm, faces=faces)["faces"]
            for face in made:
                bmesh.ops.translate(bm, vec=face.normal * distance, verts=list(face.verts))
        else:
            normal = sum((f.normal for f in faces), faces[0].normal * 0)
            if normal.length < 1e-6:
                raise ToolError(
                    "invalid_input",
                    f"the faces rule {args.get('rule', 'all')!r} picks of {ob.name!r} face every "
                    "way, so the region has no one direction; give individual=true to extrude "
                    "each face along its own normal, or pick faces facing an axis",
                )
            normal.normalize()
            made = bmesh.ops.extrude_face_region(bm, geom=faces)["geom"]
            moved = [g for g in made if isinstance(g, bmesh.types.BMVert)]
            bmesh.ops.translate(bm, vec=normal * distance, verts=moved)
            bmesh.ops.delete(bm, geom=faces, context="FACES")
    return Outcome(
        data={**counts(ob), "extruded": len(faces)},
        mutated=True,
        message=f"extruded {len(faces)} faces of {ob.name!r} by {distance:g}",
    )


@tool(
    name="mesh.inset",
    touches=Touches(("object",)),
    description=(
        "Inset faces of a mesh object, picked by a rule, by `thickness` (and raise or lower "
        "them by `depth`): as one region (default) or each face on its own. Undo restores a "
        "checkpoint."
    ),
    input_schema=_schema(
        ["thickness"],
        thickness={"type": "number", "minimum": 0, "maximum": 100},
        depth={**DISTANCE, "default": 0},
        rule=FACE_RULE,
        individual={"type": "boolean", "default": False, "description": "Each face alone."},
        **RULE_ARGS,
    ),
    output_schema=result_schema(inset=PICKED),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def inset(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.inset")
    with edited(ob) as bm:
        faces = faces_by_rule(ob, bm, args)
        corners = sum(len(f.verts) for f in faces)
        within_budget(ob, len(bm.verts) + corners, f"insetting {len(faces)} faces")
        thickness, depth = args["thickness"], args.get("depth", 0.0)
        if args.get("individual", False):
            bmesh.ops.inset_individual(
                bm, faces=faces, thickness=thickness, depth=depth, use_even_offset=True
            )
        else:
            before = len(bm.verts)
            bmesh.ops.inset_region(
                bm, faces=faces, thickness=thickness, depth=depth, use_even_offset=True
            )
            if len(bm.verts) == before:  # a region without a border: nothing to inset
                raise ToolError(
                    "invalid_input",
                    f"the faces picked of {ob.name!r} have no border as one region (a closed "
                    "mesh's all); give individual=true to inset each face",
                )
    return Outcome(
        data={**counts(ob), "inset": len(faces)},
        mutated=True,
        message=f"inset {len(faces)} faces of {ob.name!r} by {thickness:g}",
    )


@tool(
    name="mesh.bevel",
    touches=Touches(("object",)),
    description=(
        "Bevel the edges (or, with affect=vertices, the vertices) of a mesh object picked by "
        "a rule: all, sharp (faces meeting at more than `angle` degrees), boundary, or a "
        "vertex group, by `width` with `segments` (1..16). Overlaps are clamped. Undo "
        "restores a checkpoint."
    ),
    input_schema=_schema(
        ["width"],
        width={"type": "number", "minimum": 0.00001, "maximum": 100},
        segments={"type": "integer", "minimum": 1, "maximum": 16, "default": 1},
        affect={"enum": ["edges", "vertices"], "default": "edges"},
        profile={"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
        rule=EDGE_RULE,
        **RULE_ARGS,
    ),
    output_schema=result_schema(bevelled=PICKED),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def bevel(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.bevel")
    affect = args.get("affect", "edges")
    segments = args.get("segments", 1)
    with edited(ob) as bm:
        edges = edges_by_rule(ob, bm, args)
        verts = list({v for e in edges for v in e.verts})
        # Each bevelled edge's two ends gain a row of segments+1 vertices, and each vertex
        # where bevels meet a patch of at most (segments+1)^2: an upper bound.
        grown = (len(edges) * 2 + len(verts) * (segments + 1)) * (segments + 1)
        within_budget(ob, len(bm.verts) + grown, f"bevelling {len(edges)} edges")
        geom = [*verts, *edges] if affect == "edges" else verts
        bmesh.ops.bevel(
            bm,
            geom=geom,
            offset=args["width"],
            offset_type="OFFSET",
            segments=segments,
            profile=args.get("profile", 0.5),
            affect="EDGES" if affect == "edges" else "VERTICES",
            clamp_overlap=True,
        )
    picked = len(edges) if affect == "edges" else len(verts)
    return Outcome(
        data={**counts(ob), "bevelled": picked},
        mutated=True,
        message=f"bevelled {picked} {affect} of {ob.name!r} by {args['width']:g}",
    )


@tool(
    name="mesh.solidify",
    touches=Touches(("object",)),
    description=(
        "Give a mesh object's faces thickness (a shell `thickness` thick), applied to the mesh "
        "(modifier.add type SOLIDIFY keeps it editable instead). Undo restores a checkpoint."
    ),
    input_schema=_schema(["thickness"], thickness={**DISTANCE, "description": "Shell depth."}),
    output_schema=result_schema(),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def solidify(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.solidify")
    with edited(ob) as bm:
        within_budget(ob, 2 * len(bm.verts), "solidify doubles every vertex")
        bmesh.ops.solidify(bm, geom=list(bm.faces), thickness=args["thickness"])
    return Outcome(
        data=counts(ob), mutated=True, message=f"solidified {ob.name!r} by {args['thickness']:g}"
    )


@tool(
    name="mesh.mirror",
    touches=Touches(("object",)),
    description=(
        "Mirror a mesh object's geometry across its own origin on `axis` and keep both halves, "
        "welding vertices on the mirror plane closer than `merge_distance`. Undo restores a "
        "checkpoint."
    ),
    input_schema=_schema(
        ["axis"],
        axis={"enum": ["X", "Y", "Z"]},
        merge_distance={"type": "number", "minimum": 0, "maximum": 1, "default": 0.001},
    ),
    output_schema=result_schema(),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def mirror(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.mirror")
    with edited(ob) as bm:
        within_budget(ob, 2 * len(bm.verts), "mirroring doubles every vertex")
        geom = [*bm.verts, *bm.edges, *bm.faces]
        bmesh.ops.mirror(
            bm,
            geom=geom,
            axis=args["axis"],
            merge_dist=args.get("merge_distance", 0.001),
        )
    return Outcome(data=counts(ob), mutated=True, message=f"mirrored {ob.name!r} on {args['axis']}")
