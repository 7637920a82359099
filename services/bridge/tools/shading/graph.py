"""Material node graphs, typed like spec 004's node trees: create a material, add and
remove nodes, link sockets, set input values, node properties and colour ramps.

Nodes are named by the plan's node ids, as the ``gn.*`` tools name theirs; sockets by
name or identifier; every value is checked against the RNA of what it sets before
Blender sees it (``nodes.set_rna``). A new material's two nodes are named ``principled``
and ``output``. An image texture takes only an image packed into the scene: a path on
the mesh's host is never read.
"""

from __future__ import annotations

from typing import Any

import bpy

from contracts.bridge import Compensation
from services.bridge.nodes.nodes import UNREPRESENTABLE, describe, exact_json, find_socket, set_rna
from services.bridge.scene.fingerprint import node_props

from ...registry import Outcome, ToolError, Touches, name_schema, tool
from .catalog import MAX_LINKS, MAX_NODES, SHADER_NODES, require_material, require_shader_node

MATERIAL = name_schema("Material name.")
NODE_ID = {"type": "string", "pattern": r"^[A-Za-z0-9_.-]{1,63}$", "description": "Node id."}
SOCKET = {"type": "string", "minLength": 1, "maxLength": 63}
VALUE: dict[str, Any] = {
    "description": "A number, boolean, string, a list of 2..4 numbers, or a name (image).",
    "anyOf": [
        {"type": ["number", "boolean", "string", "null"], "maxLength": 63},
        {
            "type": "array",
            "items": {"type": "number", "minimum": -1e6, "maximum": 1e6},
            "minItems": 2,
            "maxItems": 4,
        },
    ],
}
NODE_RESULT = {
    "type": "object",
    "required": ["material", "node_id"],
    "properties": {
        "material": {"type": "string"},
        "node_id": {"type": "string"},
        "bl_idname": {"type": "string"},
        "inputs": {"type": "array", "items": {"type": "string"}},
        "outputs": {"type": "array", "items": {"type": "string"}},
        "value": {},
    },
}


def _schema(required: list[str], **own: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["material", *required],
        "properties": {"material": MATERIAL, **own},
    }


