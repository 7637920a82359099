"""Modifier tools: add, set, remove.

Property values arrive as JSON and are checked against the modifier's RNA
definition (type, array length, hard range, enum items) before being set,
because Blender silently clamps out-of-range numbers.
"""

from __future__ import annotations

from typing import Any

import bpy

from contracts.bridge import Compensation
from services.bridge.budget import bounded
from services.bridge.budget.caps import capped_properties
from services.bridge.nodes.nodes import id_target, scalar
from services.bridge.scene.fingerprint import json_value, modifier_props

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from . import nodes_modifier
from .answers import STRING, answer
from .objects import require_object

# Property values by RNA identifier, read back as canonical JSON (``json_value``).
_VALUES: dict[str, Any] = {"type": "object", "propertyNames": {"maxLength": 63}}
MODIFIER_ANSWER = answer({"object": STRING, "name": STRING, "type": STRING, "properties": _VALUES})
MODIFIER_SET_ANSWER = answer({"object": STRING, "name": STRING, "properties": _VALUES})

# Blender's own default names for the supported modifier types.
FRIENDLY_NAMES: dict[str, str] = {
    "BEVEL": "Bevel", "SUBSURF": "Subdivision", "ARRAY": "Array", "MIRROR": "Mirror",
    "SOLIDIFY": "Solidify", "WIREFRAME": "Wireframe", "DECIMATE": "Decimate",
    "DISPLACE": "Displace", "SMOOTH": "Smooth", "TRIANGULATE": "Triangulate", "WELD": "Weld",
    "SCREW": "Screw", "REMESH": "Remesh", "CAST": "Cast", "SIMPLE_DEFORM": "SimpleDeform",
    "WAVE": "Wave", "EDGE_SPLIT": "EdgeSplit", "WEIGHTED_NORMAL": "WeightedNormal",
    "BOOLEAN": "Boolean", "NODES": "GeometryNodes",
}  # fmt: skip
PROPERTIES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "RNA property name -> value. Arrays as lists, enum flags as lists of identifiers, "
        "pointers (e.g. mirror_object, object) as the target's name or null. Properties "
        "that multiply geometry are capped (see their maximum), and what the whole stack "
        "would make is held to a budget of vertices and copies per object and per scene."
    ),
    "properties": capped_properties(),
}


def require_modifier(ob: bpy.types.Object, name: str) -> bpy.types.Modifier:
    """Find a modifier by name on an object or fail with ``not_found``."""
    mod = ob.modifiers.get(name)
    if mod is None:
        raise ToolError("not_found", f"object {ob.name!r} has no modifier {name!r}")
    return mod


def writable(mod: bpy.types.Modifier) -> dict[str, tuple[str, bool]]:
    """Writable property name -> (rna type, is_array)."""
    return {ident: (rna_type, is_array) for ident, rna_type, is_array in modifier_props(mod)}


def current_values(mod: bpy.types.Modifier, names: list[str] | None = None) -> dict[str, Any]:
    """JSON values of the given (default: all writable) properties."""
    props = writable(mod)
    idents = list(props) if names is None else names
    return {i: json_value(getattr(mod, i), *props[i]) for i in idents}


def _bad(mod: bpy.types.Modifier, ident: str, why: str, mutated: bool) -> ToolError:
    return ToolError("invalid_input", f"{mod.type} property {ident!r}: {why}", mutated)


def coerce(mod: bpy.types.Modifier, ident: str, value: Any, mutated: bool = False) -> Any:
    """Turn a JSON value into what ``setattr(mod, ident, ...)`` needs, or raise invalid_input."""
    props = writable(mod)
    if ident not in props:
        valid = ", ".join(sorted(props))
        raise _bad(mod, ident, f"unknown or read-only; writable properties: {valid}", mutated)
    prop = mod.bl_rna.properties[ident]
    try:
        if prop.type == "POINTER":
            return id_target(prop, value)
        if props[ident][1]:
            if not isinstance(value, list) or len(value) != prop.array_length:
                raise ValueError(f"expected a list of {prop.array_length} values, got {value!r}")
            return [scalar(prop, v) for v in value]
        return scalar(prop, value)
    except ValueError as err:
        raise _bad(mod, ident, str(err), mutated) from None
    except ToolError as err:
        err.mutated = mutated
        raise


def assign(mod: bpy.types.Modifier, ident: str, value: Any) -> None:
    """Set a coerced value; Blender rejects some pointers silently (poll), so verify them."""
    try:
        setattr(mod, ident, value)
    except (TypeError, ValueError, AttributeError) as err:
        raise _bad(mod, ident, str(err), True) from None
    if isinstance(value, bpy.types.ID) and getattr(mod, ident) != value:
        raise _bad(mod, ident, f"{value.name!r} is not accepted here", True)


