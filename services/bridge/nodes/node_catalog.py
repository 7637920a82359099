"""``blendmesh/node_catalog``: every node a Geometry Nodes tree accepts, read from Blender.

Each candidate type (the ``GeometryNode*``, ``FunctionNode*``, ``ShaderNode*`` and
``Node*`` classes Blender registers) is added to a scratch group; the ones Blender
accepts are described as a fresh node has them and removed again, then the scratch
group is deleted, so the scene is as it was. Built once per bridge and kept.

Some enums accept fewer items than they declare (a Compare node's ``data_type``
declares every socket type and takes five). Blender names the accepted ones when it
refuses a value, so each enum is probed once with a value it cannot hold.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

import bpy

from contracts.nodes import NodeCatalog, NodeSpec, PropertySpec, SocketSpec
from services.bridge.nodes.nodes import sockets
from services.bridge.scene.fingerprint import node_props

PREFIXES = ("GeometryNode", "FunctionNode", "ShaderNode", "Node")
_PROBE = "__blendmesh_probe__"
_ACCEPTED = re.compile(r"not found in (\(.*\))")
_cache: NodeCatalog | None = None


def node_catalog() -> NodeCatalog:
    """The catalog of this Blender, built on first use."""
    global _cache
    if _cache is None:
        _cache = build()
    return _cache


def candidates() -> list[str]:
    """Names of the node classes this Blender registers that might go in the tree."""
    found = []
    for name in dir(bpy.types):
        if not name.startswith(PREFIXES):
            continue
        cls = getattr(bpy.types, name)
        if isinstance(cls, type) and issubclass(cls, bpy.types.Node):
            found.append(name)
    return sorted(found)


def build() -> NodeCatalog:
    """Describe every node type a fresh Geometry Nodes group accepts."""
    tree = bpy.data.node_groups.new("blendmesh_node_catalog", "GeometryNodeTree")
    nodes: dict[str, NodeSpec] = {}
    try:
        for bl_idname in candidates():
            try:
                node = tree.nodes.new(bl_idname)
            except RuntimeError:
                continue  # abstract, or not for Geometry Nodes
            try:
                nodes[bl_idname] = _node(node)
            finally:
                tree.nodes.remove(node)
    finally:
        bpy.data.node_groups.remove(tree)
    major, minor, patch = bpy.app.version
    return NodeCatalog(blender_version=f"{major}.{minor}.{patch}", nodes=nodes)


def _node(node: bpy.types.Node) -> NodeSpec:
    return NodeSpec(
        bl_idname=node.bl_idname,
        label=node.bl_label,
        description=node.bl_description or "",
        inputs=[_socket(s) for s in sockets(node, output=False)],
        outputs=[_socket(s) for s in sockets(node, output=True)],
        properties=[_property(node, ident, rna_type) for ident, rna_type, _ in node_props(node)],
    )


def plain(value: Any) -> Any:
    """A value as JSON when it is plain data (finite numbers, booleans, strings, vectors)."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, set):
        return sorted(value)
    try:
        items = [float(v) if not isinstance(v, bool) else v for v in value]
    except (TypeError, ValueError):
        return None
    if all(isinstance(v, bool) or math.isfinite(v) for v in items):
        return items
    return None


def _bound(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _socket(socket: bpy.types.NodeSocket) -> SocketSpec:
    prop = socket.bl_rna.properties.get("default_value")
    low = high = default = None
    items: list[str] = []
    if prop is not None:
        if prop.type in ("INT", "FLOAT"):
            low, high = _bound(prop.hard_min), _bound(prop.hard_max)
        if prop.type == "ENUM":
            items = enum_items(socket, "default_value")
        if prop.type != "POINTER":
            default = plain(socket.default_value)
    return SocketSpec(
        name=socket.name,
        identifier=socket.identifier,
        bl_idname=socket.bl_idname,
        type=socket.type,
        enabled=socket.enabled,
        multi_input=socket.is_multi_input,
        min=low,
        max=high,
        default=default,
        enum_items=items,
    )


def _property(node: bpy.types.Node, ident: str, rna_type: str) -> PropertySpec:
    value = getattr(node, ident)
    default = value.name if isinstance(value, bpy.types.ID) else plain(value)
    items: list[str] = []
    if rna_type == "ENUM":
        items = enum_items(node, ident)
    return PropertySpec(identifier=ident, type=rna_type, enum_items=items, default=default)


def enum_items(owner: Any, ident: str) -> list[str]:
    """The items ``owner.ident`` accepts now: Blender names them when it refuses a value."""
    prop = owner.bl_rna.properties[ident]
    declared = [item.identifier for item in prop.enum_items]
    if prop.is_enum_flag:
        return declared
    try:
        setattr(owner, ident, _PROBE)
    except TypeError as err:
        found = _ACCEPTED.search(str(err))
        if found is not None:
            try:
                accepted = ast.literal_eval(found.group(1))
            except (ValueError, SyntaxError):
                return declared
            if isinstance(accepted, str):
                return [accepted]
            if isinstance(accepted, tuple) and all(isinstance(a, str) for a in accepted):
                return list(accepted)
    return declared
