"""shader.set_ramp: a Color Ramp node's stops, set whole, and material.assign_faces: a
material on the faces a rule picks, through the object's slots."""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np

from ...registry import Outcome, ToolError, Touches, name_schema, tool
from ..modelling.common import FACE_RULE, OBJECT, RULE_ARGS, edited, faces_by_rule, require_mesh
from .catalog import require_material, require_shader_node
from .graph import MATERIAL, NODE_ID

MAX_STOPS = 32  # Blender's own limit on a colour ramp's stops
MAX_SLOTS = 255
UNIT = {"type": "number", "minimum": 0, "maximum": 1}


@tool(
    name="shader.set_ramp",
    touches=Touches(("material",)),
    description=(
        f"Set the stops of a Color Ramp node (ShaderNodeValToRGB): 1..{MAX_STOPS} stops, each a "
        "position 0..1 and an RGBA colour, and the interpolation. Replaces the stops it had."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["material", "node_id", "stops"],
        "properties": {
            "material": MATERIAL,
            "node_id": NODE_ID,
            "stops": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_STOPS,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["position", "color"],
                    "properties": {
                        "position": UNIT,
                        "color": {"type": "array", "items": UNIT, "minItems": 4, "maxItems": 4},
                    },
                },
            },
            "interpolation": {
                "enum": ["LINEAR", "EASE", "CARDINAL", "B_SPLINE", "CONSTANT"],
                "default": "LINEAR",
            },
        },
    },
    output_schema={
        "type": "object",
        "required": ["material", "node_id", "stops"],
        "properties": {
            "material": {"type": "string"},
            "node_id": {"type": "string"},
            "stops": {"type": "integer", "minimum": 1},
        },
    },
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_ramp(args: dict[str, Any]) -> Outcome:
    mat = require_material(args["material"])
    node = require_shader_node(mat, args["node_id"])
    if node.bl_idname != "ShaderNodeValToRGB":
        raise ToolError(
            "invalid_input", f"node {node.name!r} is a {node.bl_idname}, not a ShaderNodeValToRGB"
        )
    ramp = node.color_ramp
    stops = sorted(args["stops"], key=lambda s: s["position"])
    elements = ramp.elements
    while len(elements) > 1:
        elements.remove(elements[-1])
    elements[0].position = stops[0]["position"]
    elements[0].color = stops[0]["color"]
    for stop in stops[1:]:
        added = elements.new(stop["position"])
        added.color = stop["color"]
    ramp.interpolation = args.get("interpolation", "LINEAR")
    return Outcome(
        data={"material": mat.name, "node_id": node.name, "stops": len(elements)},
        mutated=True,
        message=f"set {len(elements)} stops of {node.name!r} in {mat.name!r}",
    )


@tool(
    name="material.assign_faces",
    touches=Touches(("object", "material")),
    description=(
        "Put a material on the faces of a mesh object a rule picks (all, facing an axis, a "
        "material slot, a vertex group), through the slot holding it (a new slot when the "
        "object has none with it). Undo restores a checkpoint."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "material"],
        "properties": {
            "object": OBJECT,
            "material": name_schema("An existing material (shader.create or material.assign)."),
            "rule": FACE_RULE,
            **RULE_ARGS,
        },
    },
    output_schema={
        "type": "object",
        "required": ["object", "material", "slot", "faces"],
        "properties": {
            "object": {"type": "string"},
            "material": {"type": "string"},
            "slot": {"type": "integer", "minimum": 0},
            "faces": {"type": "integer", "minimum": 0},
        },
    },
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def assign_faces(args: dict[str, Any]) -> Outcome:
    ob = require_mesh(args["object"], "material.assign_faces")
    mat = bpy.data.materials.get(args["material"])
    if mat is None:
        raise ToolError(
            "not_found", f"material {args['material']!r} does not exist; create it first"
        )
    with edited(ob) as bm:  # the rule is checked before any slot is added
        picked = [f.index for f in faces_by_rule(ob, bm, args)]
    slots = [s.material for s in ob.material_slots]
    if mat not in slots:
        if len(slots) >= MAX_SLOTS:
            raise ToolError(
                "invalid_input", f"{ob.name!r} has {MAX_SLOTS} material slots, the most"
            )
        ob.data.materials.append(mat)
        slots.append(mat)
    slot = slots.index(mat)
    index = np.zeros(len(ob.data.polygons), dtype=np.int32)
    ob.data.polygons.foreach_get("material_index", index)
    index[picked] = slot
    ob.data.polygons.foreach_set("material_index", index)
    ob.data.update()
    return Outcome(
        data={"object": ob.name, "material": mat.name, "slot": slot, "faces": len(picked)},
        mutated=True,
        message=f"put {mat.name!r} on {len(picked)} faces of {ob.name!r} (slot {slot})",
    )
