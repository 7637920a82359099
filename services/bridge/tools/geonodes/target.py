"""The modifier, its node group, and the group's input/output nodes and interface."""

from __future__ import annotations

from typing import Any

import bpy

from contracts.bridge import Compensation
from services.bridge.nodes.node_state import link_ref, removal_patch
from services.bridge.nodes.nodes import IO_NODES, require_nodes_modifier, require_tree

from ...registry import Outcome, ToolError, Touches, tool
from ..objects import require_object
from . import schemas
from .common import GN_TREE, again, restore, target_args


def group_name_for(modifier: str) -> str:
    """The name a new node group gets after the modifier that evaluates it."""
    return f"{modifier[:57]}_Group"


def new_group(name: str) -> bpy.types.NodeTree:
    """A group that passes its geometry through: Geometry in, Geometry out, linked."""
    group = bpy.data.node_groups.new(name, GN_TREE)
    group.is_modifier = True
    for in_out in ("INPUT", "OUTPUT"):
        group.interface.new_socket("Geometry", in_out=in_out, socket_type="NodeSocketGeometry")
    group_in = _io_node(group, "NodeGroupInput", (-300.0, 0.0))
    group_out = _io_node(group, "NodeGroupOutput", (300.0, 0.0))
    group.links.new(group_in.outputs[0], group_out.inputs[0])
    return group


def _io_node(
    group: bpy.types.NodeTree, bl_idname: str, location: tuple[float, float]
) -> bpy.types.Node:
    node = group.nodes.new(bl_idname)
    node.name = node.label = IO_NODES[bl_idname]
    node.location = location
    return node


@tool(
    name="gn.ensure_target",
    touches=Touches(("object", "node_group"), node_groups=True),
    description=(
        "Make sure an object has a Geometry Nodes modifier with a node group to edit. A "
        "missing modifier is created only with allow_create_modifier=true. A modifier without "
        "a group gets the group named node_group when one exists, else a new group (default "
        "name '<modifier>_Group') with a Geometry input and output and the nodes group_input "
        "and group_output linked. A modifier that already has a group keeps it; naming a "
        "different node_group is a conflict."
    ),
    input_schema=schemas.ENSURE_TARGET,
    output_schema=schemas.TARGET_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="gn.remove_target",
)
def ensure_target(args: dict[str, Any]) -> Outcome:
    ob = require_object(args["object"])
    name, wanted = args["modifier"], args.get("node_group")
    mod = ob.modifiers.get(name)
    if mod is None and not args.get("allow_create_modifier", False):
        require_nodes_modifier(ob, name)  # raises, saying how to allow creating it
    if mod is not None:
        mod = require_nodes_modifier(ob, name)
        current = mod.node_group
        if current is not None and wanted is not None and current.name != wanted:
            raise ToolError(
                "conflict",
                f"modifier {name!r} of {ob.name!r} evaluates node group {current.name!r}, not "
                f"{wanted!r}; leave node_group out to edit {current.name!r}",
            )
    existing = bpy.data.node_groups.get(wanted) if wanted is not None else None
    if existing is not None and existing.bl_idname != GN_TREE:
        raise ToolError("conflict", f"node group {wanted!r} is a {existing.bl_idname}")
    created_mod = created_group = False
    if mod is None:
        mod = ob.modifiers.new(name=name, type="NODES")
        if mod is None:
            raise ToolError(
                "invalid_input", f"object {ob.name!r} of type {ob.type} cannot hold Geometry Nodes"
            )
        created_mod = True
    assigned = mod.node_group is None
    if assigned:
        group = existing
        if group is None:
            group = new_group(wanted or group_name_for(name))
            created_group = True
        mod.node_group = group
    data = {
        "object": ob.name,
        "modifier": mod.name,
        "node_group": mod.node_group.name,
        "created_modifier": created_mod,
        "created_node_group": created_group,
    }
    if not (created_mod or assigned):
        return Outcome(data=data, mutated=False, compensation=again("gn.ensure_target", args))
    inverse = {
        "object": ob.name,
        "modifier": mod.name,
        "remove_modifier": created_mod,
        "delete_node_group": created_group,
    }
    return Outcome(
        data=data,
        mutated=True,
        message=f"{ob.name!r}/{mod.name!r} evaluates node group {mod.node_group.name!r}",
        compensation=Compensation(tool="gn.remove_target", arguments=inverse),
    )


