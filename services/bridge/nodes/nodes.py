"""Finding things in a Geometry Nodes modifier's tree and setting their values.

The ``gn.*`` tools name everything by string: the object, its NODES modifier, a node by
its name (the tools set a node's name to the plan's node id), a socket by name or
identifier. Values arrive as JSON and are checked against the RNA definition of what
they set (type, array length, hard range, enum items, ID pointers by name) before
Blender sees them, because Blender clamps or ignores much of what it cannot use.
"""

from __future__ import annotations

import math
from typing import Any

import bpy

from services.bridge.registry import ToolError
from services.bridge.scene.fingerprint import is_id_struct

GROUP_INPUT = "group_input"
GROUP_OUTPUT = "group_output"
IO_NODES = {"NodeGroupInput": GROUP_INPUT, "NodeGroupOutput": GROUP_OUTPUT}
# ID pointer targets resolvable by name, keyed by RNA struct identifier.
ID_COLLECTIONS: dict[str, str] = {
    "Object": "objects", "Collection": "collections", "Material": "materials",
    "Image": "images", "Texture": "textures", "NodeTree": "node_groups", "Mesh": "meshes",
}  # fmt: skip
# Returned by ``exact_json`` for a value JSON cannot carry (a non-finite float, a pointer
# to something that is not an ID): such a value cannot be put back by a compensation.
UNREPRESENTABLE = object()
_BLENDER_PREFIX = "bpy_struct: item.attr = val: "


def require_nodes_modifier(ob: bpy.types.Object, name: str) -> bpy.types.NodesModifier:
    """The object's Geometry Nodes modifier ``name``, or a ToolError saying what to do."""
    mod = ob.modifiers.get(name)
    if mod is None:
        raise ToolError(
            "not_found",
            f"object {ob.name!r} has no modifier {name!r}; call gn.ensure_target with "
            "allow_create_modifier=true to add a Geometry Nodes modifier",
        )
    if mod.type != "NODES":
        raise ToolError(
            "conflict", f"modifier {name!r} of {ob.name!r} is a {mod.type} modifier, not NODES"
        )
    return mod


def require_tree(
    object_name: str, modifier: str
) -> tuple[bpy.types.Object, bpy.types.NodesModifier, bpy.types.NodeTree]:
    """The object, its NODES modifier and the node group the modifier evaluates."""
    ob = bpy.data.objects.get(object_name)
    if ob is None:
        raise ToolError("not_found", f"object {object_name!r} does not exist")
    mod = require_nodes_modifier(ob, modifier)
    if mod.node_group is None:
        raise ToolError(
            "not_found",
            f"modifier {modifier!r} of {ob.name!r} has no node group; call gn.ensure_target",
        )
    return ob, mod, mod.node_group


def require_node(tree: bpy.types.NodeTree, node_id: str) -> bpy.types.Node:
    node = tree.nodes.get(node_id)
    if node is None:
        names = sorted(n.name for n in tree.nodes)
        shown = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
        raise ToolError(
            "not_found", f"node group {tree.name!r} has no node {node_id!r}; nodes: {shown}"
        )
    return node


def sockets(node: bpy.types.Node, output: bool) -> list[bpy.types.NodeSocket]:
    """A node's real sockets (not the virtual "extend" socket of group nodes)."""
    found = node.outputs if output else node.inputs
    return [s for s in found if s.bl_idname != "NodeSocketVirtual"]


def socket_by_identifier(
    node: bpy.types.Node, identifier: str, output: bool
) -> bpy.types.NodeSocket | None:
    return next((s for s in sockets(node, output) if s.identifier == identifier), None)


def describe(socket: bpy.types.NodeSocket) -> str:
    """How errors name a socket: its name, its identifier when different, its type."""
    ident = "" if socket.identifier == socket.name else f" [{socket.identifier}]"
    return f"{socket.name!r}{ident} ({socket.type})"


def find_socket(node: bpy.types.Node, key: str, output: bool) -> bpy.types.NodeSocket:
    """Name first among enabled sockets, then identifier, then name among disabled ones
    (``contracts.nodes.find_socket`` is the same rule over the catalog)."""
    pool = sockets(node, output)
    found = (
        next((s for s in pool if s.enabled and s.name == key), None)
        or next((s for s in pool if s.identifier == key), None)
        or next((s for s in pool if s.name == key), None)
    )
    if found is not None:
        return found
    side, other = ("output", "input") if output else ("input", "output")
    if any(key in (s.name, s.identifier) for s in sockets(node, not output)):
        raise ToolError(
            "invalid_input", f"{key!r} is an {other} of node {node.name!r}, not an {side}"
        )
    listed = ", ".join(describe(s) for s in pool if s.enabled) or "none"
    raise ToolError(
        "not_found", f"node {node.name!r} has no {side} socket {key!r}; {side}s: {listed}"
    )