@tool(
    name="shader.create",
    touches=Touches(("material",)),
    description=(
        "Create a material whose node tree holds a Principled BSDF `principled` linked to a "
        "Material Output `output` (empty=true: the output alone). An existing name is a "
        "conflict. Build its graph with shader.add_node, shader.link, shader.set_input; put "
        "it on an object with material.assign_faces."
    ),
    input_schema=_schema([], empty={"type": "boolean", "default": False}),
    output_schema={
        "type": "object",
        "required": ["material", "nodes"],
        "properties": {
            "material": {"type": "string"},
            "nodes": {"type": "array", "items": {"type": "string"}},
        },
    },
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def create(args: dict[str, Any]) -> Outcome:
    name = args["material"]
    if bpy.data.materials.get(name) is not None:
        raise ToolError("conflict", f"material {name!r} already exists; build on it or pick a name")
    mat = require_material(bpy.data.materials.new(name).name)
    tree = mat.node_tree
    tree.nodes.clear()
    output = tree.nodes.new("ShaderNodeOutputMaterial")
    output.name = output.label = "output"
    output.location = (300, 0)
    if not args.get("empty", False):
        bsdf = tree.nodes.new("ShaderNodeBsdfPrincipled")
        bsdf.name = bsdf.label = "principled"
        tree.links.new(bsdf.outputs["BSDF"], output.inputs["Surface"])
    nodes = sorted(n.name for n in tree.nodes)
    return Outcome(
        data={"material": mat.name, "nodes": nodes},
        mutated=True,
        message=f"created material {mat.name!r} with nodes {', '.join(nodes)}",
    )


@tool(
    name="shader.add_node",
    touches=Touches(("material",)),
    description=(
        "Add a shader node to a material's graph; its name and label are node_id. An "
        "existing node_id is a conflict. Types: Principled and other BSDFs, textures (noise, "
        "voronoi, wave, brick, checker, gradient, image), mix, math, bump, normal map, colour "
        f"ramp, mapping, texture coordinates, ... (the enum). At most {MAX_NODES} nodes."
    ),
    input_schema=_schema(
        ["node_id", "bl_idname"],
        node_id=NODE_ID,
        bl_idname={"enum": list(SHADER_NODES)},
        location={
            "type": "array",
            "items": {"type": "number", "minimum": -100000, "maximum": 100000},
            "minItems": 2,
            "maxItems": 2,
        },
    ),
    output_schema=NODE_RESULT,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="shader.remove_node",
)
def add_node(args: dict[str, Any]) -> Outcome:
    mat = require_material(args["material"])
    tree, node_id = mat.node_tree, args["node_id"]
    if tree.nodes.get(node_id) is not None:
        raise ToolError("conflict", f"material {mat.name!r} already has a node {node_id!r}")
    if len(tree.nodes) >= MAX_NODES:
        raise ToolError("invalid_input", f"material {mat.name!r} has {MAX_NODES} nodes, the most")
    node = tree.nodes.new(args["bl_idname"])
    node.name = node.label = node_id
    node.location = args.get("location", (0.0, 0.0))
    return Outcome(
        data={
            "material": mat.name,
            "node_id": node.name,
            "bl_idname": node.bl_idname,
            "inputs": [describe(s) for s in node.inputs if s.enabled],
            "outputs": [describe(s) for s in node.outputs if s.enabled],
        },
        mutated=True,
        message=f"added {node.bl_idname} {node.name!r} to {mat.name!r}",
        compensation=Compensation(
            tool="shader.remove_node", arguments={"material": mat.name, "node_id": node.name}
        ),
    )


@tool(
    name="shader.remove_node",
    touches=Touches(("material",)),
    description="Remove a node and its links from a material's graph. Undo restores a checkpoint.",
    input_schema=_schema(["node_id"], node_id=NODE_ID),
    output_schema=NODE_RESULT,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def remove_node(args: dict[str, Any]) -> Outcome:
    mat = require_material(args["material"])
    node = require_shader_node(mat, args["node_id"])
    kind = node.bl_idname
    mat.node_tree.nodes.remove(node)
    return Outcome(
        data={"material": mat.name, "node_id": args["node_id"], "bl_idname": kind},
        mutated=True,
        message=f"removed {args['node_id']!r} from {mat.name!r}",
    )


@tool(
    name="shader.link",
    touches=Touches(("material",)),
    description=(
        "Link an output socket of one node to an input socket of another in a material's "
        "graph (replacing what that input had). Sockets by name or identifier. A link "
        "Blender marks invalid (a shader into a colour) is refused."
    ),
    input_schema=_schema(
        ["from_node", "from_socket", "to_node", "to_socket"],
        from_node=NODE_ID,
        from_socket=SOCKET,
        to_node=NODE_ID,
        to_socket=SOCKET,
    ),
    output_schema={
        "type": "object",
        "required": ["material", "from", "to"],
        "properties": {
            "material": {"type": "string"},
            "from": {"type": "string"},
            "to": {"type": "string"},
        },
    },
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def link(args: dict[str, Any]) -> Outcome:
    mat = require_material(args["material"])
    tree = mat.node_tree
    source = require_shader_node(mat, args["from_node"])
    target = require_shader_node(mat, args["to_node"])
    if source == target:
        raise ToolError("invalid_input", f"node {source.name!r} cannot feed itself")
    out = find_socket(source, args["from_socket"], output=True)
    into = find_socket(target, args["to_socket"], output=False)
    if len(tree.links) >= MAX_LINKS:
        raise ToolError("invalid_input", f"material {mat.name!r} has {MAX_LINKS} links, the most")
    made = tree.links.new(out, into)
    tree.update_tag()
    if not made.is_valid:
        tree.links.remove(made)
        raise ToolError(
            "invalid_input",
            f"{describe(out)} of {source.name!r} cannot feed {describe(into)} of "
            f"{target.name!r} (a loop, or a shader into a value)",
            mutated=True,
        )
    said_from, said_to = f"{source.name}.{out.name}", f"{target.name}.{into.name}"
    return Outcome(
        data={"material": mat.name, "from": said_from, "to": said_to},
        mutated=True,
        message=f"linked {said_from} to {said_to} in {mat.name!r}",
    )


@tool(
    name="shader.set_input",
    touches=Touches(("material",)),
    description=(
        "Set the value of a shader node's input socket (used when nothing is linked to it), "
        "checked against the socket: number range, vector length, colours as 4 floats."
    ),
    input_schema=_schema(
        ["node_id", "socket", "value"], node_id=NODE_ID, socket=SOCKET, value=VALUE
    ),
    output_schema=NODE_RESULT,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="shader.set_input",
)
def set_input(args: dict[str, Any]) -> Outcome:
    mat = require_material(args["material"])
    node = require_shader_node(mat, args["node_id"])
    socket = find_socket(node, args["socket"], output=False)
    if socket.bl_rna.properties.get("default_value") is None:
        raise ToolError("invalid_input", f"{describe(socket)} of {node.name!r} takes no value")
    previous = exact_json(socket, "default_value")
    set_rna(socket, "default_value", args["value"], f"{node.name!r} input {describe(socket)}")
    back = {**args, "socket": socket.identifier, "value": previous}
    return Outcome(
        data={
            "material": mat.name,
            "node_id": node.name,
            "value": exact_json(socket, "default_value"),
        },
        mutated=True,
        message=f"set {node.name!r} {socket.name!r} in {mat.name!r}",
        # A value JSON cannot carry back leaves the undo to a checkpoint.
        compensation=None
        if previous is UNREPRESENTABLE
        else Compensation(tool="shader.set_input", arguments=back),
    )


@tool(
    name="shader.set_property",
    touches=Touches(("material",)),
    description=(
        "Set a property of a shader node: e.g. noise_dimensions, voronoi feature, wave_type, "
        "blend_type and data_type of a Mix, operation of a Math node, interpolation, or "
        "image (an Image texture's image, by name; only an image packed into the scene, "
        "never a file on the host)."
    ),
    input_schema=_schema(
        ["node_id", "property", "value"],
        node_id=NODE_ID,
        property={"type": "string", "pattern": "^[a-z_][a-z0-9_]{0,62}$"},
        value=VALUE,
    ),
    output_schema=NODE_RESULT,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_property(args: dict[str, Any]) -> Outcome:
    mat = require_material(args["material"])
    node = require_shader_node(mat, args["node_id"])
    ident, value = args["property"], args["value"]
    writable = {i for i, _, _ in node_props(node)}
    if node.bl_idname == "ShaderNodeTexImage":
        writable.add("image")
    if ident not in writable:
        shown = ", ".join(sorted(writable)) or "none"
        raise ToolError(
            "invalid_input", f"{node.bl_idname} has no property {ident!r}; it has: {shown}"
        )
    if ident == "image" and value is not None:
        _require_packed(value)
    set_rna(node, ident, value, f"{node.name!r} property {ident!r}")
    return Outcome(
        data={"material": mat.name, "node_id": node.name, "value": exact_json(node, ident)},
        mutated=True,
        message=f"set {node.name!r} {ident} in {mat.name!r}",
    )


def _require_packed(name: Any) -> None:
    image = bpy.data.images.get(name) if isinstance(name, str) else None
    if image is None:
        raise ToolError("not_found", f"image {name!r} is not in the scene; import it packed first")
    if image.source == "FILE" and image.packed_file is None:
        raise ToolError(
            "invalid_input",
            f"image {image.name!r} refers to a file outside the scene; only packed images are used",
        )