@tool(
    name="modifier.add",
    touches=Touches(("object", "node_group")),
    description=(
        "Append a modifier to an object's stack, then set its properties. A modifier name "
        "already on the object is a conflict. A bad property fails with mutated=true (the "
        "executor restores a checkpoint). A NODES (Geometry Nodes) modifier evaluates the "
        "existing group node_group, or without it a new pass-through group "
        "'<name>_Group' (Group Input's Geometry linked to Group Output)."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "type"],
        "properties": {
            "object": name_schema("Object name."),
            "type": {
                "enum": sorted(FRIENDLY_NAMES),
                "description": "Blender modifier type identifier.",
            },
            "name": name_schema(
                "Modifier name; defaults to Blender's name for the type (BEVEL -> 'Bevel')."
            ),
            "properties": PROPERTIES_SCHEMA,
            "node_group": name_schema(
                "NODES only: an existing Geometry Nodes group for the modifier to evaluate."
            ),
        },
    },
    output_schema=MODIFIER_ANSWER,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="modifier.remove",
)
def add(args: dict[str, Any]) -> Outcome:
    """Create first, then set properties one by one (a failure leaves a partial modifier)."""
    ob = require_object(args["object"])
    mod_type = args["type"]
    name = args.get("name", FRIENDLY_NAMES[mod_type])
    if ob.modifiers.get(name) is not None:
        raise ToolError("conflict", f"object {ob.name!r} already has a modifier named {name!r}")
    group = nodes_modifier.choose(args, name)
    mod = ob.modifiers.new(name=name, type=mod_type)
    if mod is None:
        raise ToolError(
            "invalid_input",
            f"object {ob.name!r} of type {ob.type} cannot hold a {mod_type} modifier",
        )
    created_group = nodes_modifier.attach(mod, group)
    for ident, value in args.get("properties", {}).items():
        if mod_type != "NODES" or ident != "node_group":  # attached above
            assign(mod, ident, coerce(mod, ident, value, mutated=True))
    # Removing the modifier alone would leave the group it created behind, and its name
    # taken for the next modifier.add.
    inverse = (
        Compensation(
            tool="gn.remove_target",
            arguments={
                "object": ob.name,
                "modifier": mod.name,
                "remove_modifier": True,
                "delete_node_group": True,
            },
        )
        if created_group
        else Compensation(tool="modifier.remove", arguments={"object": ob.name, "name": mod.name})
    )
    return Outcome(
        data={
            "object": ob.name,
            "name": mod.name,
            "type": mod.type,
            "properties": current_values(mod),
        },
        mutated=True,
        message=f"added {mod.type} modifier {mod.name!r} to {ob.name!r}",
        compensation=inverse,
    )


@tool(
    name="modifier.set",
    touches=Touches(("object",)),
    description=(
        "Set properties of an existing modifier. All values are validated before any is set."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "name", "properties"],
        "properties": {
            "object": name_schema("Object name."),
            "name": name_schema("Modifier name."),
            "properties": {**PROPERTIES_SCHEMA, "minProperties": 1},
        },
    },
    output_schema=MODIFIER_SET_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="modifier.set",
)
def set_properties(args: dict[str, Any]) -> Outcome:
    """Validate everything, remember previous values, then set."""
    ob = require_object(args["object"])
    mod = require_modifier(ob, args["name"])
    coerced = {ident: coerce(mod, ident, value) for ident, value in args["properties"].items()}
    # Refused before anything is set: what the values would make is known from RNA alone.
    before = bounded.ESTIMATES.current()
    over = bounded.problem(before, {(ob.name, mod.name): coerced}, measure=False)
    if over is not None:
        raise ToolError("invalid_input", over)
    previous = current_values(mod, list(coerced))
    for ident, value in coerced.items():
        assign(mod, ident, value)
    return Outcome(
        data={
            "object": ob.name,
            "name": mod.name,
            "properties": current_values(mod, list(coerced)),
        },
        mutated=True,
        message=f"set {len(coerced)} properties on {ob.name!r}/{mod.name!r}",
        compensation=Compensation(
            tool="modifier.set",
            arguments={"object": ob.name, "name": mod.name, "properties": previous},
        ),
    )


@tool(
    name="modifier.remove",
    touches=Touches(("object",)),
    description=(
        "Remove a modifier from an object. The compensation re-adds it (type, name, all writable "
        "properties) at the end of the stack."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "name"],
        "properties": {
            "object": name_schema("Object name."),
            "name": name_schema("Modifier name."),
        },
    },
    output_schema=answer({"object": STRING, "name": STRING, "type": STRING}),
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="modifier.add",
)
def remove(args: dict[str, Any]) -> Outcome:
    """Capture everything needed to re-create the modifier, then remove it."""
    ob = require_object(args["object"])
    mod = require_modifier(ob, args["name"])
    recreate = {
        "object": ob.name,
        "type": mod.type,
        "name": mod.name,
        "properties": current_values(mod),
    }
    # A NODES modifier's input values live outside its RNA properties: not re-creatable.
    compensation = (
        Compensation(tool="modifier.add", arguments=recreate)
        if mod.type in FRIENDLY_NAMES and mod.type != "NODES"
        else None
    )
    ob.modifiers.remove(mod)
    return Outcome(
        data={"object": ob.name, "name": recreate["name"], "type": recreate["type"]},
        mutated=True,
        message=f"removed modifier {recreate['name']!r} from {ob.name!r}",
        compensation=compensation,
    )
