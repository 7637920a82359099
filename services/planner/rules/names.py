"""Which names an operation of the rules planner touches, refers to and creates.

Touched names order operations (each depends on the latest that touched one of its
names); referred names must exist when the scene is known; created names are what "it"
means next. Collections are touched as ``collection:<name>`` so they never meet objects.
"""

from __future__ import annotations

from typing import Any

from services.planner.rules.geonodes import NODE_TREE, tree_objects

# Args that name an existing object, per tool (object.create and light.create refer to none).
_REFERS: dict[str, tuple[str, ...]] = {
    "object.transform": ("name",),
    "object.rename": ("name",),
    "object.delete": ("name",),
    "object.shade": ("name",),
    "object.visibility": ("name",),
    "object.unparent": ("name",),
    "object.duplicate": ("name",),
    "object.parent": ("child", "parent"),
    "camera.create": ("look_at_object",),
    "camera.set": ("name", "look_at_object"),
    "camera.set_active": ("name",),
    "light.set": ("name",),
    "keyframe.insert": ("name",),
    "modifier.add": ("object",),
    "modifier.set": ("object",),
    "modifier.remove": ("object",),
    "modifier.apply": ("object",),
    "material.assign": ("object",),
    "text.set": ("name",),
    "curve.set": ("name",),
    "curve.to_mesh": ("name",),
    "constraint.track_to": ("object", "target"),
    "constraint.follow_path": ("object", "target"),
    "constraint.copy_location": ("object", "target"),
    "constraint.copy_rotation": ("object", "target"),
    "armature.bind": ("object", "armature"),
    "armature.pose": ("armature",),
}
_CREATES: dict[str, str] = {
    "object.create": "name",
    "camera.create": "name",
    "light.create": "name",
    "object.duplicate": "new_name",
    "object.rename": "new_name",
    "text.create": "name",
    "curve.create": "name",
    "empty.create": "name",
    "armature.create": "name",
}


def referred(tool: str, args: dict[str, Any]) -> list[str]:
    """The existing objects an operation names."""
    if tool == NODE_TREE:
        return tree_objects(args)
    if tool == "collection.move":
        return list(args["objects"])
    return [args[key] for key in _REFERS.get(tool, ()) if key in args]


def created(tool: str, args: dict[str, Any]) -> str | None:
    """The object an operation makes (or renames to), if it names one."""
    key = _CREATES.get(tool)
    return args.get(key) if key is not None else None


def touched(tool: str, args: dict[str, Any]) -> list[str]:
    """Every name an operation touches, for ordering: objects, then collections."""
    names = referred(tool, args)
    made = created(tool, args)
    if made is not None:
        names.append(made)
    if tool == "collection.create":
        names.append(f"collection:{args['name']}")
        if "parent" in args:
            names.append(f"collection:{args['parent']}")
    elif tool == "collection.move":
        names.append(f"collection:{args['collection']}")
    return names