@tool(
    name="gn.remove_target",
    touches=Touches(("object",), node_groups=True),
    description=(
        "The inverse of gn.ensure_target: detach the node group from a Geometry Nodes "
        "modifier, delete the group when delete_node_group and nothing else uses it, and "
        "remove the modifier when remove_modifier."
    ),
    input_schema=schemas.REMOVE_TARGET,
    output_schema=schemas.REMOVED_TARGET,
    safety_level="destructive",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def remove_target(args: dict[str, Any]) -> Outcome:
    ob = require_object(args["object"])
    mod = require_nodes_modifier(ob, args["modifier"])
    group = mod.node_group
    mod.node_group = None
    deleted = False
    if group is not None and args.get("delete_node_group", False) and group.users == 0:
        bpy.data.node_groups.remove(group)
        deleted = True
    if args.get("remove_modifier", False):
        ob.modifiers.remove(mod)
    return Outcome(
        data={"object": ob.name, "deleted_node_group": deleted},
        mutated=True,
        message=f"detached the node group of {ob.name!r}/{args['modifier']!r}",
    )


def _kept(tree: bpy.types.NodeTree, bl_idname: str) -> bpy.types.Node | None:
    """Which Group Input/Output stays: the one with the expected name, else the active
    output, else the first by name."""
    found = sorted((n for n in tree.nodes if n.bl_idname == bl_idname), key=lambda n: n.name)
    named = [n for n in found if n.name == IO_NODES[bl_idname]]
    active = [n for n in found if getattr(n, "is_active_output", False)]
    return next(iter(named + active + found), None)


def _reroute(
    tree: bpy.types.NodeTree, extra: list[bpy.types.Node], keep: bpy.types.Node | None
) -> list[dict[str, Any]]:
    """Move the links of duplicate Group Inputs onto the one kept; returns the new links."""
    if keep is None:
        return []
    moved = []
    names = {n.name for n in extra if n.bl_idname == "NodeGroupInput"}
    for link in [k for k in tree.links if k.from_node.name in names]:
        source = next(
            (s for s in keep.outputs if s.identifier == link.from_socket.identifier), None
        )
        target = link.to_socket
        if source is None or any(k.from_socket == source for k in target.links):
            continue
        moved.append(link_ref(tree.links.new(source, target)))
    return moved


@tool(
    name="gn.ensure_group_io",
    touches=Touches(("object",), node_groups=True),
    description=(
        "Leave exactly one Group Input node named group_input and one Group Output node named "
        "group_output: a missing one is created, a differently named one renamed, duplicates "
        "removed (the links of a duplicate Group Input move to the one kept; of several Group "
        "Outputs the active one is kept)."
    ),
    input_schema=schemas.TARGET_ONLY,
    output_schema=schemas.GROUP_IO_NODES,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="gn.restore_node",
)
def ensure_group_io(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    for bl_idname, name in IO_NODES.items():
        holder = tree.nodes.get(name)
        if holder is not None and holder.bl_idname != bl_idname:
            raise ToolError("conflict", f"node {name!r} is a {holder.bl_idname}, not {bl_idname}")
    kept = {bl_idname: _kept(tree, bl_idname) for bl_idname in IO_NODES}
    extra = sorted(
        (n for n in tree.nodes if n.bl_idname in IO_NODES and n != kept[n.bl_idname]),
        key=lambda n: n.name,
    )
    renamed = [n for n in kept.values() if n is not None and n.name != IO_NODES[n.bl_idname]]
    missing = [bl_idname for bl_idname, node in kept.items() if node is None]
    if not (extra or renamed or missing):
        data: dict[str, Any] = {"removed": [], "renamed": [], "created": []}
        return Outcome(data=data, mutated=False, compensation=again("gn.ensure_group_io", args))
    undo = removal_patch(tree, extra) if extra else {}
    removed = [n.name for n in extra]
    rename_back = [
        {"node_id": IO_NODES[n.bl_idname], "name": n.name, "label": n.label} for n in renamed
    ]
    old_names = [n.name for n in renamed]
    rerouted = _reroute(tree, extra, kept["NodeGroupInput"])
    for node in extra:
        tree.nodes.remove(node)
    for node in renamed:
        node.name = node.label = IO_NODES[node.bl_idname]
    if kept["NodeGroupOutput"] is not None:
        kept["NodeGroupOutput"].is_active_output = True
    created = [
        _io_node(tree, b, (-300.0, 0.0) if b == "NodeGroupInput" else (300.0, 0.0)).name
        for b in missing
    ]
    if undo is not None:
        undo = {**undo, "unlink": rerouted, "remove": created, "rename": rename_back}
    return Outcome(
        data={"removed": removed, "renamed": old_names, "created": created},
        mutated=True,
        message=f"group_input and group_output of {tree.name!r} are unique",
        compensation=restore(args, undo),
    )


@tool(
    name="gn.set_group_io",
    touches=Touches(("object",), node_groups=True),
    description=(
        "Make sure the node group's interface has an input or output socket of this name and "
        "type (a new one appears on group_input/group_output and, for inputs, on the "
        "modifier). The same name with another type is a conflict."
    ),
    input_schema=schemas.SET_GROUP_IO,
    output_schema=schemas.GROUP_IO_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="gn.remove_group_io",
)
def set_group_io(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    in_out, name, socket_type = args["in_out"], args["name"], args["socket_type"]
    item = _interface_socket(tree, in_out, name)
    data = {"in_out": in_out, "name": name, "socket_type": socket_type}
    if item is not None:
        if item.socket_type != socket_type:
            raise ToolError(
                "conflict",
                f"node group {tree.name!r} already has the {in_out.lower()} {name!r} as a "
                f"{item.socket_type}; choose another name",
            )
        return Outcome(data=data, mutated=False, compensation=again("gn.set_group_io", args))
    try:
        tree.interface.new_socket(name, in_out=in_out, socket_type=socket_type)
    except (TypeError, RuntimeError) as err:
        raise ToolError("invalid_input", f"cannot add a {socket_type} socket: {err}") from None
    inverse = {**target_args(args), "in_out": in_out, "name": name}
    return Outcome(
        data=data,
        mutated=True,
        message=f"added the {in_out.lower()} {name!r} ({socket_type}) to {tree.name!r}",
        compensation=Compensation(tool="gn.remove_group_io", arguments=inverse),
    )


def _interface_socket(tree: bpy.types.NodeTree, in_out: str, name: str) -> Any:
    return next(
        (
            i
            for i in tree.interface.items_tree
            if i.item_type == "SOCKET" and i.in_out == in_out and i.name == name
        ),
        None,
    )


@tool(
    name="gn.remove_group_io",
    touches=Touches(("object",), node_groups=True),
    description=(
        "The inverse of gn.set_group_io: remove an input or output socket from the node "
        "group's interface, with the links to it."
    ),
    input_schema=schemas.REMOVE_GROUP_IO,
    output_schema=schemas.GROUP_IO_ANSWER,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="gn.set_group_io",
)
def remove_group_io(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    in_out, name = args["in_out"], args["name"]
    item = _interface_socket(tree, in_out, name)
    if item is None:
        raise ToolError("not_found", f"node group {tree.name!r} has no {in_out.lower()} {name!r}")
    socket_type = item.socket_type
    tree.interface.remove(item)
    inverse = {**target_args(args), "in_out": in_out, "name": name, "socket_type": socket_type}
    return Outcome(
        data={"in_out": in_out, "name": name, "socket_type": socket_type},
        mutated=True,
        compensation=Compensation(tool="gn.set_group_io", arguments=inverse),
    )
