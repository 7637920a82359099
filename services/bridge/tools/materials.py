"""Material tool: create or update a Principled BSDF material on an object.

Its body is in ``blendmesh_addon.tools.materials``, which the add-on also replays in an
artist's session; here it is registered with its schema.
"""

from __future__ import annotations

from typing import Any

import bpy

from blendmesh_addon.tools import materials as body
from services.bridge.scene.fingerprint import material_values

from ..registry import Outcome, Touches, name_schema, outcome, tool
from .answers import BOOLEAN, NUMBER, RGBA, STRING, answer

MATERIAL_ANSWER = answer(
    {
        "object": STRING,
        "material": STRING,
        "created": BOOLEAN,
        "base_color": RGBA,
        "metallic": NUMBER,
        "roughness": NUMBER,
    }
)

UNIT: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}


@tool(
    name="material.assign",
    touches=Touches(("object", "material")),
    description=(
        "Create or update a Principled BSDF material and put it in the object's first "
        "material slot. Colors are linear RGB(A) in 0..1."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object"],
        "properties": {
            "object": name_schema("Object name."),
            "material": name_schema(
                "Material name; defaults to '<object>_Material'. Reused if it exists."
            ),
            "base_color": {
                "type": "array",
                "items": UNIT,
                "minItems": 3,
                "maxItems": 4,
                "description": "RGB or RGBA, each 0..1.",
            },
            "metallic": {**UNIT, "description": "0..1"},
            "roughness": {**UNIT, "description": "0..1"},
        },
    },
    output_schema=MATERIAL_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def assign(args: dict[str, Any]) -> Outcome:
    """Set BSDF inputs (and the viewport display values, so solid mode matches)."""
    done = body.assign(args)
    values = material_values(bpy.data.materials[done.data["material"]])
    values["material"] = values.pop("name")
    return outcome(done, **values)
