"""Edits between named meshes: boolean with another object, join several into one,
separate one into its loose parts or its materials."""

from __future__ import annotations

from typing import Any

import bmesh
import bpy
import numpy as np

from ...registry import Outcome, ToolError, Touches, name_schema, tool
from .. import apply as applying
from ..placing import require_kind
from .common import OBJECT, counts, edited, require_mesh, result_schema, within_budget

MAX_JOINED = 64
MAX_PARTS = 256
BOOLEAN = "blendmesh_boolean"
NAMES = {"type": "array", "items": {"type": "string"}}


@tool(
    name="mesh.boolean",
    touches=Touches(("object",)),
    description=(
        "Cut a mesh object with another mesh object (`with`): union, difference or "
        "intersect, with Blender's exact solver, applied to the mesh. The other object is "
        "left as it is (hide or delete it after). Undo restores a checkpoint."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "with", "operation"],
        "properties": {
            "object": OBJECT,
            "with": name_schema("The other mesh object."),
            "operation": {"enum": ["union", "difference", "intersect"]},
        },
    },
    output_schema=result_schema(),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def boolean(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.boolean")
    other = require_kind(args["with"], "MESH", "mesh.boolean")
    if other == ob:
        raise ToolError("invalid_input", f"mesh.boolean needs two objects; `with` is {ob.name!r}")
    if ob.modifiers.get(BOOLEAN) is not None:
        raise ToolError("conflict", f"object {ob.name!r} has a modifier named {BOOLEAN!r}")
    # The exact solver's result stays within both meshes' vertices and their crossings.
    within_budget(ob, 2 * (len(ob.data.vertices) + len(other.data.vertices)), "the boolean")
    mod = ob.modifiers.new(name=BOOLEAN, type="BOOLEAN")
    mod.object = other
    mod.operation = args["operation"].upper()
    mod.solver = "EXACT"
    try:
        applying.apply({"object": ob.name, "modifier": BOOLEAN})
    except ToolError as err:
        err.mutated = True
        raise
    _canonical_order(ob)
    return Outcome(
        data=counts(ob),
        mutated=True,
        message=f"{args['operation']} of {ob.name!r} with {other.name!r}",
    )


def _canonical_order(ob: bpy.types.Object) -> None:
    """Sort the mesh's vertices by position, then its edges and faces by their vertices:
    the exact solver's threads leave the same shape in an order that differs run to run,
    and the scene hash (and with it a replay's check) would differ with it."""
    with edited(ob) as bm:
        _sort(bm.verts, lambda v: (v.co.x, v.co.y, v.co.z))
        bm.verts.index_update()
        _sort(bm.edges, lambda e: tuple(sorted(v.index for v in e.verts)))
        _sort(bm.faces, lambda f: tuple(sorted(v.index for v in f.verts)))


def _sort(elements: Any, key: Any) -> None:
    # bmesh sorts by a number only: each element's rank in the order ``key`` gives.
    rank = {e: i for i, e in enumerate(sorted(elements, key=key))}
    elements.sort(key=lambda e: rank[e])


@tool(
    name="mesh.join",
    touches=Touches(("object", "objects")),
    description=(
        f"Join up to {MAX_JOINED} mesh objects into `object`: their geometry moves into its "
        "mesh where it was in the world, their materials become its slots, and the joined "
        "objects are deleted. Undo restores a checkpoint."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "objects"],
        "properties": {
            "object": OBJECT,
            "objects": {
                **NAMES,
                "items": name_schema("A mesh object to join into `object`."),
                "minItems": 1,
                "maxItems": MAX_JOINED,
                "uniqueItems": True,
            },
        },
    },
    output_schema=result_schema(joined=NAMES),
    safety_level="destructive",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def join(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.join")
    others = [require_kind(n, "MESH", "mesh.join") for n in args["objects"]]
    if ob in others:
        raise ToolError("invalid_input", f"mesh.join cannot join {ob.name!r} into itself")
    total = len(ob.data.vertices) + sum(len(o.data.vertices) for o in others)
    within_budget(ob, total, f"joining {len(others)} objects")
    inverse = ob.matrix_world.inverted_safe()
    joined = []
    for other in others:
        part = other.data.copy()
        try:
            part.transform(inverse @ other.matrix_world)
            _remap_materials(ob, other, part)
            with edited(ob) as bm:
                bm.from_mesh(part)
        finally:
            bpy.data.meshes.remove(part)
        joined.append(other.name)
        mesh = other.data
        bpy.data.objects.remove(other)
        if mesh.users == 0:
            bpy.data.meshes.remove(mesh)
    return Outcome(
        data={**counts(ob), "joined": joined},
        mutated=True,
        message=f"joined {len(joined)} objects into {ob.name!r}",
    )


def _remap_materials(ob: bpy.types.Object, other: bpy.types.Object, part: bpy.types.Mesh) -> None:
    """Give ``part``'s faces the slots of ``ob`` holding their materials, adding slots."""
    slots = [s.material for s in ob.material_slots]
    mapping = []
    for slot in other.material_slots:
        if slot.material not in slots:
            ob.data.materials.append(slot.material)
            slots.append(slot.material)
        mapping.append(slots.index(slot.material))
    if not mapping:
        return
    index = np.zeros(len(part.polygons), dtype=np.int32)
    part.polygons.foreach_get("material_index", index)
    table = np.array(mapping, dtype=np.int32)
    part.polygons.foreach_set("material_index", table[np.clip(index, 0, len(table) - 1)])


@tool(
    name="mesh.separate",
    touches=Touches(("object", "parts")),
    description=(
        "Split a mesh object into one object per loose part (by=loose_parts) or per material "
        f"slot (by=material), at most {MAX_PARTS}. The first part stays in `object`; the "
        "others are new objects named after it (answered in `parts`), with its transform, "
        "modifiers and materials. Undo restores a checkpoint."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "by"],
        "properties": {"object": OBJECT, "by": {"enum": ["loose_parts", "material"]}},
    },
    output_schema=result_schema(parts=NAMES),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def separate(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "mesh.separate")
    groups = _groups(ob, args["by"])
    if len(groups) > MAX_PARTS:
        raise ToolError(
            "invalid_input",
            f"{ob.name!r} would split into {len(groups)} parts, over {MAX_PARTS}; "
            "merge by distance first or separate by material",
        )
    if len(groups) < 2:
        return Outcome(data={**counts(ob), "parts": []}, mutated=False, message="one part only")
    made = []
    for group in groups[1:]:
        part = ob.copy()
        part.data = ob.data.copy()
        _keep(part, group)
        for collection in ob.users_collection:
            collection.objects.link(part)
        made.append(part.name)
    _keep(ob, groups[0])
    return Outcome(
        data={**counts(ob), "parts": made},
        mutated=True,
        message=f"separated {ob.name!r} into {len(made) + 1} parts",
    )


def _groups(ob: bpy.types.Object, by: str) -> list[set[int]]:
    """Face indices per part, parts ordered by their lowest face index."""
    if by == "material":
        found: dict[int, set[int]] = {}
        for poly in ob.data.polygons:
            found.setdefault(poly.material_index, set()).add(poly.index)
        return sorted(found.values(), key=min)
    bm = bmesh.new()
    try:
        bm.from_mesh(ob.data)
        bm.faces.ensure_lookup_table()
        seen: set[int] = set()
        parts: list[set[int]] = []
        for face in bm.faces:
            if face.index in seen:
                continue
            part, stack = {face.index}, [face]
            while stack:
                for edge in stack.pop().edges:
                    for near in edge.link_faces:
                        if near.index not in part:
                            part.add(near.index)
                            stack.append(near)
            seen |= part
            parts.append(part)
            if len(parts) > MAX_PARTS:
                break
        return parts
    finally:
        bm.free()


def _keep(ob: bpy.types.Object, faces: set[int]) -> None:
    """Delete every face of ``ob``'s mesh not in ``faces``, and what it leaves loose."""
    with edited(ob) as bm:
        bm.faces.ensure_lookup_table()
        gone = [f for f in bm.faces if f.index not in faces]
        bmesh.ops.delete(bm, geom=gone, context="FACES")
        loose = [v for v in bm.verts if not v.link_faces]
        bmesh.ops.delete(bm, geom=loose, context="VERTS")
