"""Canonical scene snapshot, the content the scene hash is computed from.

The executor compares hashes to prove that a rollback or a compensation
restored the scene, and to detect drift between processes, so the snapshot
must be deterministic (sorted, rounded, -0.0 normalised) and cheap. The hash
combines one digest per entry of it (``digests.py``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import bpy
import numpy as np

from blendmesh_addon.tools.materials import principled
from services.bridge.scene import scene_state
from services.bridge.scene.canonical import canonical_json, r, rvec
from services.bridge.scene.vertex_hash import VertexHashes

# Pure UI state: it changes when a neighbouring modifier is added or removed,
# which would make add->remove round trips look like scene changes.
UI_ONLY_MODIFIER_PROPS = frozenset({"is_active", "show_expanded"})
_SCALAR_TYPES = frozenset({"BOOLEAN", "INT", "FLOAT", "STRING", "ENUM"})
_prop_cache: dict[str, list[tuple[str, str, bool]]] = {}
_node_prop_cache: dict[str, list[tuple[str, str, bool]]] = {}
# What every node has (name, label, location, selection, drawn size, colour): the content
# among them is hashed by name, the rest is editor state.
NODE_BASE_PROPS = frozenset(bpy.types.Node.bl_rna.properties.keys())
# One memo for the process: the digest cache and a commit's full check describe the same
# big meshes again and again.
VERTEX_HASHES = VertexHashes()


def is_id_struct(struct: bpy.types.Struct | None) -> bool:
    """True when an RNA struct is an ID type (pointers to it can be named)."""
    while struct is not None:
        if struct.identifier == "ID":
            return True
        struct = struct.base
    return False


def writable_props(struct: bpy.types.Struct, skip: frozenset[str]) -> list[tuple[str, str, bool]]:
    """(identifier, rna type, is_array) of the writable scalar, enum and ID-pointer
    properties of an RNA struct, in RNA order, leaving out ``skip``."""
    found = []
    for prop in struct.properties:
        if prop.is_readonly or prop.identifier in skip:
            continue
        if prop.type in _SCALAR_TYPES or (prop.type == "POINTER" and is_id_struct(prop.fixed_type)):
            is_array = prop.type in ("BOOLEAN", "INT", "FLOAT") and prop.array_length > 0
            found.append((prop.identifier, prop.type, is_array))
    return found


def modifier_props(mod: bpy.types.Modifier) -> list[tuple[str, str, bool]]:
    """(identifier, rna type, is_array) of writable content properties, cached per type."""
    cached = _prop_cache.get(mod.type)
    if cached is None:
        cached = writable_props(mod.bl_rna, frozenset({"rna_type", "name"}))
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


def modifier_values(mod: bpy.types.Modifier) -> dict[str, Any]:
    """A modifier's content properties as canonical JSON (what the scene hash covers)."""
    return {
        ident: json_value(getattr(mod, ident), rna_type, is_array)
        for ident, rna_type, is_array in modifier_props(mod)
        if ident not in UI_ONLY_MODIFIER_PROPS
    }


def _modifier(mod: bpy.types.Modifier) -> dict[str, Any]:
    entry = {"name": mod.name, "type": mod.type, "properties": modifier_values(mod)}
    if mod.type == "NODES" and mod.node_group is not None:
        entry["inputs"] = modifier_inputs(mod)
    return entry


def rna_json(owner: Any, ident: str) -> Any:
    """``owner.ident`` as canonical JSON, typed by its RNA definition; None when the owner
    has no such property (a Geometry socket has no default value)."""
    prop = owner.bl_rna.properties.get(ident)
    if prop is None:
        return None
    is_array = prop.type in ("BOOLEAN", "INT", "FLOAT") and prop.array_length > 0
    return json_value(getattr(owner, ident), prop.type, is_array)


def node_props(node: bpy.types.Node) -> list[tuple[str, str, bool]]:
    """Writable properties of a node type beyond those every node has, cached per type."""
    cached = _node_prop_cache.get(node.bl_idname)
    if cached is None:
        cached = writable_props(node.bl_rna, NODE_BASE_PROPS)
        _node_prop_cache[node.bl_idname] = cached
    return cached


def ordered_links(socket: bpy.types.NodeSocket) -> list[bpy.types.NodeLink]:
    """The links into a multi-input socket in the order Blender evaluates them. Sort ids
    may repeat after a link is removed, so names break ties to keep the order stable."""
    return sorted(
        socket.links,
        key=lambda k: (k.multi_input_sort_id, k.from_node.name, k.from_socket.identifier),
    )


def _sockets(sockets: Any) -> list[list[Any]]:
    # The virtual "extend" socket of group nodes is an editor affordance, not a socket.
    return [
        [s.identifier, s.bl_idname, rna_json(s, "default_value")]
        for s in sockets
        if s.bl_idname != "NodeSocketVirtual"
    ]


def _node(node: bpy.types.Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "bl_idname": node.bl_idname,
        "label": node.label,
        "location": rvec(node.location),
        "width": r(node.width),
        "hide": node.hide,
        "mute": node.mute,
        "parent": node.parent.name if node.parent else None,
        "properties": {
            ident: json_value(getattr(node, ident), rna_type, is_array)
            for ident, rna_type, is_array in node_props(node)
        },
        "inputs": _sockets(node.inputs),
        "outputs": _sockets(node.outputs),
    }


