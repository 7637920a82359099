"""The inspection artifact: a committed revision described as data, for the guardians.

After every commit the executor has its bridge describe the scene it just saved (objects,
transforms, parents, modifiers and their evaluation errors, Geometry Nodes groups with
nodes, sockets and links, materials, evaluated counts, cameras, lights and the active
camera) and adds what the run did (its operations, approvals and Python steps). The
document is stored beside the revision and materialised as ``inspection.json`` in a
folder: that folder is the ``repo_path`` of spec 003. Guardians read it and nothing else,
never ``bpy``, never the bus.

Deterministic by construction: lists are in a stable order (objects, groups, materials
and links by name, nodes by name, sockets in Blender's order), floats rounded to
``DIGITS`` places, and nothing in it depends on the clock or the machine.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.operations import SafetyLevel

VERSION = 1
DIGITS = 6  # floats are rounded so equal scenes describe equally on every machine
FILE_NAME = "inspection.json"


class InspectedSocket(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One input or output socket of a node, as the Blender that ran the scene has it."""

    name: str
    identifier: str
    type: str  # Blender's socket type: GEOMETRY, VALUE, INT, VECTOR, RGBA, BOOLEAN, ...
    is_linked: bool
    enabled: bool = True  # a hidden-by-mode socket (e.g. a Math node's unused input)
    default: Any = None  # the default value, when the socket has one that is plain data


