"""The node catalog: which Geometry Nodes the bridge's Blender has, as data.

The bridge builds it from the running Blender (``blendmesh/node_catalog``) by adding every
node type a Geometry Nodes tree accepts to a scratch group and reading it back, and the
executor publishes it beside the tool catalog. A planner checks a node graph against it
(does ``GeometryNodeSubdivisionSurface`` have a "Level" input, which values does
``distribute_method`` take) before anything runs, instead of learning it from a failed
operation. Sockets are described as they are on a fresh node: some are disabled until a
property changes (``enabled``), and a socket is found by name first among the enabled
ones, then by identifier, exactly as the ``gn.*`` tools resolve it.
"""

from __future__ import annotations

from typing import Any

import msgspec


class SocketSpec(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One input or output socket of a fresh node."""

    name: str
    identifier: str  # unique on the node; names are not (a Math node has three "Value")
    bl_idname: str  # NodeSocketFloat, NodeSocketFloatFactor, NodeSocketGeometry, ...
    type: str  # Blender's socket type: VALUE, INT, BOOLEAN, VECTOR, RGBA, GEOMETRY, ...
    enabled: bool = True  # False while a property of the node hides it
    multi_input: bool = False  # takes several links (Join Geometry's Geometry)
    min: float | None = None  # Blender's hard range of the value, where it has one
    max: float | None = None
    default: Any = None  # the value on a fresh node when it is plain data
    enum_items: list[str] = []  # what a MENU socket takes (Subdivision's "UV Smooth")


class PropertySpec(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One node property ``gn.set_property`` may set (data_type, domain, operation, ...)."""

    identifier: str
    type: str  # Blender's RNA type: ENUM, BOOLEAN, INT, FLOAT, STRING or POINTER
    # What this node accepts, which for some nodes is fewer than the enum declares (a
    # Compare node's data_type takes 5 of the 18 socket types).
    enum_items: list[str] = []
    default: Any = None  # the value on a fresh node when it is plain data


class NodeSpec(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One node type a Geometry Nodes tree accepts."""

    bl_idname: str
    label: str
    description: str = ""
    inputs: list[SocketSpec] = []
    outputs: list[SocketSpec] = []
    properties: list[PropertySpec] = []

    def find_input(self, key: str) -> SocketSpec | None:
        """The input ``key`` names, resolved as the ``gn.*`` tools resolve it."""
        return find_socket(self.inputs, key)

    def find_output(self, key: str) -> SocketSpec | None:
        """The output ``key`` names, resolved as the ``gn.*`` tools resolve it."""
        return find_socket(self.outputs, key)

    def find_property(self, identifier: str) -> PropertySpec | None:
        return next((p for p in self.properties if p.identifier == identifier), None)


class NodeCatalog(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every node type of the bridge's Blender usable in a Geometry Nodes tree."""

    blender_version: str
    nodes: dict[str, NodeSpec]  # by bl_idname


def find_socket(sockets: list[SocketSpec], key: str) -> SocketSpec | None:
    """Name first among enabled sockets, then identifier, then name among disabled ones."""
    return (
        next((s for s in sockets if s.enabled and s.name == key), None)
        or next((s for s in sockets if s.identifier == key), None)
        or next((s for s in sockets if s.name == key), None)
    )


def encode(catalog: NodeCatalog) -> bytes:
    """The catalog's bytes, keys sorted so the same Blender publishes the same bytes."""
    return msgspec.json.encode(catalog, order="sorted")


def decode(data: bytes) -> NodeCatalog:
    """Read a catalog; raises ``msgspec.DecodeError``/``ValidationError`` when it is not one."""
    return msgspec.json.decode(data, type=NodeCatalog)
