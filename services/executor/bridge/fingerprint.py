"""Canonical scene snapshot and its hash.

The executor compares hashes to prove that a rollback or a compensation
restored the scene, and to detect drift between processes, so the snapshot
must be deterministic (sorted, rounded, -0.0 normalised) and cheap.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import bpy
import numpy as np

DECIMALS = 6
# Pure UI state: it changes when a neighbouring modifier is added or removed,
# which would make add->remove round trips look like scene changes.
UI_ONLY_MODIFIER_PROPS = frozenset({"is_active", "show_expanded"})
_SCALAR_TYPES = frozenset({"BOOLEAN", "INT", "FLOAT", "STRING", "ENUM"})
_prop_cache: dict[str, list[tuple[str, str, bool]]] = {}


def r(value: float) -> float:
    """Round a float canonically; adding 0.0 turns -0.0 into 0.0."""
    return round(float(value), DECIMALS) + 0.0


def rvec(values: Any) -> list[float]:
    """Round every component of a vector."""
    return [r(v) for v in values]


def canonical_json(value: Any) -> str:
    """The one JSON encoding used for hashing."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def is_id_struct(struct: bpy.types.Struct | None) -> bool:
    """True when an RNA struct is an ID type (pointers to it can be named)."""
    while struct is not None:
        if struct.identifier == "ID":
            return True
        struct = struct.base
    return False


def modifier_props(mod: bpy.types.Modifier) -> list[tuple[str, str, bool]]:
    """(identifier, rna type, is_array) of writable content properties, cached per type."""
    cached = _prop_cache.get(mod.type)
    if cached is None:
        cached = []
        for prop in mod.bl_rna.properties:
            if prop.is_readonly or prop.identifier in ("rna_type", "name"):
                continue
            if prop.type in _SCALAR_TYPES or (
                prop.type == "POINTER" and is_id_struct(prop.fixed_type)
            ):
                is_array = prop.type in ("BOOLEAN", "INT", "FLOAT") and prop.array_length > 0
                cached.append((prop.identifier, prop.type, is_array))
        _prop_cache[mod.type] = cached
    return cached


def json_value(value: Any, rna_type: str, is_array: bool) -> Any:
    """Convert an RNA property value to plain, canonical JSON."""
    if rna_type == "POINTER":
        return None if value is None else value.name
    if is_array:
        return [r(v) if rna_type == "FLOAT" else v for v in value]
    if rna_type == "FLOAT":
        return r(value)
    if isinstance(value, set):  # enum flags
        return sorted(value)
    return value


def _modifier(mod: bpy.types.Modifier) -> dict[str, Any]:
    props = {
        ident: json_value(getattr(mod, ident), rna_type, is_array)
        for ident, rna_type, is_array in modifier_props(mod)
        if ident not in UI_ONLY_MODIFIER_PROPS
    }
    return {"name": mod.name, "type": mod.type, "properties": props}


def _mesh(mesh: bpy.types.Mesh) -> dict[str, Any]:
    count = len(mesh.vertices)
    coords = np.empty(count * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", coords)
    rounded = np.round(coords.astype(np.float64), DECIMALS) + 0.0
    return {
        "vertices": count,
        "polygons": len(mesh.polygons),
        "vertex_hash": hashlib.sha256(rounded.tobytes()).hexdigest(),
    }


def _object(ob: bpy.types.Object) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": ob.name,
        "type": ob.type,
        "parent": ob.parent.name if ob.parent else None,
        "location": rvec(ob.location),
        "rotation": rvec(ob.rotation_euler),
        "scale": rvec(ob.scale),
        "data": ob.data.name if ob.data else None,
        "modifiers": [_modifier(m) for m in ob.modifiers],
        "material_slots": [s.material.name if s.material else None for s in ob.material_slots],
    }
    if ob.type == "MESH":
        entry["mesh"] = _mesh(ob.data)
    return entry


def principled(mat: bpy.types.Material) -> bpy.types.Node | None:
    """The material's Principled BSDF node, if it has one."""
    if mat.node_tree is None:
        return None
    for node in mat.node_tree.nodes:
        if node.type == "BSDF_PRINCIPLED":
            return node
    return None


def material_values(mat: bpy.types.Material) -> dict[str, Any]:
    """Base color / metallic / roughness, from the BSDF when present (that is what renders)."""
    node = principled(mat)
    if node is None:
        color, metallic, roughness = mat.diffuse_color, mat.metallic, mat.roughness
    else:
        color = node.inputs["Base Color"].default_value
        metallic = node.inputs["Metallic"].default_value
        roughness = node.inputs["Roughness"].default_value
    return {
        "name": mat.name,
        "base_color": rvec(color),
        "metallic": r(metallic),
        "roughness": r(roughness),
    }


def snapshot() -> dict[str, Any]:
    """Canonical description of the current scene (all objects, never truncated)."""
    objects = sorted(bpy.context.scene.objects, key=lambda o: o.name)
    used: dict[str, bpy.types.Material] = {}
    for ob in objects:
        for slot in ob.material_slots:
            if slot.material is not None:
                used[slot.material.name] = slot.material
    return {
        "objects": [_object(ob) for ob in objects],
        "materials": [material_values(used[name]) for name in sorted(used)],
    }


def hash_snapshot(snap: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of a snapshot."""
    return hashlib.sha256(canonical_json(snap).encode("utf-8")).hexdigest()


def scene_hash() -> str:
    """Hash of the current scene."""
    return hash_snapshot(snapshot())
