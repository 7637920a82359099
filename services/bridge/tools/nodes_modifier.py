"""Which node group a NODES modifier added by ``modifier.add`` evaluates.

An existing Geometry Nodes group named by ``node_group`` (or by the ``node_group``
property, as ``modifier.remove``'s inverse gives it), else a new pass-through group
(Group Input's Geometry linked to Group Output's) named after the modifier, built by the
same helper as ``gn.ensure_target``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy

from ..registry import ToolError
from .geonodes.common import GN_TREE
from .geonodes.target import group_name_for, new_group


@dataclass(frozen=True)
class GroupChoice:
    """The group to attach: an existing one, a new one to create, or none (null)."""

    existing: bpy.types.NodeTree | None = None
    create: str | None = None


def choose(args: dict[str, Any], modifier: str) -> GroupChoice:
    """Check the node_group arguments of ``modifier.add`` before anything is written."""
    properties = args.get("properties", {})
    if args["type"] != "NODES":
        if "node_group" in args:
            raise ToolError(
                "invalid_input", f"node_group is for type NODES only, not {args['type']}"
            )
        return GroupChoice()
    wanted = args.get("node_group")
    if "node_group" in properties:
        named = properties["node_group"]
        if wanted is not None and named != wanted:
            raise ToolError(
                "invalid_input",
                f"node_group {wanted!r} and properties.node_group {named!r} differ; give one",
            )
        if named is None:
            return GroupChoice()
        if not isinstance(named, str):
            raise ToolError(
                "invalid_input", f"properties.node_group must be a node group name, got {named!r}"
            )
        wanted = named
    if wanted is None:
        name = group_name_for(modifier)
        if bpy.data.node_groups.get(name) is not None:
            raise ToolError(
                "conflict",
                f"a node group named {name!r} already exists; pass node_group={name!r} to use "
                "it, or name the modifier differently",
            )
        return GroupChoice(create=name)
    group = bpy.data.node_groups.get(wanted)
    if group is None:
        raise ToolError(
            "not_found",
            f"node group {wanted!r} does not exist; leave node_group out to create a new one",
        )
    if group.bl_idname != GN_TREE:
        raise ToolError(
            "invalid_input", f"node group {wanted!r} is a {group.bl_idname}, not {GN_TREE}"
        )
    return GroupChoice(existing=group)


def attach(mod: bpy.types.Modifier, choice: GroupChoice) -> bool:
    """Give the new modifier its group; True when the group was created for it."""
    if choice.existing is not None:
        mod.node_group = choice.existing
        return False
    if choice.create is not None:
        mod.node_group = new_group(choice.create)
        return True
    return False