class InspectedNode(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One node of a node group."""

    name: str
    bl_idname: str
    known: bool  # the running Blender registers this node type
    inputs: list[InspectedSocket] = []
    outputs: list[InspectedSocket] = []
    muted: bool = False


class InspectedLink(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One link between two sockets, with what Blender says about it."""

    from_node: str
    from_socket: str  # the socket's identifier
    from_type: str
    to_node: str
    to_socket: str
    to_type: str
    valid: bool  # Blender's own verdict (False for a type it cannot convert, or a cycle)
    muted: bool = False


class InterfaceSocket(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One socket of a node group's interface (its Group Input / Group Output)."""

    name: str
    in_out: Literal["INPUT", "OUTPUT"]
    socket_type: str  # NodeSocketGeometry, NodeSocketFloat, ...


class InspectedNodeGroup(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A node group (Geometry Nodes, shader or other) with everything in it."""

    name: str
    bl_idname: str  # GeometryNodeTree, ShaderNodeTree, ...
    interface: list[InterfaceSocket] = []
    nodes: list[InspectedNode] = []
    links: list[InspectedLink] = []
    users: int = 0


class InspectedModifier(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One modifier of an object, in stack order."""

    name: str
    type: str  # Blender's modifier type: BEVEL, ARRAY, NODES, ...
    show_viewport: bool = True
    node_group: str | None = None  # for NODES: the group it evaluates
    error: str | None = None  # what evaluating it reported, or None when it evaluated
    # Its settings (segments, width, count, ...) as the scene hash covers them; empty in
    # artifacts written before they were recorded.
    properties: dict[str, Any] = {}


class InspectedCamera(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a camera object's data says about how it sees."""

    lens: float  # focal length in millimetres
    type: str = "PERSP"  # PERSP, ORTHO or PANO


class InspectedLight(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a light object's data says about how it lights."""

    kind: str  # POINT, SUN, SPOT or AREA
    power: float  # watts (sun: W/m2)
    color: list[float] = []  # linear RGB
    # Radius (point, spot), edge length (area) or angular diameter in degrees (sun).
    size: float = 0.0


class InspectedObject(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One object of the scene."""

    name: str
    type: str  # MESH, CURVE, EMPTY, LIGHT, CAMERA, ...
    parent: str | None = None
    location: list[float] = []
    rotation_euler: list[float] = []  # radians
    scale: list[float] = []
    # Empty, as ``world_location``, for an object Blender does not evaluate (disabled in
    # viewports, or in a collection the view layer excludes): what it holds is stale.
    dimensions: list[float] = []
    # Its origin in the world (``location`` is in its parent's space); empty in artifacts
    # written before it was recorded.
    world_location: list[float] = []
    modifiers: list[InspectedModifier] = []
    materials: list[str] = []
    data: str | None = None  # the name of its data block (mesh, curve, ...)
    hide_viewport: bool = False
    hide_render: bool = False
    # Counts of the evaluated object (after modifiers and Geometry Nodes); 0 when it has
    # no mesh to count.
    evaluated_vertices: int = 0
    evaluated_faces: int = 0
    camera: InspectedCamera | None = None  # for CAMERA objects
    light: InspectedLight | None = None  # for LIGHT objects
    # The library revision it is linked from or overrides, ``name@revision`` as the shot
    # links it (contracts/libraries.py); None for an object of the shot's own.
    library: str | None = None
    # A library override's properties the shot stores instead of the library's (RNA
    # paths such as ``location``), sorted: what an edit of the shot may change.
    overridden: list[str] = []


class InspectedMaterial(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One material."""

    name: str
    use_nodes: bool = False
    users: int = 0
    # Linear RGBA of its Principled BSDF's Base Color (the viewport colour without one);
    # empty in artifacts written before it was recorded.
    base_color: list[float] = []
    metallic: float | None = None  # None in artifacts written before it was recorded
    roughness: float | None = None


class InspectedData(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One mesh or curve datablock an object of the scene uses, counted as saved (before
    modifiers), so a change list can tell an edit of the geometry from one of its object."""

    name: str
    type: str  # MESH or CURVE
    vertices: int = 0  # a curve's control points
    edges: int = 0
    faces: int = 0  # a curve's splines
    users: int = 0


class RunOperation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One operation of the run that committed the revision, as it was approved."""

    operation_id: str
    tool_name: str
    safety_level: SafetyLevel
    args: dict[str, Any] = {}


class RunApproval(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A person's resolution of an approval the run waited on."""

    approval_id: str
    decision: str  # approve_once, approve_and_always_allow or reject
    resolved_by: str
    operation_ids: list[str] = []
    request_hash: str = ""


class RunPythonStep(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A Python step of the run (spec 004 §5), by the hash of its code."""

    operation_id: str
    mode: Literal["safe", "trusted"]
    code_sha256: str
    approved_by: str | None = None  # who approved this exact code; None when nobody did


class RunRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the run did to reach the revision."""

    run_id: str
    user: str
    approved_by: str  # "policy", or the user who approved
    operations: list[RunOperation] = []
    approvals: list[RunApproval] = []
    python_steps: list[RunPythonStep] = []


class Inspection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole artifact: the scene of one committed revision and the run that made it."""

    version: int = VERSION
    scene_id: str
    revision: int
    scene_hash: str
    blender_version: str
    objects: list[InspectedObject] = []
    node_groups: list[InspectedNodeGroup] = []
    materials: list[InspectedMaterial] = []
    active_camera: str | None = None  # the camera object the scene renders through
    run: RunRecord | None = None
    # The mesh and curve datablocks its objects use; empty in artifacts written before
    # they were recorded.
    data: list[InspectedData] = []
    # The library revisions the revision links, name -> revision; empty for a scene that
    # links none, and in artifacts written before they were recorded.
    libraries: dict[str, int] = {}


class SceneInspection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the bridge reports of the scene it holds (the artifact without the run)."""

    blender_version: str
    objects: list[InspectedObject] = []
    node_groups: list[InspectedNodeGroup] = []
    materials: list[InspectedMaterial] = []
    active_camera: str | None = None
    data: list[InspectedData] = []
    libraries: dict[str, int] = {}


def encode(inspection: Inspection) -> bytes:
    """The artifact's bytes: sorted keys and no spaces, so equal scenes give equal bytes."""
    return msgspec.json.encode(msgspec.to_builtins(inspection), order="sorted")


def decode(data: bytes) -> Inspection:
    """Read an artifact; raises ``msgspec.DecodeError``/``ValidationError`` when it is not one."""
    return msgspec.json.decode(data, type=Inspection)