def _link(link: bpy.types.NodeLink) -> list[Any]:
    to = link.to_socket
    rank = ordered_links(to).index(link) if to.is_multi_input else 0
    return [
        link.from_node.name,
        link.from_socket.identifier,
        link.to_node.name,
        to.identifier,
        rank,
        link.is_muted,
    ]


def _interface(group: bpy.types.NodeTree) -> list[list[Any]]:
    # Not the socket identifiers: Blender numbers them from a counter that removing a
    # socket does not rewind, so an add/remove round trip would look like a change.
    return [
        [item.in_out, item.name, item.socket_type, rna_json(item, "default_value")]
        for item in group.interface.items_tree
        if item.item_type == "SOCKET"
    ]


def node_group_json(group: bpy.types.NodeTree) -> dict[str, Any]:
    """A node group's entry in the snapshot: its interface, nodes and links."""
    return {
        "name": group.name,
        "bl_idname": group.bl_idname,
        "interface": _interface(group),
        "nodes": [_node(n) for n in sorted(group.nodes, key=lambda n: n.name)],
        "links": sorted(_link(k) for k in group.links),
    }


def node_groups(objects: list[bpy.types.Object]) -> list[dict[str, Any]]:
    """The node groups the objects' Geometry Nodes modifiers evaluate, nested groups
    included. Unused groups are left out: a checkpoint's .blend does not keep them."""
    found: dict[str, bpy.types.NodeTree] = {}
    stack = [
        mod.node_group
        for ob in objects
        for mod in ob.modifiers
        if mod.type == "NODES" and mod.node_group is not None
    ]
    while stack:
        group = stack.pop()
        if group.name in found:
            continue
        found[group.name] = group
        stack.extend(n.node_tree for n in group.nodes if getattr(n, "node_tree", None))
    return [node_group_json(found[name]) for name in sorted(found)]


def _idprop_json(value: Any) -> Any:
    # A saved file gives back some booleans as 0/1 (``_use_attribute``): hashed as ints.
    if isinstance(value, bpy.types.ID):
        return value.name
    if hasattr(value, "to_list"):
        value = value.to_list()
    if isinstance(value, list):
        return [_idprop_json(v) for v in value]
    if isinstance(value, bool):
        return int(value)
    return r(value) if isinstance(value, float) else value


def modifier_inputs(mod: bpy.types.Modifier) -> list[list[Any]]:
    """A Geometry Nodes modifier's values for its group's inputs, by socket name (the
    identifiers are counter-numbered, see ``_interface``)."""
    values = []
    for item in mod.node_group.interface.items_tree:
        if item.item_type != "SOCKET" or item.in_out != "INPUT":
            continue
        ident = item.identifier
        values.append(
            [
                item.name,
                _idprop_json(mod.get(ident)),
                _idprop_json(mod.get(f"{ident}_use_attribute")),
                _idprop_json(mod.get(f"{ident}_attribute_name")),
            ]
        )
    return values


def positions(mesh: bpy.types.Mesh) -> np.ndarray:
    """The vertices' coordinates, flat, as float32. Read from the ``position`` attribute,
    which Blender copies as one block: ``mesh.vertices.foreach_get("co")`` goes vertex by
    vertex, about 90 times slower (74 ms against 0.8 ms for 491,000 vertices)."""
    coords = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    position = mesh.attributes.get("position")
    if position is not None and position.data_type == "FLOAT_VECTOR" and position.domain == "POINT":
        position.data.foreach_get("vector", coords)
    else:  # no attribute (an empty mesh): the same values, the slow way
        mesh.vertices.foreach_get("co", coords)
    return coords


def _mesh(mesh: bpy.types.Mesh) -> dict[str, Any]:
    return {
        "vertices": len(mesh.vertices),
        "polygons": len(mesh.polygons),
        "vertex_hash": VERTEX_HASHES.digest(positions(mesh)),
    }


def object_json(ob: bpy.types.Object) -> dict[str, Any]:
    """An object's entry in the snapshot (what the scene hash digests per object)."""
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
    entry.update(scene_state.object_state(ob))
    return entry


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
    with scene_state.membership():
        described = [object_json(ob) for ob in objects]
    snap: dict[str, Any] = {
        "objects": described,
        "materials": [material_values(used[name]) for name in sorted(used)],
    }
    # Only when there are any, so the hash of a scene without Geometry Nodes is unchanged.
    groups = node_groups(objects)
    if groups:
        snap["node_groups"] = groups
    snap.update(scene_state.scene_state(bpy.context.scene))
    return snap


def whole_snapshot_hash() -> str:
    """sha256 hex of the canonical JSON of the whole snapshot: the scene hash before it
    was combined from per-datablock digests (``digests.py``). Revisions committed then
    carry it, so loading one checks it with this (ADR 0012)."""
    return hashlib.sha256(canonical_json(snapshot()).encode("utf-8")).hexdigest()