def stable_key(node: bpy.types.Node, socket: bpy.types.NodeSocket, output: bool) -> str | None:
    """The socket's identifier when ``find_socket`` resolves it back to this socket, so a
    compensation names it without ambiguity; None when it would not."""
    try:
        return socket.identifier if find_socket(node, socket.identifier, output) == socket else None
    except ToolError:
        return None


def id_target(prop: bpy.types.Property, value: Any) -> bpy.types.ID | None:
    """The ID a pointer property names, or None for null; ValueError or not_found says why not.
    Shared by node sockets and modifier properties, which point at IDs the same way."""
    if value is None:
        return None
    wanted = prop.fixed_type.identifier
    if not isinstance(value, str):
        raise ValueError(f"expected the name of a {wanted} or null, got {value!r}")
    struct = prop.fixed_type
    while struct is not None and struct.identifier not in ID_COLLECTIONS:
        struct = struct.base
    if struct is None:
        raise ValueError(f"pointers to {wanted} are not supported")
    target = getattr(bpy.data, ID_COLLECTIONS[struct.identifier]).get(value)
    if target is None:
        raise ToolError("not_found", f"{wanted} {value!r} does not exist")
    return target


def _number(prop: bpy.types.Property, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    if prop.type == "INT":
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"expected an integer, got {value!r}")
        value = int(value)
    if not prop.hard_min <= value <= prop.hard_max:
        raise ValueError(f"{value!r} is outside [{prop.hard_min:g}, {prop.hard_max:g}]")
    return value


def scalar(prop: bpy.types.Property, value: Any) -> Any:
    """A JSON value as what assigning one RNA property needs; ValueError says why not."""
    if prop.type == "BOOLEAN":
        if not isinstance(value, bool):
            raise ValueError(f"expected a boolean, got {value!r}")
        return value
    if prop.type in ("INT", "FLOAT"):
        return _number(prop, value)
    if prop.type == "STRING":
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {value!r}")
        return value
    items = [item.identifier for item in prop.enum_items]
    if prop.is_enum_flag:
        if not isinstance(value, list) or any(v not in items for v in value):
            raise ValueError(f"expected a list of {items}, got {value!r}")
        return set(value)
    if not isinstance(value, str):
        raise ValueError(
            f"expected one of {items}, got {value!r}"
            if items
            else f"expected the name of an item, got {value!r}"
        )
    # Some enums accept fewer items than they declare; Blender names those on assignment.
    if items and value not in items:
        raise ValueError(f"expected one of {items}, got {value!r}")
    return value


def coerce(prop: bpy.types.Property, value: Any) -> Any:
    """The JSON ``value`` as what assigning to ``prop`` needs; ValueError says why not."""
    if prop.type == "POINTER":
        return id_target(prop, value)
    if prop.type in ("BOOLEAN", "INT", "FLOAT") and prop.array_length > 0:
        if not isinstance(value, list) or len(value) != prop.array_length:
            raise ValueError(f"expected a list of {prop.array_length} values, got {value!r}")
        return [scalar(prop, v) for v in value]
    return scalar(prop, value)


def set_rna(owner: Any, ident: str, value: Any, what: str) -> None:
    """Check and set ``owner.ident``; a refusal raises ToolError naming ``what`` and leaves
    the value as it was."""
    prop = owner.bl_rna.properties[ident]
    try:
        coerced = coerce(prop, value)
    except ValueError as err:
        raise ToolError("invalid_input", f"{what}: {err}") from None
    try:
        setattr(owner, ident, coerced)
    except (TypeError, ValueError, AttributeError) as err:
        reason = str(err).removeprefix(_BLENDER_PREFIX).strip()
        raise ToolError("invalid_input", f"{what}: {reason}") from None
    # Blender refuses some pointers silently (a group node holding its own tree).
    if isinstance(coerced, bpy.types.ID) and getattr(owner, ident) != coerced:
        raise ToolError("invalid_input", f"{what}: {coerced.name!r} is not accepted here")


def _exact(value: Any) -> Any:
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else UNREPRESENTABLE
    return UNREPRESENTABLE


def exact_json(owner: Any, ident: str) -> Any:
    """``owner.ident`` as JSON that sets it back bit for bit (floats are not rounded), or
    ``UNREPRESENTABLE``."""
    prop = owner.bl_rna.properties.get(ident)
    if prop is None:
        return UNREPRESENTABLE
    value = getattr(owner, ident)
    if prop.type == "POINTER":
        if not is_id_struct(prop.fixed_type):
            return UNREPRESENTABLE
        return None if value is None else value.name
    if prop.type == "ENUM" and prop.is_enum_flag:
        return sorted(value)
    if prop.type in ("BOOLEAN", "INT", "FLOAT") and prop.array_length > 0:
        items = [_exact(float(v) if prop.type == "FLOAT" else v) for v in value]
        return UNREPRESENTABLE if UNREPRESENTABLE in items else items
    return _exact(float(value) if prop.type == "FLOAT" else value)
