"""The material tool's body: create or update a Principled BSDF material on an object."""

from __future__ import annotations

import warnings
from typing import Any

import bpy

from . import Done, ToolFailure
from .objects import require_object


def principled(mat: Any) -> Any:
    """The material's Principled BSDF node, if it has one."""
    if mat.node_tree is None:
        return None
    for node in mat.node_tree.nodes:
        if node.type == "BSDF_PRINCIPLED":
            return node
    return None


def _ensure_bsdf(mat: Any) -> Any:
    if mat.node_tree is None:
        # use_nodes is deprecated in 5.0 but still the way to get a node tree on old materials.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            mat.use_nodes = True
    node = principled(mat)
    if node is None:
        tree = mat.node_tree
        node = tree.nodes.new("ShaderNodeBsdfPrincipled")
        output = next((n for n in tree.nodes if n.type == "OUTPUT_MATERIAL"), None)
        if output is None:
            output = tree.nodes.new("ShaderNodeOutputMaterial")
        tree.links.new(node.outputs["BSDF"], output.inputs["Surface"])
    return node


def assign(args: dict[str, Any]) -> Done:
    """Set BSDF inputs (and the viewport display values, so solid mode matches)."""
    ob = require_object(args["object"])
    if not hasattr(ob.data, "materials"):
        raise ToolFailure(
            "invalid_input", f"object {ob.name!r} of type {ob.type} cannot hold materials"
        )
    name = args.get("material", f"{ob.name}_Material")
    if len(name.encode("utf-8")) > 63:
        raise ToolFailure("invalid_input", f"material name {name!r} is longer than 63 bytes")
    mat = bpy.data.materials.get(name)
    created = mat is None
    if mat is None:
        mat = bpy.data.materials.new(name)
    node = _ensure_bsdf(mat)
    if "base_color" in args:
        color = list(args["base_color"])
        if len(color) == 3:
            color.append(node.inputs["Base Color"].default_value[3])
        node.inputs["Base Color"].default_value = color
        mat.diffuse_color = color
    if "metallic" in args:
        node.inputs["Metallic"].default_value = args["metallic"]
        mat.metallic = args["metallic"]
    if "roughness" in args:
        node.inputs["Roughness"].default_value = args["roughness"]
        mat.roughness = args["roughness"]
    if len(ob.material_slots) == 0:
        ob.data.materials.append(mat)
    else:
        ob.material_slots[0].material = mat
    return Done(
        {"object": ob.name, "created": created, "material": mat.name},
        f"assigned material {mat.name!r} to {ob.name!r}",
    )
