"""modifier.apply: bake one modifier into its object's mesh and remove it from the stack.

Like Blender's Apply, only that modifier is evaluated on the mesh as it is now, whatever
its place in the stack. It is done with the data API (the other modifiers are switched
off for one evaluation, then the evaluated mesh replaces the object's under the same
name), so it needs no UI context.
"""

from __future__ import annotations

from typing import Any

import bpy

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from .answers import COUNT, STRING, answer
from .modifiers import require_modifier
from .placing import require_kind

# The mesh's vertices and faces with the modifier applied.
APPLIED = answer(
    {"object": STRING, "modifier": STRING, "type": STRING, "vertices": COUNT, "faces": COUNT}
)


def _evaluated_alone(ob: bpy.types.Object, mod: bpy.types.Modifier) -> bpy.types.Mesh:
    """A new mesh: the object's mesh with only ``mod`` applied."""
    shown = {m.name: m.show_viewport for m in ob.modifiers}
    try:
        for other in ob.modifiers:
            other.show_viewport = other == mod
        depsgraph = bpy.context.evaluated_depsgraph_get()
        return bpy.data.meshes.new_from_object(
            ob.evaluated_get(depsgraph), preserve_all_data_layers=True, depsgraph=depsgraph
        )
    finally:
        for other in ob.modifiers:
            other.show_viewport = shown[other.name]


@tool(
    name="modifier.apply",
    touches=Touches(("object",)),
    description=(
        "Apply a modifier of a mesh object: its effect becomes the mesh and the modifier "
        "leaves the stack. Only that modifier is evaluated, on the mesh as it is now. A mesh "
        "shared with other objects or with shape keys cannot be applied to. Undo restores a "
        "checkpoint."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "modifier"],
        "properties": {
            "object": name_schema("Mesh object name."),
            "modifier": name_schema("Name of the modifier to apply."),
        },
    },
    output_schema=APPLIED,
    safety_level="destructive",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def apply(args: dict[str, Any]) -> Outcome:
    """Check the mesh can take it, evaluate the modifier alone, swap the mesh in."""
    ob = require_kind(args["object"], "MESH", "modifier.apply")
    mod = require_modifier(ob, args["modifier"])
    mesh = ob.data
    if mesh.users > 1:
        raise ToolError(
            "invalid_input",
            f"mesh {mesh.name!r} of {ob.name!r} is shared by {mesh.users} users; make a full "
            "copy first (object.duplicate with linked=false) or apply it on every user's own mesh",
        )
    if mesh.shape_keys is not None:
        raise ToolError(
            "invalid_input",
            f"mesh {mesh.name!r} has shape keys, which a modifier cannot be applied to",
        )
    name, kind = mod.name, mod.type
    result = _evaluated_alone(ob, mod)
    mesh_name = mesh.name
    ob.data = result
    bpy.data.meshes.remove(mesh)
    result.name = mesh_name
    ob.modifiers.remove(ob.modifiers[name])
    return Outcome(
        data={
            "object": ob.name,
            "modifier": name,
            "type": kind,
            "vertices": len(result.vertices),
            "faces": len(result.polygons),
        },
        mutated=True,
        message=f"applied {kind} modifier {name!r} to {ob.name!r}",
    )
