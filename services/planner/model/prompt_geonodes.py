"""What a model planner is told about Geometry Nodes: the 004 response and the nodes.

Only where the mesh has Geometry Nodes tools and a node catalog. The catalog of a Blender
holds hundreds of node types; the prompt carries a fixed core set plus the nodes whose
names share a word with the request, capped, so the prompt stays small and relevant.
Pure: data in, text out.
"""

from __future__ import annotations

import re

from contracts.geonodes import MAX_OPS_PER_STEP, MAX_STEPS
from contracts.nodes import NodeCatalog, NodeSpec, SocketSpec
from services.planner.model.answer import GEONODES_FIELD

MAX_NODES = 40  # node types described in one prompt
MAX_CHARS = 16_000  # characters of node descriptions in one prompt
_WIDE = 1e7  # a bound this far out is the type's own limit, not worth the tokens
CORE = (
    "NodeGroupInput",
    "NodeGroupOutput",
    "GeometryNodeJoinGeometry",
    "GeometryNodeTransform",
    "GeometryNodeSetPosition",
    "GeometryNodeRealizeInstances",
    "GeometryNodeInstanceOnPoints",
    "GeometryNodeDistributePointsOnFaces",
    "GeometryNodeObjectInfo",
    "GeometryNodeMeshLine",
    "GeometryNodeMeshGrid",
    "GeometryNodeSubdivisionSurface",
    "ShaderNodeMath",
    "FunctionNodeRandomValue",
)
_STOP = frozenset({
    "a", "an", "and", "the", "of", "on", "to", "with", "in", "at", "by", "for", "from", "into",
    "onto", "some", "each", "every", "all", "make", "add", "create", "node", "nodes",
    "geometry", "please", "then", "it",
})  # fmt: skip

GEONODES_RULES = f"""\
Geometry Nodes: for a request that builds or changes a node tree you may answer instead \
with a Geometry Nodes response (spec 004), written as one JSON string in {GEONODES_FIELD}, \
with operations left empty. blendmesh checks it against the node catalog below and \
compiles it into gn.* tool calls. Its shape:
{{"version":"1.0","steps":[STEP, ...],"done":true,"final_message":"...",\
"meta":{{"requires_gate_verification":true}}}}
Steps run in order, at most {MAX_STEPS}, each with a unique "id" of letters, digits, _ or - \
(step_1, step_2, ...) and at most {MAX_OPS_PER_STEP} ops:
- {{"id":"step_1","type":"NODE_TREE","description":"...","payload":{{"target":\
{{"object_name":"Plane","modifier_name":"GeometryNodes","node_group_name":"GN_Scatter"}},\
"operations":[OP, ...]}}}} makes sure the object has that NODES modifier showing that \
node group, then applies its operations: {{"op":"create_node","node_id":"n1",\
"bl_idname":"GeometryNodeSubdivisionSurface","location":[x,y]}}, \
{{"op":"delete_node","node_id":"n1"}}, \
{{"op":"set_input_default","node_id":"n1","socket":"Level","value":2}}, \
{{"op":"set_property","node_id":"n2","property":"operation","value":"DIVIDE"}}, \
{{"op":"link","from":{{"node_id":"n1","socket":"Mesh"}},"to":{{"node_id":"group_output",\
"socket":"Geometry"}}}}, {{"op":"unlink", same as link}}, \
{{"op":"set_group_io","in_out":"INPUT"|"OUTPUT","name":"Count","socket_type":"NodeSocketInt"}}.
- {{"id":"step_2","type":"GN_OPS","description":"...","payload":{{"v":1,"target":\
{{"object_name":"Plane","modifier_name":"GeometryNodes"}},"ops":[OP, ...]}}}} patches the \
tree the modifier shows: {{"op":"ensure_target","allow_create_modifier":true}}, \
{{"op":"ensure_single_group_io"}}, {{"op":"add_node","id":"n1","bl_idname":"...","x":0,\
"y":0}}, {{"op":"remove_node","node_id":"n1"}}, {{"op":"link","from_node":"n1",\
"from_socket":"Mesh","to_node":"group_output","to_socket":"Geometry"}}, {{"op":"unlink", \
same fields}}, {{"op":"set_input","node_id":"n1","socket_name":"Level","value":2}}, \
{{"op":"cleanup_unused"}}.
- {{"id":"step_3","type":"PYTHON","description":"...","payload":{{"mode":"safe",\
"timeout_ms":3000,"code":"import bpy\\nobj = bpy.data.objects.get('Plane')\\n..."}}}} \
runs Python, only when no op above can do it. "safe" (the default) sees a small facade \
named bpy: bpy.data.objects (get, [name], iteration) with name, type, location, \
rotation_euler, scale, hide_viewport, hide_render, modifiers and materials; \
bpy.data.materials; print. No other import, no operators, files or underscores. \
"trusted" is real bpy and waits for a person to approve the exact code: avoid it.
Node ids: "group_input" and "group_output" are the group's own nodes (group_input's \
outputs are the group's inputs, starting with Geometry; group_output's inputs are its \
outputs). A NODE_TREE step names only those and nodes an earlier op creates; a GN_OPS \
step may also name nodes already in the scene's tree. Sockets are named as listed below; \
where a node repeats a name, use the identifier in brackets (Math's second input is \
Value_001). Link an output to an input of a type Blender converts to: geometry only to \
geometry; float, integer, boolean, vector and color among themselves. Set a value only on \
an input: numbers within the listed range, vectors as lists, objects by name. \
Set "done" to false only when you need to see the result before the next steps; you will \
be asked again, and then give every step a new id."""


