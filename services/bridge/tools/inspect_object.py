"""``object.inspect``: one object in depth, for a person or a model deciding what to do next.

The inspection artifact (``inspect.py``) describes every object briefly for the guardians;
this describes one fully: mesh counts before and after modifiers, each modifier's
settings, material slots, custom properties, world bounds, parent, children and
collections. Read-only, so it runs as an operation like any other (policy, log, audit)
and leaves no revision. What a property or a setting may hold is bounded
(``contracts.views``), so one object cannot make the receipt too large for the log.
"""

from __future__ import annotations

import json
from typing import Any

import bpy
import msgspec
from mathutils import Vector

from contracts.views import (
    MAX_PROPERTIES,
    MAX_PROPERTY_CHARS,
    MaterialSlot,
    MeshStats,
    ModifierDetail,
    ObjectDetail,
)
from services.bridge.inspection.inspect import r, rvec
from services.bridge.scene.fingerprint import material_values

from ..registry import NAME_SCHEMA, Outcome, tool
from .objects import require_object

# The answer is an ``ObjectDetail``, so its schema is that type's, an object at the top.
_, _DEFS = msgspec.json.schema_components([ObjectDetail], ref_template="#/$defs/{name}")
OBJECT_DETAIL: dict[str, Any] = {**_DEFS["ObjectDetail"], "$defs": _DEFS}

_MESHABLE = frozenset({"MESH", "CURVE", "SURFACE", "FONT", "META"})
MAX_SETTINGS = 48  # settings a modifier lists: enough for any built-in modifier
# Modifier properties every modifier has, or that say nothing about its result.
_SKIPPED = frozenset(
    {"rna_type", "name", "type", "show_viewport", "show_render", "show_in_editmode"}
    | {"show_on_cage", "show_expanded", "is_active", "is_override_data", "use_pin_to_last"}
    | {"persistent_uid", "execution_time", "use_apply_on_spline", "is_override_data_editable"}
)


def _plain(value: Any) -> Any:
    """A setting or property as JSON data: numbers rounded, names for datablocks,
    vectors as lists; None for what has no plain form."""
    if isinstance(value, bool | int | str):
        return value[:MAX_PROPERTY_CHARS] if isinstance(value, str) else value
    if isinstance(value, float):
        return r(value)
    if isinstance(value, bpy.types.ID):
        return value.name
    if isinstance(value, set):
        return sorted(value)
    try:
        items = list(value)
    except TypeError:
        return None
    if len(items) <= 16 and all(isinstance(v, int | float) for v in items):
        return [r(v) if isinstance(v, float) else v for v in items]
    return None


def _settings(mod: bpy.types.Modifier) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for prop in mod.bl_rna.properties:
        if prop.identifier in _SKIPPED or len(found) >= MAX_SETTINGS:
            continue
        value = _plain(getattr(mod, prop.identifier, None))
        if value is not None:
            found[prop.identifier] = value
    return found


def _modifier(mod: bpy.types.Modifier) -> ModifierDetail:
    return ModifierDetail(
        name=mod.name,
        type=mod.type,
        show_viewport=mod.show_viewport,
        show_render=mod.show_render,
        settings=_settings(mod),
    )


def _counts(mesh: bpy.types.Mesh) -> tuple[int, int, int, int]:
    triangles = sum(p.loop_total - 2 for p in mesh.polygons)
    return len(mesh.vertices), len(mesh.edges), len(mesh.polygons), triangles


def _mesh(ob: bpy.types.Object, evaluated: bpy.types.Object) -> MeshStats | None:
    if ob.type not in _MESHABLE:
        return None
    own = _counts(ob.data) if ob.type == "MESH" else (0, 0, 0, 0)
    try:
        mesh = evaluated.to_mesh()
    except RuntimeError:
        mesh = None
    try:
        after = (0, 0, 0, 0) if mesh is None else _counts(mesh)
    finally:
        evaluated.to_mesh_clear()
    return MeshStats(
        vertices=own[0],
        edges=own[1],
        faces=own[2],
        triangles=own[3],
        evaluated_vertices=after[0],
        evaluated_edges=after[1],
        evaluated_faces=after[2],
        evaluated_triangles=after[3],
    )


def _bounds(evaluated: bpy.types.Object) -> list[list[float]]:
    corners = [evaluated.matrix_world @ Vector(c) for c in evaluated.bound_box]
    return [
        rvec(min(c[i] for c in corners) for i in range(3)),
        rvec(max(c[i] for c in corners) for i in range(3)),
    ]


def _slot(slot: bpy.types.MaterialSlot) -> MaterialSlot:
    mat = slot.material
    if mat is None:
        return MaterialSlot(name=None, link=slot.link)
    return MaterialSlot(
        name=mat.name, link=slot.link, base_color=material_values(mat)["base_color"]
    )


def _property(value: Any) -> Any:
    plain = _plain(value)
    if plain is not None:
        return plain
    to_plain = getattr(value, "to_dict", None) or getattr(value, "to_list", None)
    if to_plain is None:
        return f"<{type(value).__name__}>"
    text = json.dumps(to_plain(), default=str, separators=(",", ":"))
    return text[:MAX_PROPERTY_CHARS]


def _properties(ob: bpy.types.Object) -> tuple[dict[str, Any], int]:
    keys = sorted(k for k in ob.keys() if not k.startswith("_"))  # noqa: SIM118 - an ID is no dict
    listed = {k[:MAX_PROPERTY_CHARS]: _property(ob[k]) for k in keys[:MAX_PROPERTIES]}
    return listed, max(0, len(keys) - MAX_PROPERTIES)


def describe(ob: bpy.types.Object) -> ObjectDetail:
    """``ob`` in depth, evaluated through the active depsgraph."""
    evaluated = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
    properties, more = _properties(ob)
    return ObjectDetail(
        name=ob.name,
        type=ob.type,
        data=ob.data.name if ob.data else None,
        location=rvec(ob.location),
        rotation_euler=rvec(ob.rotation_euler),
        scale=rvec(ob.scale),
        dimensions=rvec(evaluated.dimensions),
        world_bounds=_bounds(evaluated),
        parent=ob.parent.name if ob.parent else None,
        children=sorted(c.name for c in ob.children),
        collections=sorted(c.name for c in ob.users_collection),
        hide_viewport=ob.hide_viewport,
        hide_render=ob.hide_render,
        mesh=_mesh(ob, evaluated),
        modifiers=[_modifier(m) for m in ob.modifiers],
        materials=[_slot(s) for s in ob.material_slots],
        custom_properties=properties,
        more_custom_properties=more,
    )


@tool(
    name="object.inspect",
    description=(
        "Describe one object in depth: mesh counts (vertices, edges, faces, triangles) "
        "before and after modifiers, each modifier's type, name and settings, material "
        "slots, custom properties, world-space bounds, transform (rotation in radians), "
        "parent, children and collections. Changes nothing."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {"name": {**NAME_SCHEMA, "description": "the object's exact name"}},
        "required": ["name"],
    },
    output_schema=OBJECT_DETAIL,
    safety_level="read_only",
    idempotence_class="idempotent",
    compensation="none",
)
def inspect_object(args: dict[str, Any]) -> Outcome:
    ob = require_object(args["name"])
    detail = describe(ob)
    data: dict[str, Any] = msgspec.to_builtins(detail)
    return Outcome(data=data, mutated=False, message=f"{ob.type.lower()} {ob.name!r}")
