"""Object tools: create, transform, rename, delete.

Their bodies are in ``blendmesh_addon.tools.objects``, which the add-on also replays in an
artist's session; here they are registered with their schemas and limits.
"""

from __future__ import annotations

from typing import Any

from blendmesh_addon.tools import objects as body
from blendmesh_addon.tools import primitives
from blendmesh_addon.tools.objects import (
    OWNED_DATA,
    require_free_name,
    require_object,
    transform_of,
)

from ..registry import Outcome, Touches, name_schema, outcome, tool, vec3
from .answers import BOOLEAN, PLACED, STRING, answer

ROTATION_DOC = "Euler XYZ rotation in DEGREES."
# A mesh 10 km across: beyond it float precision makes a scene's details jitter.
MAX_DIMENSION = 10_000
# The lookups every other tool module uses, from the shared bodies.
__all__ = ["OWNED_DATA", "ROTATION_DOC", "require_free_name", "require_object", "transform_of"]


@tool(
    name="object.create",
    touches=Touches(("name",)),
    description=(
        "Create a mesh primitive object linked to the scene collection. Default sizes match "
        "Blender's Add menu (cube 2, spheres radius 1, plane 2, torus 1/0.25); dimensions "
        "builds the mesh at that size instead, with scale 1, as Blender's Add panel does "
        "(use it, not scale, for a size: modifiers then measure in scene units). An "
        "existing name is a conflict. " + ROTATION_DOC
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["primitive"],
        "properties": {
            "primitive": {"enum": sorted(primitives.BUILDERS)},
            "name": name_schema(
                "Object (and mesh) name; defaults to Blender's name for the primitive."
            ),
            "location": vec3("Location in scene units (default 0,0,0)."),
            "rotation": vec3(ROTATION_DOC + " Default 0,0,0."),
            "scale": vec3("Scale factors (default 1,1,1)."),
            "dimensions": {
                **vec3(
                    "Size of the mesh along x, y, z in scene units at scale 1 (a plane's z "
                    "is 0). Default: Blender's Add-menu size."
                ),
                "items": {"type": "number", "minimum": 0, "maximum": MAX_DIMENSION},
            },
        },
    },
    output_schema=PLACED,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def create(args: dict[str, Any]) -> Outcome:
    """Build the primitive with bmesh and link a new object to the scene."""
    return outcome(body.create(args))


@tool(
    name="object.transform",
    touches=Touches(("name",)),
    description=(
        "Set (mode=absolute) or offset (mode=relative) an object's location, rotation and/or "
        "scale. Relative: location and rotation add, scale multiplies. " + ROTATION_DOC
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "anyOf": [{"required": ["location"]}, {"required": ["rotation"]}, {"required": ["scale"]}],
        "properties": {
            "name": name_schema("Object name."),
            "location": vec3("Location (absolute) or offset (relative)."),
            "rotation": vec3(ROTATION_DOC),
            "scale": vec3("Scale (absolute) or factors (relative)."),
            "mode": {"enum": ["absolute", "relative"], "default": "absolute"},
        },
    },
    output_schema=PLACED,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="object.transform",
)
def transform(args: dict[str, Any]) -> Outcome:
    """Apply the transform; the compensation restores the previous absolute values."""
    return outcome(body.transform(args))


@tool(
    name="object.rename",
    touches=Touches(("name", "new_name", "previous_name")),
    description=(
        "Rename an object. Its mesh data is renamed along with it when it was named like the "
        "object and has no other users. An existing target name is a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "new_name"],
        "properties": {
            "name": name_schema("Current object name."),
            "new_name": name_schema("New object name."),
        },
    },
    output_schema=answer({"name": STRING, "previous_name": STRING}),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.rename",
)
def rename(args: dict[str, Any]) -> Outcome:
    """Rename without Blender's silent '.001' suffixing."""
    return outcome(body.rename(args))


@tool(
    name="object.delete",
    touches=Touches(("name",)),
    description=(
        "Delete an object; its mesh, camera or light datablock is removed too when nothing "
        "else uses it."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {"name": name_schema("Object name.")},
    },
    output_schema=answer({"name": STRING, "removed_data": BOOLEAN}),
    safety_level="destructive",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def delete(args: dict[str, Any]) -> Outcome:
    """Remove the object and its orphaned data; undo is only possible via checkpoint."""
    return outcome(body.delete(args))
