"""Object relation tools: duplicate, parent, unparent.

Parenting keeps the child where it is in the world: its location, rotation and scale
become relative to the parent (no hidden parent-inverse matrix), so what the snapshot and
the artist read is all there is to the child's placement.
"""

from __future__ import annotations

from typing import Any

import bpy
from mathutils import Matrix

from contracts.bridge import Compensation

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from .objects import require_free_name, require_object, transform_of
from .placing import location_schema

MAX_DEFAULT_SUFFIX = 999  # "Name.001" .. "Name.999", as Blender counts


def _default_copy_name(name: str) -> str:
    for number in range(1, MAX_DEFAULT_SUFFIX + 1):
        candidate = f"{name[:59]}.{number:03d}"
        if bpy.data.objects.get(candidate) is None:
            return candidate
    raise ToolError(
        "conflict", f"{name!r}.001 to .{MAX_DEFAULT_SUFFIX} are all taken; give new_name"
    )


@tool(
    name="object.duplicate",
    touches=Touches(("name", "new_name", "data")),
    description=(
        "Copy an object (modifiers, materials, parent and collections come along). linked=false "
        "(default) copies its data too; linked=true shares it, so editing the geometry of one "
        "changes both. offset is added to the copy's location. new_name defaults to the first "
        "free '<name>.001', '<name>.002', ...; an existing new_name is a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {
            "name": name_schema("Object to copy."),
            "new_name": name_schema("Name of the copy."),
            "linked": {"type": "boolean", "default": False},
            "offset": location_schema("Added to the copy's location (default 0,0,0)."),
        },
    },
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def duplicate(args: dict[str, Any]) -> Outcome:
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
    return Outcome(
        data={
            "name": copy.name,
            "source": ob.name,
            "data": copy.data.name if copy.data else None,
            **transform_of(copy),
        },
        mutated=True,
        message=f"duplicated {ob.name!r} as {copy.name!r}",
        compensation=Compensation(tool="object.delete", arguments={"name": copy.name}),
    )


def _keep_world(ob: bpy.types.Object, parent: bpy.types.Object | None) -> None:
    # Evaluate first: matrix_world is stale after earlier calls moved things.
    bpy.context.view_layer.update()
    world = ob.matrix_world.copy()
    ob.parent = parent
    ob.matrix_parent_inverse = Matrix.Identity(4)
    ob.matrix_world = world


def _placed(ob: bpy.types.Object) -> dict[str, Any]:
    return {
        "name": ob.name,
        "parent": ob.parent.name if ob.parent else None,
        **transform_of(ob),
    }


@tool(
    name="object.parent",
    touches=Touches(("child", "parent")),
    description=(
        "Make one object the child of another, keeping the child where it is in the world "
        "(its transform becomes relative to the parent). A parent that is the child or one "
        "of its descendants is invalid."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["child", "parent"],
        "properties": {
            "child": name_schema("Object to attach."),
            "parent": name_schema("Object it follows from now on."),
        },
    },
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def parent(args: dict[str, Any]) -> Outcome:
    """Refuse a cycle, then parent keeping the world transform."""
    child = require_object(args["child"])
    new_parent = require_object(args["parent"])
    ancestor = new_parent
    while ancestor is not None:
        if ancestor == child:
            raise ToolError(
                "invalid_input",
                f"{new_parent.name!r} cannot be the parent of {child.name!r}: it is "
                f"{'the same object' if new_parent == child else 'one of its descendants'}",
            )
        ancestor = ancestor.parent
    if child.parent == new_parent:
        return Outcome(
            data=_placed(child),
            mutated=False,
            message=f"{child.name!r} is already a child of {new_parent.name!r}",
        )
    _keep_world(child, new_parent)
    return Outcome(
        data=_placed(child),
        mutated=True,
        message=f"{child.name!r} is now a child of {new_parent.name!r}",
    )


@tool(
    name="object.unparent",
    touches=Touches(("name",)),
    description=(
        "Detach an object from its parent, keeping it where it is in the world. An object "
        "without a parent is left as it is."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {"name": name_schema("Object to detach.")},
    },
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def unparent(args: dict[str, Any]) -> Outcome:
    """Clear the parent keeping the world transform."""
    ob = require_object(args["name"])
    if ob.parent is None:
        return Outcome(data=_placed(ob), mutated=False, message=f"{ob.name!r} has no parent")
    previous = ob.parent.name
    _keep_world(ob, None)
    return Outcome(
        data=_placed(ob), mutated=True, message=f"{ob.name!r} detached from {previous!r}"
    )
