"""Collection tools: collection.create, collection.move.

Collections are named by name; the scene's own top collection is named by its name too
("Scene Collection"), so objects can be moved back to the top.
"""

from __future__ import annotations

from typing import Any

import bpy

from services.bridge.scene.scene_state import scene_collections

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from .answers import NAMES, STRING, answer
from .objects import require_object

MAX_MOVED = 100


def require_collection(name: str) -> bpy.types.Collection:
    """A collection of the scene (or the scene collection itself) by name, or not_found."""
    scene = bpy.context.scene
    if name == scene.collection.name:
        return scene.collection
    found = next((c for c in scene_collections(scene) if c.name == name), None)
    if found is None:
        known = [c.name for c in scene_collections(scene)][:30]
        raise ToolError(
            "not_found",
            f"the scene has no collection {name!r}; collections: "
            f"{', '.join([scene.collection.name, *known])}",
        )
    return found


@tool(
    name="collection.create",
    touches=Touches(("name", "parent")),
    description=(
        "Create an empty collection inside parent (default: the scene collection). An "
        "existing collection name is a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {
            "name": name_schema("New collection name."),
            "parent": name_schema("Collection to nest it in (default 'Scene Collection')."),
        },
    },
    output_schema=answer({"name": STRING, "parent": STRING}),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def create(args: dict[str, Any]) -> Outcome:
    """Check the name and the parent, then create and link."""
    name = args["name"]
    scene = bpy.context.scene
    if len(name.encode("utf-8")) > 63:
        raise ToolError("invalid_input", f"name {name!r} is longer than 63 bytes")
    if name == scene.collection.name or bpy.data.collections.get(name) is not None:
        raise ToolError("conflict", f"a collection named {name!r} already exists")
    parent = require_collection(args.get("parent", scene.collection.name))
    collection = bpy.data.collections.new(name)
    parent.children.link(collection)
    return Outcome(
        data={"name": collection.name, "parent": parent.name},
        mutated=True,
        message=f"created collection {collection.name!r} in {parent.name!r}",
    )


@tool(
    name="collection.move",
    touches=Touches(("objects", "moved", "collection")),
    description=(
        f"Move objects (1..{MAX_MOVED}) into a collection: each is linked to it and unlinked "
        "from every other collection. Name 'Scene Collection' to move them back to the top."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["objects", "collection"],
        "properties": {
            "objects": {
                "type": "array",
                "items": name_schema("Object name."),
                "minItems": 1,
                "maxItems": MAX_MOVED,
                "uniqueItems": True,
            },
            "collection": name_schema("Target collection name."),
        },
    },
    output_schema=answer({"collection": STRING, "moved": {**NAMES, "maxItems": MAX_MOVED}}),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def move(args: dict[str, Any]) -> Outcome:
    """Check every object and the target, then relink; objects already there are kept."""
    missing = [n for n in args["objects"] if bpy.data.objects.get(n) is None]
    if missing:
        raise ToolError("not_found", f"objects do not exist: {', '.join(map(repr, missing))}")
    target = require_collection(args["collection"])
    moved = []
    for name in args["objects"]:
        ob = require_object(name)
        if list(ob.users_collection) == [target]:
            continue
        if target not in ob.users_collection:
            target.objects.link(ob)
        for other in list(ob.users_collection):
            if other != target:
                other.objects.unlink(ob)
        moved.append(ob.name)
    return Outcome(
        data={"collection": target.name, "moved": moved},
        mutated=bool(moved),
        message=f"moved {len(moved)} objects into {target.name!r}",
    )
