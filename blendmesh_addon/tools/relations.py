"""Object relation tools' bodies: duplicate, parent, unparent.

Parenting keeps the child where it is in the world: its location, rotation and scale
become relative to the parent (no hidden parent-inverse matrix), so what the snapshot and
the artist read is all there is to the child's placement.
"""

from __future__ import annotations

from typing import Any

import bpy
from mathutils import Matrix

from . import Done, ToolFailure
from .objects import require_free_name, require_object, transform_of

MAX_DEFAULT_SUFFIX = 999  # "Name.001" .. "Name.999", as Blender counts


def _default_copy_name(name: str) -> str:
    for number in range(1, MAX_DEFAULT_SUFFIX + 1):
        candidate = f"{name[:59]}.{number:03d}"
        if bpy.data.objects.get(candidate) is None:
            return candidate
    raise ToolFailure(
        "conflict", f"{name!r}.001 to .{MAX_DEFAULT_SUFFIX} are all taken; give new_name"
    )


def duplicate(args: dict[str, Any]) -> Done:
    """Copy the object (and its data unless linked) into the original's collections."""
    ob = require_object(args["name"])
    new_name = args.get("new_name") or _default_copy_name(ob.name)
    require_free_name(new_name)
    copy = ob.copy()
    copy.name = new_name
    if ob.data is not None and not args.get("linked", False):
        copy.data = ob.data.copy()
        copy.data.name = new_name
    offset = args.get("offset", (0.0, 0.0, 0.0))
    copy.location = [a + b for a, b in zip(ob.location, offset, strict=True)]
    for collection in ob.users_collection:
        collection.objects.link(copy)
    return Done(
        {
            "name": copy.name,
            "source": ob.name,
            "data": copy.data.name if copy.data else None,
            **transform_of(copy),
        },
        f"duplicated {ob.name!r} as {copy.name!r}",
        compensation=("object.delete", {"name": copy.name}),
    )


def _keep_world(ob: Any, parent: Any) -> None:
    # Evaluate first: matrix_world is stale after earlier calls moved things.
    bpy.context.view_layer.update()
    world = ob.matrix_world.copy()
    ob.parent = parent
    ob.matrix_parent_inverse = Matrix.Identity(4)
    ob.matrix_world = world


def _placed(ob: Any) -> dict[str, Any]:
    return {"name": ob.name, "parent": ob.parent.name if ob.parent else None, **transform_of(ob)}


def parent(args: dict[str, Any]) -> Done:
    """Refuse a cycle, then parent keeping the world transform."""
    child = require_object(args["child"])
    new_parent = require_object(args["parent"])
    ancestor = new_parent
    while ancestor is not None:
        if ancestor == child:
            raise ToolFailure(
                "invalid_input",
                f"{new_parent.name!r} cannot be the parent of {child.name!r}: it is "
                f"{'the same object' if new_parent == child else 'one of its descendants'}",
            )
        ancestor = ancestor.parent
    if child.parent == new_parent:
        said = f"{child.name!r} is already a child of {new_parent.name!r}"
        return Done(_placed(child), said, mutated=False)
    _keep_world(child, new_parent)
    return Done(_placed(child), f"{child.name!r} is now a child of {new_parent.name!r}")


def unparent(args: dict[str, Any]) -> Done:
    """Clear the parent keeping the world transform."""
    ob = require_object(args["name"])
    if ob.parent is None:
        return Done(_placed(ob), f"{ob.name!r} has no parent", mutated=False)
    previous = ob.parent.name
    _keep_world(ob, None)
    return Done(_placed(ob), f"{ob.name!r} detached from {previous!r}")
