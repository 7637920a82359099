"""UV tools on named mesh objects: smart UV project, cube and cylinder projection, and
scaling each UV island about its centre.

Every one is computed here from the mesh through bmesh, with no operator, edit mode or
view: smart project splits the faces into islands by angle, flattens each on its own
plane and packs them (``uv_layout``), as Blender's Smart UV Project does. Each writes
the named UV map (made when missing) and leaves the others.
"""

from __future__ import annotations

import math
from typing import Any

import bmesh
import bpy
from mathutils import Vector

from services.bridge import uv_layout

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from .modelling.common import OBJECT, edited, require_mesh

MAX_UV_MAPS = 8  # Blender's own limit on a mesh's UV maps
UV_MAP = name_schema("UV map to write; made when the mesh has none of that name.")
RESULT = {
    "type": "object",
    "required": ["object", "uv_map", "faces"],
    "properties": {
        "object": {"type": "string"},
        "uv_map": {"type": "string"},
        "faces": {"type": "integer", "minimum": 0},
        "islands": {"type": "integer", "minimum": 0},
    },
}


def _schema(**own: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["object"],
        "properties": {"object": OBJECT, "uv_map": UV_MAP, **own},
    }


def uv_layer(ob: bpy.types.Object, name: str | None) -> str:
    """The name of the UV map to write: ``name`` (made when missing), else the active one,
    else a new "UVMap"; it becomes the active map."""
    layers = ob.data.uv_layers
    wanted = name or (layers.active.name if layers.active is not None else "UVMap")
    layer = layers.get(wanted)
    if layer is None:
        if len(layers) >= MAX_UV_MAPS:
            raise ToolError(
                "invalid_input",
                f"{ob.name!r} has {len(layers)} UV maps, Blender's most; name one of them",
            )
        layer = layers.new(name=wanted)
    layers.active = layer
    return str(layer.name)


def _done(ob: bpy.types.Object, layer: str, what: str, **more: Any) -> Outcome:
    faces = len(ob.data.polygons)
    return Outcome(
        data={"object": ob.name, "uv_map": layer, "faces": faces, **more},
        mutated=True,
        message=f"{what} {ob.name!r} into UV map {layer!r}",
    )


