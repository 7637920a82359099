"""Nodes and links as JSON, so a compensation can put back what a ``gn.*`` tool removed.

A node is recorded with everything the scene fingerprint hashes of it (type, name,
label, location, width, flags, properties, socket values) and its links by socket
identifier; the links into a multi-input socket (Join Geometry) also record their order,
which changes the result. A node whose state lies outside that (a Color Ramp's stops,
a zone's pairing and items, a frame and the nodes in one) is not recordable: the tool
then declares no compensation and the executor restores its checkpoint instead.

``apply_patch`` is the inverse the ``gn.restore_node`` tool runs: unlink, remove,
rename, create nodes, link, reorder, in that order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import bpy

from services.bridge.nodes.nodes import (
    UNREPRESENTABLE,
    exact_json,
    set_rna,
    socket_by_identifier,
    sockets,
)
from services.bridge.registry import ToolError
from services.bridge.scene.fingerprint import (
    NODE_BASE_PROPS,
    is_id_struct,
    node_props,
    ordered_links,
)

_recordable_types: dict[str, bool] = {}


def _recordable_type(node: bpy.types.Node) -> bool:
    found = _recordable_types.get(node.bl_idname)
    if found is None:
        found = node.bl_idname != "NodeFrame" and not any(
            prop.type == "COLLECTION"
            or (prop.type == "POINTER" and not is_id_struct(prop.fixed_type))
            for prop in node.bl_rna.properties
            if prop.identifier not in NODE_BASE_PROPS
        )
        _recordable_types[node.bl_idname] = found
    return found


def _values(node: bpy.types.Node, output: bool) -> dict[str, Any] | None:
    values = {}
    for socket in sockets(node, output):
        if "default_value" not in socket.bl_rna.properties:
            continue
        value = exact_json(socket, "default_value")
        if value is UNREPRESENTABLE:
            # Only Blender's own defaults are non-finite (no tool accepts one), and a new
            # node has them again; anything else cannot be put back.
            if isinstance(socket.default_value, float):
                continue
            return None
        values[socket.identifier] = value
    return values


def capture_node(node: bpy.types.Node) -> dict[str, Any] | None:
    """The node as ``gn.restore_node`` recreates it, or None when it is not recordable."""
    if node.parent is not None or not _recordable_type(node):
        return None
    properties = {ident: exact_json(node, ident) for ident, _, _ in node_props(node)}
    inputs, outputs = _values(node, False), _values(node, True)
    if inputs is None or outputs is None or UNREPRESENTABLE in properties.values():
        return None
    return {
        "node_id": node.name,
        "bl_idname": node.bl_idname,
        "label": node.label,
        "location": [float(node.location[0]), float(node.location[1])],
        "width": float(node.width),
        "hide": node.hide,
        "mute": node.mute,
        "properties": properties,
        "inputs": inputs,
        "outputs": outputs,
    }


def link_ref(link: bpy.types.NodeLink) -> dict[str, Any]:
    """A link by node names and socket identifiers."""
    ref: dict[str, Any] = {
        "from_node": link.from_node.name,
        "from_socket": link.from_socket.identifier,
        "to_node": link.to_node.name,
        "to_socket": link.to_socket.identifier,
    }
    if link.is_muted:
        ref["muted"] = True
    return ref


def input_order(socket: bpy.types.NodeSocket) -> dict[str, Any]:
    """The order of the links into a multi-input socket."""
    return {
        "node": socket.node.name,
        "socket": socket.identifier,
        "from": [[k.from_node.name, k.from_socket.identifier] for k in ordered_links(socket)],
    }


def removal_patch(tree: bpy.types.NodeTree, nodes: list[bpy.types.Node]) -> dict[str, Any] | None:
    """What puts ``nodes`` back after they are removed, or None when one is not recordable."""
    states = [capture_node(n) for n in nodes]
    if any(s is None for s in states):
        return None
    names = {n.name for n in nodes}
    links = [k for k in tree.links if k.from_node.name in names or k.to_node.name in names]
    multi = {
        (k.to_node.name, k.to_socket.identifier): k.to_socket
        for k in links
        if k.to_socket.is_multi_input
    }
    patch: dict[str, Any] = {"nodes": states, "links": [link_ref(k) for k in links]}
    if multi:
        patch["order"] = [input_order(multi[key]) for key in sorted(multi)]
    return patch


def find_link(tree: bpy.types.NodeTree, ref: dict[str, Any]) -> bpy.types.NodeLink | None:
    return next(
        (
            k
            for k in tree.links
            if k.from_node.name == ref["from_node"]
            and k.from_socket.identifier == ref["from_socket"]
            and k.to_node.name == ref["to_node"]
            and k.to_socket.identifier == ref["to_socket"]
        ),
        None,
    )


def _endpoint(tree: bpy.types.NodeTree, node_id: str, ident: str, output: bool) -> Any:
    node = tree.nodes.get(node_id)
    socket = None if node is None else socket_by_identifier(node, ident, output)
    if socket is None:
        side = "output" if output else "input"
        raise ToolError("not_found", f"no {side} {ident!r} on node {node_id!r}", mutated=True)
    return socket


def add_link(tree: bpy.types.NodeTree, ref: dict[str, Any]) -> None:
    """Create the link ``ref`` names unless it exists."""
    link = find_link(tree, ref)
    if link is None:
        link = tree.links.new(
            _endpoint(tree, ref["from_node"], ref["from_socket"], True),
            _endpoint(tree, ref["to_node"], ref["to_socket"], False),
        )
    link.is_muted = bool(ref.get("muted", False))


def _reorder(tree: bpy.types.NodeTree, order: dict[str, Any]) -> None:
    # Sort ids can only be swapped, so this is a selection sort by swaps.
    socket = _endpoint(tree, order["node"], order["socket"], False)
    for position, (node_id, ident) in enumerate(order["from"]):
        current = ordered_links(socket)
        wanted = next(
            (
                k
                for k in current
                if (k.from_node.name, k.from_socket.identifier) == (node_id, ident)
            ),
            None,
        )
        if wanted is not None and position < len(current) and current[position] != wanted:
            wanted.swap_multi_input_sort_id(current[position])


def create_node(tree: bpy.types.NodeTree, state: dict[str, Any]) -> bpy.types.Node:
    """Recreate a node ``capture_node`` recorded."""
    name = state["node_id"]
    if tree.nodes.get(name) is not None:
        raise ToolError("conflict", f"node {name!r} already exists", mutated=True)
    try:
        node = tree.nodes.new(state["bl_idname"])
    except RuntimeError:
        raise ToolError(
            "invalid_input", f"cannot add a {state['bl_idname']} node", mutated=True
        ) from None
    node.name = name
    node.label = state.get("label", "")
    node.location = state.get("location", (0.0, 0.0))
    if "width" in state:
        node.width = state["width"]
    node.hide = state.get("hide", False)
    node.mute = state.get("mute", False)
    writable = {ident for ident, _, _ in node_props(node)}
    for ident, value in state.get("properties", {}).items():
        if ident not in writable:
            raise ToolError("invalid_input", f"{name}: no property {ident!r}", mutated=True)
        _mutated(set_rna, node, ident, value, f"{name}.{ident}")
    for output, key in ((False, "inputs"), (True, "outputs")):
        for ident, value in state.get(key, {}).items():
            socket = _endpoint(tree, name, ident, output)
            _mutated(set_rna, socket, "default_value", value, f"{name}.{ident}")
    return node


def _mutated(setter: Any, *args: Any) -> None:
    try:
        setter(*args)
    except ToolError as err:
        err.mutated = True
        raise


def apply_patch(tree: bpy.types.NodeTree, patch: dict[str, Any]) -> list[str]:
    """Run a restore patch; returns the names of the nodes it created."""
    for ref in patch.get("unlink", []):
        link = find_link(tree, ref)
        if link is not None:
            tree.links.remove(link)
    for name in patch.get("remove", []):
        node = tree.nodes.get(name)
        if node is not None:
            tree.nodes.remove(node)
    for item in patch.get("rename", []):
        node = tree.nodes.get(item["node_id"])
        if node is None:
            raise ToolError("not_found", f"no node {item['node_id']!r} to rename", mutated=True)
        node.name = item["name"]
        node.label = item.get("label", "")
    created = [create_node(tree, state).name for state in patch.get("nodes", [])]
    for ref in patch.get("links", []):
        add_link(tree, ref)
    for order in patch.get("order", []):
        _reorder(tree, order)
    return created


def reachable(
    tree: bpy.types.NodeTree, starts: Iterable[bpy.types.Node], forward: bool
) -> set[str]:
    """Names of ``starts`` and every node they feed (``forward``) or are fed by,
    directly or transitively."""
    edges: dict[str, list[str]] = {}
    for link in tree.links:
        a, b = link.from_node.name, link.to_node.name
        edges.setdefault(a if forward else b, []).append(b if forward else a)
    seen: set[str] = set()
    stack = [n.name for n in starts]
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(edges.get(name, []))
    return seen
