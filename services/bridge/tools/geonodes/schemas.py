"""Input schemas of the ``gn.*`` tools, spelled once so every tool names things alike."""

from __future__ import annotations

from typing import Any

from ...registry import name_schema
from ..answers import BOOLEAN, JSON_VALUE, NAMES, STRING, answer

# Interface socket types a Geometry Nodes group accepts in Blender 5.0 (Bundle and Closure
# are new in 5.0; Shader and Texture sockets are refused there).
GROUP_SOCKET_TYPES = [
    "NodeSocketBool", "NodeSocketBundle", "NodeSocketClosure", "NodeSocketCollection",
    "NodeSocketColor", "NodeSocketFloat", "NodeSocketGeometry", "NodeSocketImage",
    "NodeSocketInt", "NodeSocketMaterial", "NodeSocketMatrix", "NodeSocketMenu",
    "NodeSocketObject", "NodeSocketRotation", "NodeSocketString", "NodeSocketVector",
]  # fmt: skip
TARGET: dict[str, Any] = {
    "object": name_schema("Object name."),
    "modifier": name_schema("Name of the object's Geometry Nodes modifier."),
}
NODE_ID = name_schema("Node id: the node's name in the group (group_input, group_output, ...).")
BL_IDNAME: dict[str, Any] = {
    "type": "string",
    "pattern": "^[A-Za-z][A-Za-z0-9_]{0,62}$",
    "description": "Node type, e.g. GeometryNodeSubdivisionSurface (see the node catalog).",
}
SOCKET = name_schema("Socket name (first enabled socket of that name) or identifier.")
VALUE: dict[str, Any] = {
    "description": (
        "JSON value: a number, a boolean, a string, a list (vector, colour as 4 floats), or "
        "the name of an object/collection/material/image (null clears it)."
    )
}
# A compensation restores at most this many nodes, links or renames in one call: a node tree
# larger than that is restored from the checkpoint instead, and a plan that names more is
# refused before anything runs.
MAX_ITEMS = 1000
MAX_KEYS = 256  # properties or socket values recorded for one node

LOCATION: dict[str, Any] = {
    "type": "array",
    "items": {"type": "number", "minimum": -1e6, "maximum": 1e6},
    "minItems": 2,
    "maxItems": 2,
    "description": "Node editor location [x, y] (default [0, 0]).",
}
IN_OUT: dict[str, Any] = {"enum": ["INPUT", "OUTPUT"]}


def schema(required: list[str], **properties: Any) -> dict[str, Any]:
    """An object schema over the target plus ``properties``."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["object", "modifier", *required],
        "properties": {**TARGET, **properties},
    }


LINK_ENDS = {
    "from_node": NODE_ID,
    "from_socket": SOCKET,
    "to_node": NODE_ID,
    "to_socket": SOCKET,
}
_REF: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["from_node", "from_socket", "to_node", "to_socket"],
    "properties": {**LINK_ENDS, "muted": {"type": "boolean"}},
}
_RECORD: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"maxLength": 63},
    "maxProperties": MAX_KEYS,
}
_NODE_STATE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["node_id", "bl_idname"],
    "properties": {
        "node_id": NODE_ID,
        "bl_idname": BL_IDNAME,
        "label": {"type": "string", "maxLength": 63},
        "location": LOCATION,
        "width": {"type": "number", "minimum": 1, "maximum": 10000},
        "hide": {"type": "boolean"},
        "mute": {"type": "boolean"},
        "properties": _RECORD,
        "inputs": _RECORD,
        "outputs": _RECORD,
    },
}
_ORDER: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["node", "socket", "from"],
    "properties": {
        "node": NODE_ID,
        "socket": SOCKET,
        "from": {
            "type": "array",
            "items": {"type": "array", "items": NODE_ID, "minItems": 2, "maxItems": 2},
            "maxItems": MAX_ITEMS,
        },
    },
}
_RENAME: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["node_id", "name"],
    "properties": {
        "node_id": NODE_ID,
        "name": NODE_ID,
        "label": {"type": "string", "maxLength": 63},
    },
}

ENSURE_TARGET = schema(
    [],
    node_group=name_schema("Node group to use or create (default '<modifier>_Group')."),
    allow_create_modifier={
        "type": "boolean",
        "default": False,
        "description": "Create the modifier when the object has none of that name.",
    },
)
REMOVE_TARGET = schema(
    [],
    remove_modifier={"type": "boolean", "default": False},
    delete_node_group={"type": "boolean", "default": False},
)
TARGET_ONLY = schema([])
ADD_NODE = schema(["node_id", "bl_idname"], node_id=NODE_ID, bl_idname=BL_IDNAME, location=LOCATION)
NODE_ONLY = schema(["node_id"], node_id=NODE_ID)
RESTORE_NODE = schema(
    [],
    unlink={"type": "array", "items": _REF, "maxItems": MAX_ITEMS},
    remove={"type": "array", "items": NODE_ID, "maxItems": MAX_ITEMS},
    rename={"type": "array", "items": _RENAME, "maxItems": MAX_ITEMS},
    nodes={"type": "array", "items": _NODE_STATE, "maxItems": MAX_ITEMS},
    links={"type": "array", "items": _REF, "maxItems": MAX_ITEMS},
    order={"type": "array", "items": _ORDER, "maxItems": MAX_ITEMS},
)
SET_INPUT = schema(["node_id", "socket", "value"], node_id=NODE_ID, socket=SOCKET, value=VALUE)
SET_PROPERTY = schema(
    ["node_id", "property", "value"],
    node_id=NODE_ID,
    property=name_schema("Node property identifier, e.g. data_type, domain, operation, mode."),
    value=VALUE,
)
LINK = schema(list(LINK_ENDS), **LINK_ENDS)
SET_GROUP_IO = schema(
    ["in_out", "name", "socket_type"],
    in_out=IN_OUT,
    name=name_schema("Interface socket name."),
    socket_type={"enum": GROUP_SOCKET_TYPES},
)
REMOVE_GROUP_IO = schema(
    ["in_out", "name"], in_out=IN_OUT, name=name_schema("Interface socket name.")
)


# What the gn tools answer (their outputSchema): nodes and sockets by name, as given back.
_NODE_OUT = {"node_id": STRING, "bl_idname": STRING}
_SOCKETS_OUT = {"inputs": NAMES, "outputs": NAMES}  # the enabled sockets, as errors name them
ADDED_NODE = answer({**_NODE_OUT, **_SOCKETS_OUT})
REMOVED_NODE = answer(_NODE_OUT)
SET_INPUT_ANSWER = answer({"node_id": STRING, "socket": STRING, "value": JSON_VALUE})
SET_PROPERTY_ANSWER = answer(
    {"node_id": STRING, "property": STRING, "value": JSON_VALUE, **_SOCKETS_OUT}
)
_ENDS_OUT = {"from_node": STRING, "from_socket": STRING, "to_node": STRING, "to_socket": STRING}
LINK_REF = answer(_ENDS_OUT, {"muted": {"const": True}})
LINKED = answer(_ENDS_OUT, {"replaced": LINK_REF})
TARGET_ANSWER = answer(
    {
        "object": STRING,
        "modifier": STRING,
        "node_group": STRING,
        "created_modifier": BOOLEAN,
        "created_node_group": BOOLEAN,
    }
)
REMOVED_TARGET = answer({"object": STRING, "deleted_node_group": BOOLEAN})
GROUP_IO_NODES = answer({"removed": NAMES, "renamed": NAMES, "created": NAMES})
GROUP_IO_ANSWER = answer({"in_out": IN_OUT, "name": STRING, "socket_type": STRING})