@tool(
    name="uv.smart_project",
    touches=Touches(("object",)),
    description=(
        "Unwrap a mesh object as Blender's Smart UV Project does: faces are split into "
        "islands where they turn more than `angle_limit` degrees, each island flattened on "
        "its own plane, and all packed into the unit square at one scale with "
        "`island_margin` between them. Undo restores a checkpoint."
    ),
    input_schema=_schema(
        angle_limit={"type": "number", "minimum": 1, "maximum": 89, "default": 66},
        island_margin={"type": "number", "minimum": 0, "maximum": 1, "default": 0},
    ),
    output_schema=RESULT,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def smart_project(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "uv.smart_project")
    if len(ob.data.polygons) == 0:
        raise ToolError("invalid_input", f"{ob.name!r} has no faces to unwrap")
    layer = uv_layer(ob, args.get("uv_map"))
    limit = math.cos(math.radians(args.get("angle_limit", 66)))
    with edited(ob) as bm:
        uv = bm.loops.layers.uv[layer]
        islands = _flat_islands(bm, limit)
        flat = [_flattened(island) for island in islands]
        sizes = [(max(u for u, _ in pts), max(v for _, v in pts)) for pts in flat]
        corners, scale = uv_layout.pack(sizes, args.get("island_margin", 0.0))
        for island, pts, (cx, cy) in zip(islands, flat, corners, strict=True):
            loops = [loop for face in island for loop in face.loops]
            for loop, (u, v) in zip(loops, pts, strict=True):
                loop[uv].uv = ((u + cx) * scale, (v + cy) * scale)
    return _done(ob, layer, "unwrapped", islands=len(islands))


def _flat_islands(bm: bmesh.types.BMesh, limit: float) -> list[list[bmesh.types.BMFace]]:
    """Faces grouped into islands: joined across edges, each face within the angle limit
    (``limit``: its cosine) of the normal of the face that started its island."""
    seen: set[bmesh.types.BMFace] = set()
    islands = []
    for face in bm.faces:
        if face in seen:
            continue
        seed, island, stack = face.normal.copy(), [face], [face]
        seen.add(face)
        while stack:
            for edge in stack.pop().edges:
                for near in edge.link_faces:
                    if near not in seen and near.normal.dot(seed) >= limit:
                        seen.add(near)
                        island.append(near)
                        stack.append(near)
        islands.append(island)
    return islands


def _flattened(island: list[bmesh.types.BMFace]) -> list[tuple[float, float]]:
    """Each corner of the island's faces projected on the plane of its area-weighted
    normal, moved so the island's box starts at 0, 0."""
    normal = sum((f.normal * f.calc_area() for f in island), Vector()).normalized()
    if normal.length == 0:
        normal = island[0].normal
    tangent = normal.orthogonal().normalized()
    bitangent = normal.cross(tangent)
    points = [
        (loop.vert.co.dot(tangent), loop.vert.co.dot(bitangent))
        for face in island
        for loop in face.loops
    ]
    low_u, low_v = min(u for u, _ in points), min(v for _, v in points)
    return [(u - low_u, v - low_v) for u, v in points]


@tool(
    name="uv.cube_project",
    touches=Touches(("object",)),
    description=(
        "Project a mesh object's UVs from the six sides of a box: each face from the axis "
        "its normal is closest to, `size` object units to one UV unit. Undo restores a "
        "checkpoint."
    ),
    input_schema=_schema(size={"type": "number", "minimum": 0.001, "maximum": 1000, "default": 2}),
    output_schema=RESULT,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def cube_project(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "uv.cube_project")
    layer = uv_layer(ob, args.get("uv_map"))
    size = args.get("size", 2.0)
    with edited(ob) as bm:
        uv = bm.loops.layers.uv[layer]
        for face in bm.faces:
            n = face.normal
            dominant = max(range(3), key=lambda i: (abs(n[i]), -i))
            u_axis, v_axis = [i for i in range(3) if i != dominant]
            for loop in face.loops:
                co = loop.vert.co
                loop[uv].uv = (co[u_axis] / size + 0.5, co[v_axis] / size + 0.5)
    return _done(ob, layer, "box-projected")


@tool(
    name="uv.cylinder_project",
    touches=Touches(("object",)),
    description=(
        "Project a mesh object's UVs from a cylinder around its own `axis` through its "
        "origin: U goes once around, V from the lowest to the highest vertex. Faces across "
        "the seam are kept whole. Undo restores a checkpoint."
    ),
    input_schema=_schema(axis={"enum": ["X", "Y", "Z"], "default": "Z"}),
    output_schema=RESULT,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def cylinder_project(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "uv.cylinder_project")
    if len(ob.data.vertices) == 0:  # refused before a UV map is made
        raise ToolError("invalid_input", f"{ob.name!r} has no vertices to project")
    layer = uv_layer(ob, args.get("uv_map"))
    up = "XYZ".index(args.get("axis", "Z"))
    a, b = [i for i in range(3) if i != up]
    with edited(ob) as bm:
        heights = [v.co[up] for v in bm.verts]
        low, span = min(heights), (max(heights) - min(heights)) or 1.0
        uv = bm.loops.layers.uv[layer]
        for face in bm.faces:
            cos = [loop.vert.co for loop in face.loops]
            us = [math.atan2(co[b], co[a]) / (2 * math.pi) + 0.5 for co in cos]
            if max(us) - min(us) > 0.5:  # across the seam: keep the face whole
                us = [u + 1.0 if u < 0.5 else u for u in us]
            for loop, u in zip(face.loops, us, strict=True):
                loop[uv].uv = (u, (loop.vert.co[up] - low) / span)
    return _done(ob, layer, "cylinder-projected")


@tool(
    name="uv.scale_islands",
    touches=Touches(("object",)),
    description=(
        "Scale each UV island of a mesh object's UV map about its own centre by `scale` "
        "(an island: faces joined by edges whose UVs meet). Undo restores a checkpoint."
    ),
    input_schema=_schema(
        scale={"type": "number", "minimum": 0.001, "maximum": 1000},
    ),
    output_schema=RESULT,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def scale_islands(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "uv.scale_islands")
    name = args.get("uv_map")
    layers = ob.data.uv_layers
    if (name and layers.get(name) is None) or (not name and layers.active is None):
        raise ToolError(
            "not_found",
            f"{ob.name!r} has no UV map {name or ''!r}; unwrap it first (uv.smart_project)",
        )
    layer = name or layers.active.name
    with edited(ob) as bm:
        uv = bm.loops.layers.uv[layer]
        islands = _islands(bm, uv)
        for island in islands:
            loops = [loop for face in island for loop in face.loops]
            points = [loop[uv].uv.copy() for loop in loops]
            low = Vector((min(p.x for p in points), min(p.y for p in points)))
            high = Vector((max(p.x for p in points), max(p.y for p in points)))
            centre = (low + high) / 2
            for loop, point in zip(loops, points, strict=True):
                loop[uv].uv = centre + (point - centre) * args["scale"]
    return _done(ob, layer, "scaled the UV islands of", islands=len(islands))


def _islands(bm: bmesh.types.BMesh, uv: Any) -> list[list[bmesh.types.BMFace]]:
    """Faces grouped by UV connectivity: two faces sharing an edge whose ends have the
    same UVs on both sides are on one island."""

    def joined(edge: bmesh.types.BMEdge, f1: bmesh.types.BMFace, f2: bmesh.types.BMFace) -> bool:
        def ends(face: bmesh.types.BMFace) -> dict[int, Vector]:
            return {lp.vert.index: lp[uv].uv for lp in face.loops if lp.vert in edge.verts}

        one, two = ends(f1), ends(f2)
        return all((one[i] - two[i]).length < 1e-6 for i in one if i in two)

    bm.verts.index_update()
    seen: set[bmesh.types.BMFace] = set()
    islands = []
    for face in bm.faces:
        if face in seen:
            continue
        island, stack = [face], [face]
        seen.add(face)
        while stack:
            here = stack.pop()
            for edge in here.edges:
                for near in edge.link_faces:
                    if near not in seen and joined(edge, here, near):
                        seen.add(near)
                        island.append(near)
                        stack.append(near)
        islands.append(island)
    return islands
