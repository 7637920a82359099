"""Nodes of a Geometry Nodes group: add, remove, restore, set values, clean up."""

from __future__ import annotations

from typing import Any

import bpy

from contracts.bridge import Compensation
from services.bridge.budget.caps import SOCKET_CAPS
from services.bridge.nodes.node_state import apply_patch, link_ref, reachable, removal_patch
from services.bridge.nodes.nodes import (
    IO_NODES,
    UNREPRESENTABLE,
    describe,
    exact_json,
    find_socket,
    require_node,
    require_tree,
    set_rna,
    stable_key,
)
from services.bridge.scene.fingerprint import node_props, rna_json

from ...registry import Outcome, ToolError, Touches, tool
from ..answers import NAMES, answer
from . import schemas
from .common import again, restore, target_args


@tool(
    name="gn.add_node",
    touches=Touches(("object",), node_groups=True),
    description=(
        "Add a node to the modifier's node group; its name and label are node_id. An existing "
        "node_id is a conflict; a type this Blender does not have in Geometry Nodes is refused. "
        "Group Input/Output nodes come from gn.ensure_group_io instead."
    ),
    input_schema=schemas.ADD_NODE,
    output_schema=schemas.ADDED_NODE,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="gn.remove_node",
)
def add_node(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    node_id, bl_idname = args["node_id"], args["bl_idname"]
    if tree.nodes.get(node_id) is not None:
        raise ToolError("conflict", f"node group {tree.name!r} already has a node {node_id!r}")
    if bl_idname in IO_NODES:
        raise ToolError("invalid_input", f"{bl_idname} nodes come from gn.ensure_group_io")
    try:
        node = tree.nodes.new(bl_idname)
    except RuntimeError:
        raise ToolError(
            "invalid_input",
            f"unknown node type {bl_idname!r}: this Blender has no such node for Geometry "
            "Nodes (see the node catalog)",
        ) from None
    node.name = node.label = node_id
    node.location = args.get("location", (0.0, 0.0))
    return Outcome(
        data={
            "node_id": node.name,
            "bl_idname": node.bl_idname,
            "inputs": [describe(s) for s in node.inputs if s.enabled],
            "outputs": [describe(s) for s in node.outputs if s.enabled],
        },
        mutated=True,
        message=f"added {bl_idname} {node_id!r} to {tree.name!r}",
        compensation=Compensation(
            tool="gn.remove_node", arguments={**target_args(args), "node_id": node.name}
        ),
    )


@tool(
    name="gn.remove_node",
    touches=Touches(("object",), node_groups=True),
    description=(
        "Remove a node and its links. The compensation recreates it (type, location, "
        "properties, input values, links) through gn.restore_node."
    ),
    input_schema=schemas.NODE_ONLY,
    output_schema=schemas.REMOVED_NODE,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="gn.restore_node",
)
def remove_node(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    node = require_node(tree, args["node_id"])
    patch = removal_patch(tree, [node])
    bl_idname = node.bl_idname
    tree.nodes.remove(node)
    return Outcome(
        data={"node_id": args["node_id"], "bl_idname": bl_idname},
        mutated=True,
        message=f"removed {args['node_id']!r} from {tree.name!r}",
        compensation=restore(args, patch),
    )


@tool(
    name="gn.restore_node",
    touches=Touches(("object",), node_groups=True),
    description=(
        "Put back nodes and links that another gn tool removed (its compensation): unlink, "
        "remove, rename, create nodes with their properties and socket values, link, and "
        "restore the order of links into multi-input sockets. Sockets are named by identifier."
    ),
    input_schema=schemas.RESTORE_NODE,
    output_schema=answer({"created": NAMES}),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def restore_node(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    created = apply_patch(tree, args)
    return Outcome(
        data={"created": created},
        mutated=True,
        message=f"restored {len(created)} nodes in {tree.name!r}",
    )


@tool(
    name="gn.set_input",
    touches=Touches(("object",), node_groups=True),
    description=(
        "Set the value of a node's input socket (its value when nothing is linked). Checked "
        "against the socket: number type and hard range, vector length, booleans, colours as "
        "4 floats, objects/collections/materials by name. Subdivision levels are at most 6, "
        "grid vertices at most 1000 per axis."
    ),
    input_schema=schemas.SET_INPUT,
    output_schema=schemas.SET_INPUT_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="gn.set_input",
)
def set_input(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    node = require_node(tree, args["node_id"])
    socket = find_socket(node, args["socket"], output=False)
    what = f"input {describe(socket)} of {node.name!r}"
    if "default_value" not in socket.bl_rna.properties:
        raise ToolError("invalid_input", f"{what} has no value of its own; link a node into it")
    cap = SOCKET_CAPS.get((node.bl_idname, socket.identifier))
    value = args["value"]
    if cap is not None and isinstance(value, int | float) and value > cap[0]:
        raise ToolError("invalid_input", f"{what}: at most {cap[0]} ({cap[1]}), got {value!r}")
    previous = exact_json(socket, "default_value")
    key = stable_key(node, socket, output=False)
    set_rna(socket, "default_value", value, what)
    undo = None
    if previous is not UNREPRESENTABLE and key is not None:
        undo = Compensation(
            tool="gn.set_input",
            arguments={**target_args(args), "node_id": node.name, "socket": key, "value": previous},
        )
    return Outcome(
        data={
            "node_id": node.name,
            "socket": socket.identifier,
            "value": rna_json(socket, "default_value"),
        },
        mutated=True,
        message=f"set {what}",
        compensation=undo,
    )


@tool(
    name="gn.set_property",
    touches=Touches(("object",), node_groups=True),
    description=(
        "Set a node property such as data_type, domain, operation or mode; enum values are "
        "checked against what this node accepts (see the node catalog). Changing one may "
        "enable or disable sockets."
    ),
    input_schema=schemas.SET_PROPERTY,
    output_schema=schemas.SET_PROPERTY_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="gn.set_property",
)
def set_property(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    node = require_node(tree, args["node_id"])
    ident = args["property"]
    writable = [i for i, _, _ in node_props(node)]
    if ident not in writable:
        raise ToolError(
            "invalid_input",
            f"{node.bl_idname} {node.name!r} has no settable property {ident!r}; "
            f"properties: {', '.join(writable) or 'none'}",
        )
    previous = exact_json(node, ident)
    links_before = _links_of(tree, node)
    set_rna(node, ident, args["value"], f"{node.name!r}.{ident}")
    # A socket that a new setting removes takes its links with it; the checkpoint has them.
    lost = links_before - _links_of(tree, node)
    undo = None
    if previous is not UNREPRESENTABLE and not lost:
        undo = Compensation(
            tool="gn.set_property",
            arguments={
                **target_args(args),
                "node_id": node.name,
                "property": ident,
                "value": previous,
            },
        )
    return Outcome(
        data={
            "node_id": node.name,
            "property": ident,
            "value": rna_json(node, ident),
            "inputs": [describe(s) for s in node.inputs if s.enabled],
            "outputs": [describe(s) for s in node.outputs if s.enabled],
        },
        mutated=True,
        message=f"set {node.name!r}.{ident}",
        compensation=undo,
    )


def _links_of(tree: bpy.types.NodeTree, node: bpy.types.Node) -> set[tuple[str, ...]]:
    return {
        tuple(link_ref(k).values())
        for k in tree.links
        if node.name in (k.from_node.name, k.to_node.name)
    }


@tool(
    name="gn.cleanup_unused",
    touches=Touches(("object",), node_groups=True),
    description=(
        "Remove every node that does not feed group_output, directly or through other "
        "nodes (Group Input/Output nodes and frames stay). The compensation recreates them."
    ),
    input_schema=schemas.TARGET_ONLY,
    output_schema=answer({"removed": NAMES}),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="gn.restore_node",
)
def cleanup_unused(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    roots = [n for n in tree.nodes if n.bl_idname == "NodeGroupOutput"]
    used: set[str] = set()
    while True:
        used = reachable(tree, roots, forward=False)
        # A zone (repeat, simulation, ...) is one unit: its input stays with its output,
        # and so does what feeds that input.
        zones = [
            n
            for n in tree.nodes
            if n.name not in used
            and getattr(n, "paired_output", None) is not None
            and n.paired_output.name in used
        ]
        if not zones:
            break
        roots += zones
    unused = sorted(
        (
            n
            for n in tree.nodes
            if n.name not in used and n.bl_idname not in (*IO_NODES, "NodeFrame")
        ),
        key=lambda n: n.name,
    )
    if not unused:
        return Outcome(
            data={"removed": []}, mutated=False, compensation=again("gn.cleanup_unused", args)
        )
    patch = removal_patch(tree, unused)
    removed = [n.name for n in unused]
    for node in unused:
        tree.nodes.remove(node)
    return Outcome(
        data={"removed": removed},
        mutated=True,
        message=f"removed {len(removed)} unused nodes from {tree.name!r}",
        compensation=restore(args, patch),
    )
