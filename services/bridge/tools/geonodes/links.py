"""Links of a Geometry Nodes group: link and unlink, refusing what Blender would not run."""

from __future__ import annotations

from typing import Any

import bpy

from contracts.bridge import Compensation
from services.bridge.nodes.node_state import add_link, input_order, link_ref, reachable
from services.bridge.nodes.nodes import (
    describe,
    find_socket,
    require_node,
    require_tree,
    stable_key,
)

from ...registry import Outcome, ToolError, Touches, tool
from . import schemas
from .common import again, restore, target_args


def _ends(
    tree: bpy.types.NodeTree, args: dict[str, Any]
) -> tuple[bpy.types.Node, bpy.types.NodeSocket, bpy.types.Node, bpy.types.NodeSocket]:
    source = require_node(tree, args["from_node"])
    target = require_node(tree, args["to_node"])
    return (
        source,
        find_socket(source, args["from_socket"], output=True),
        target,
        find_socket(target, args["to_socket"], output=False),
    )


def _between(out: bpy.types.NodeSocket, into: bpy.types.NodeSocket) -> bpy.types.NodeLink | None:
    return next((k for k in into.links if k.from_socket == out), None)


def _link_args(
    args: dict[str, Any],
    source: bpy.types.Node,
    out: bpy.types.NodeSocket,
    target: bpy.types.Node,
    into: bpy.types.NodeSocket,
) -> dict[str, Any] | None:
    """The link's arguments by socket identifier, or None when an identifier would resolve
    to another socket."""
    out_key, in_key = stable_key(source, out, output=True), stable_key(target, into, output=False)
    if out_key is None or in_key is None:
        return None
    return {
        **target_args(args),
        "from_node": source.name,
        "from_socket": out_key,
        "to_node": target.name,
        "to_socket": in_key,
    }


@tool(
    name="gn.link",
    touches=Touches(("object",), node_groups=True),
    description=(
        "Link an output socket of one node to an input socket of another (sockets by name or "
        "identifier). Linking into an input that takes one link replaces its link. A link "
        "Blender marks invalid (types it cannot convert, a field into a single value) or one "
        "that would close a cycle is refused and leaves the group as it was."
    ),
    input_schema=schemas.LINK,
    output_schema=schemas.LINKED,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="gn.unlink",
)
def link(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    source, out, target, into = _ends(tree, args)
    for socket, node in ((out, source), (into, target)):
        if not socket.enabled:
            raise ToolError(
                "invalid_input",
                f"socket {describe(socket)} of {node.name!r} is unavailable with the node's "
                "current settings (see gn.set_property)",
            )
    data = {
        "from_node": source.name,
        "from_socket": out.identifier,
        "to_node": target.name,
        "to_socket": into.identifier,
    }
    if _between(out, into) is not None:
        return Outcome(data=data, mutated=False, compensation=again("gn.link", args))
    if source.name in reachable(tree, [target], forward=True):
        raise ToolError(
            "invalid_input",
            f"linking {source.name!r} into {target.name!r} would close a cycle",
        )
    replaced = None if into.is_multi_input else next(iter(into.links), None)
    replaced_ref = None if replaced is None else link_ref(replaced)
    new = tree.links.new(out, into)
    if not new.is_valid:
        tree.links.remove(new)
        if replaced_ref is not None:
            add_link(tree, replaced_ref)
        raise ToolError(
            "invalid_input",
            f"Blender refuses the link from {describe(out)} of {source.name!r} to "
            f"{describe(into)} of {target.name!r}: it cannot convert {out.type} to "
            f"{into.type} here (or a field would reach an input that takes a single value)",
        )
    undo: Compensation | None
    if replaced_ref is not None:
        patch = {"unlink": [link_ref(new)], "links": [replaced_ref]}
        undo = restore(args, patch)
        data["replaced"] = replaced_ref
    else:
        inverse = _link_args(args, source, out, target, into)
        undo = None if inverse is None else Compensation(tool="gn.unlink", arguments=inverse)
    return Outcome(
        data=data,
        mutated=True,
        message=f"linked {source.name!r}.{out.name} -> {target.name!r}.{into.name}",
        compensation=undo,
    )


@tool(
    name="gn.unlink",
    touches=Touches(("object",), node_groups=True),
    description="Remove the link between two sockets (named as for gn.link).",
    input_schema=schemas.LINK,
    output_schema=schemas.LINK_REF,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="gn.link",
)
def unlink(args: dict[str, Any]) -> Outcome:
    _, _, tree = require_tree(args["object"], args["modifier"])
    source, out, target, into = _ends(tree, args)
    found = _between(out, into)
    if found is None:
        raise ToolError(
            "not_found",
            f"no link from {describe(out)} of {source.name!r} to {describe(into)} of "
            f"{target.name!r}",
        )
    ref = link_ref(found)
    order = input_order(into) if into.is_multi_input else None
    last = order is None or order["from"][-1] == [source.name, out.identifier]
    inverse = _link_args(args, source, out, target, into)
    tree.links.remove(found)
    undo: Compensation | None
    if inverse is not None and last and not ref.get("muted"):
        undo = Compensation(tool="gn.link", arguments=inverse)
    else:
        patch: dict[str, Any] = {"links": [ref]}
        if order is not None:
            patch["order"] = [order]
        undo = restore(args, patch)
    return Outcome(data=ref, mutated=True, message="unlinked", compensation=undo)