def node_section(nodes: NodeCatalog, request: str) -> str:
    """The nodes a model may use for ``request``: the core set and the nodes whose name
    or label shares a word with it, at most ``MAX_NODES`` and ``MAX_CHARS``."""
    words = {w for w in re.findall(r"[a-z]{3,}", request.lower()) if w not in _STOP}
    chosen = [name for name in CORE if name in nodes.nodes]
    for name in sorted(nodes.nodes):
        if name not in chosen and words & _words(nodes.nodes[name]):
            chosen.append(name)
    lines: list[str] = []
    size = 0
    for name in chosen[:MAX_NODES]:
        line = describe(nodes.nodes[name])
        if size + len(line) > MAX_CHARS:
            break
        lines.append(line)
        size += len(line) + 1
    more = len(nodes.nodes) - len(lines)
    return (
        f"Geometry Nodes of Blender {nodes.blender_version} (a part of {len(nodes.nodes)}: "
        f"{more} more exist; use only these; * marks a socket another mode of the node "
        "shows):\n" + "\n".join(lines)
    )


def _words(spec: NodeSpec) -> set[str]:
    camel = re.sub(r"([a-z])([A-Z])", r"\1 \2", spec.bl_idname)
    return set(re.findall(r"[a-z]{3,}", f"{spec.label} {camel}".lower())) - _STOP


def describe(spec: NodeSpec) -> str:
    """One node in one line: ``bl_idname "Label" in: ... out: ... props: ...``."""
    parts = [f'{spec.bl_idname} "{spec.label}"']
    if spec.inputs:
        parts.append("in: " + ", ".join(_socket(s, spec.inputs) for s in spec.inputs))
    if spec.outputs:
        parts.append("out: " + ", ".join(_socket(s, spec.outputs) for s in spec.outputs))
    props = [
        p.identifier + (f"[{'|'.join(p.enum_items)}]" if p.enum_items else f":{p.type}")
        for p in spec.properties
    ]
    if props:
        parts.append("props: " + ", ".join(props))
    return " ".join(parts)


def _socket(socket: SocketSpec, side: list[SocketSpec]) -> str:
    """``Name [identifier]:TYPE low..high``, the identifier where the name repeats, the
    range where it is narrower than the type's own, ``*`` when another mode shows it."""
    repeated = sum(1 for s in side if s.name == socket.name) > 1
    text = socket.name + (f" [{socket.identifier}]" if repeated else "") + f":{socket.type}"
    low, high = (_bound(socket.min), _bound(socket.max))
    if low or high:
        text += f" {low}..{high}"
    return text + ("" if socket.enabled else "*")


def _bound(value: float | None) -> str:
    return "" if value is None or abs(value) >= _WIDE else f"{value:g}"
