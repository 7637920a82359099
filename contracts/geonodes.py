"""The Geometry Nodes response of spec 004 (§1-§7): ordered steps that build a node tree.

A model (or a person) may answer a Geometry Nodes request with this instead of a spec 000
operation set. It never runs as written: the planner checks it against the node catalog
and compiles each step into ``gn.*`` tool calls of one operation set, so policy,
approvals, the journal, rollback and audit treat it like any other plan.

Strict as §7 asks: unknown fields, step types and ops are refused, and every list and
string has a limit. Where 004 leaves a field's shape open, blendmesh fixes it:

- ``remove_node`` (GN_OPS) names its node ``node_id``, like ``set_input``; only
  ``add_node`` says ``id``, because it creates the node.
- GN_OPS ``link`` / ``unlink`` are flat, like the ``gn.link`` tool:
  ``from_node, from_socket, to_node, to_socket``.
- ``set_group_io`` (NODE_TREE) is ``in_out, name, socket_type``, like ``gn.set_group_io``.

Operation ids carry their step: the compiled operations of step ``step_1`` are
``step_1.01``, ``step_1.02``, ... (``step_of`` reads the step back), so a receipt or a
failure that names an operation also names its step without any change to spec 000.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

MAX_STEPS = 25  # §7
MAX_OPS_PER_STEP = 200
DEFAULT_MAX_PYTHON_CHARS = 20_000  # §7's default; BLENDMESH_MAX_PYTHON_CHARS changes it
PYTHON_CHARS_CEILING = 200_000  # what the schema admits; the setting may not go higher
MAX_TEXT = 2_000  # description, final_message
MAX_PYTHON_TIMEOUT_MS = 60_000

# A step id has no ".": the compiled operation ids are "<step id>.<nn>".
STEP_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
NODE_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$"
_STEP_ID_RE = re.compile(STEP_ID_PATTERN[1:-1])
_NODE_ID_RE = re.compile(NODE_ID_PATTERN[1:-1])
_STEP_OF_RE = re.compile(r"([A-Za-z0-9_-]{1,64})\.([0-9]{2,3})")

StepId = Annotated[str, msgspec.Meta(pattern=STEP_ID_PATTERN)]
NodeId = Annotated[
    str,
    msgspec.Meta(
        pattern=NODE_ID_PATTERN,
        description='A node\'s name in the tree; "group_input" and "group_output" are the '
        "group's own nodes.",
    ),
]
# Any text here, so a label or a typo gets a "did you mean" from the node catalog.
BlIdname = Annotated[str, msgspec.Meta(min_length=1, max_length=63)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=63)]  # Blender's name limit
SocketName = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]
Location = Annotated[list[float], msgspec.Meta(min_length=2, max_length=2)]

GROUP_INPUT = "group_input"
GROUP_OUTPUT = "group_output"


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Frozen, keyword-only, and refusing unknown fields (§7 strict mode)."""


# -- NODE_TREE (§3) -------------------------------------------------------------------


class NodeTreeTarget(_Strict, frozen=True, kw_only=True):
    """The object, its NODES modifier, and the node group that modifier shows."""

    object_name: Name
    modifier_name: Name
    node_group_name: Name


class SocketRef(_Strict, frozen=True, kw_only=True):
    """One socket of one node: its name as Blender shows it (or its identifier)."""

    node_id: NodeId
    socket: SocketName


class _TreeOp(_Strict, tag_field="op", frozen=True, kw_only=True):
    """An operation of a NODE_TREE payload; ``op`` names it."""


class CreateNode(_TreeOp, tag="create_node", frozen=True, kw_only=True):
    """Add a node of type ``bl_idname`` named ``node_id``."""

    node_id: NodeId
    bl_idname: BlIdname
    location: Location | None = None


class DeleteNode(_TreeOp, tag="delete_node", frozen=True, kw_only=True):
    """Remove the node ``node_id``."""

    node_id: NodeId


class SetInputDefault(_TreeOp, tag="set_input_default", frozen=True, kw_only=True):
    """Set the value an unlinked input socket holds."""

    node_id: NodeId
    socket: SocketName
    value: Any


class SetProperty(_TreeOp, tag="set_property", frozen=True, kw_only=True):
    """Set a property of the node itself (an enum such as Math's ``operation``)."""

    node_id: NodeId
    property: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    value: Any


class Link(_TreeOp, tag="link", frozen=True, kw_only=True):
    """Connect an output socket (``from``) to an input socket (``to``)."""

    from_: SocketRef = msgspec.field(name="from")
    to: SocketRef


class Unlink(_TreeOp, tag="unlink", frozen=True, kw_only=True):
    """Remove the link between an output socket and an input socket."""

    from_: SocketRef = msgspec.field(name="from")
    to: SocketRef


class SetGroupIO(_TreeOp, tag="set_group_io", frozen=True, kw_only=True):
    """Add (or keep) a socket of the group's interface, e.g. an input ``Count`` of
    ``NodeSocketInt``."""

    in_out: Literal["INPUT", "OUTPUT"]
    name: SocketName
    socket_type: Annotated[str, msgspec.Meta(pattern=r"^NodeSocket[A-Za-z]{1,40}$")]


TreeOp = CreateNode | DeleteNode | SetInputDefault | SetProperty | Link | Unlink | SetGroupIO


class NodeTreePayload(_Strict, frozen=True, kw_only=True):
    target: NodeTreeTarget
    operations: Annotated[list[TreeOp], msgspec.Meta(max_length=MAX_OPS_PER_STEP)]


# -- GN_OPS (§4) ----------------------------------------------------------------------


class GnTarget(_Strict, frozen=True, kw_only=True):
    """The object and its NODES modifier; the modifier's node group is whatever it shows."""

    object_name: Name
    modifier_name: Name


class _GnOp(_Strict, tag_field="op", frozen=True, kw_only=True):
    """An operation of a GN_OPS payload; ``op`` names it."""


class EnsureTarget(_GnOp, tag="ensure_target", frozen=True, kw_only=True):
    """Make sure the object has the NODES modifier (adding it only when allowed)."""

    allow_create_modifier: bool = False


class EnsureSingleGroupIO(_GnOp, tag="ensure_single_group_io", frozen=True, kw_only=True):
    """Leave exactly one Group Input and one Group Output node."""


class AddNode(_GnOp, tag="add_node", frozen=True, kw_only=True):
    """Add a node of type ``bl_idname`` named ``id`` at (``x``, ``y``)."""

    id: NodeId
    bl_idname: BlIdname
    x: float = 0.0
    y: float = 0.0


class RemoveNode(_GnOp, tag="remove_node", frozen=True, kw_only=True):
    """Remove the node ``node_id``."""

    node_id: NodeId


class GnLink(_GnOp, tag="link", frozen=True, kw_only=True):
    """Connect ``from_node``'s output ``from_socket`` to ``to_node``'s input ``to_socket``."""

    from_node: NodeId
    from_socket: SocketName
    to_node: NodeId
    to_socket: SocketName


class GnUnlink(_GnOp, tag="unlink", frozen=True, kw_only=True):
    """Remove the link between two sockets."""

    from_node: NodeId
    from_socket: SocketName
    to_node: NodeId
    to_socket: SocketName


class SetInput(_GnOp, tag="set_input", frozen=True, kw_only=True):
    """Set the value an unlinked input socket holds."""

    node_id: NodeId
    socket_name: SocketName
    value: Any


class CleanupUnused(_GnOp, tag="cleanup_unused", frozen=True, kw_only=True):
    """Remove the nodes that feed nothing the Group Output uses."""


GnOp = (
    EnsureTarget
    | EnsureSingleGroupIO
    | AddNode
    | RemoveNode
    | GnLink
    | GnUnlink
    | SetInput
    | CleanupUnused
)


class GnOpsPayload(_Strict, frozen=True, kw_only=True):
    v: Literal[1]
    target: GnTarget
    ops: Annotated[list[GnOp], msgspec.Meta(max_length=MAX_OPS_PER_STEP)]


# -- PYTHON (§5) ----------------------------------------------------------------------


class PythonPayload(_Strict, frozen=True, kw_only=True):
    """Code to run in Blender. ``trusted`` would need a person's confirmation (§5)."""

    mode: Literal["safe", "trusted"] = "safe"
    code: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=PYTHON_CHARS_CEILING,
            description=f"At most {DEFAULT_MAX_PYTHON_CHARS} characters unless "
            "BLENDMESH_MAX_PYTHON_CHARS says otherwise.",
        ),
    ]
    timeout_ms: Annotated[int, msgspec.Meta(ge=1, le=MAX_PYTHON_TIMEOUT_MS)] = 4_000


# -- steps and the response (§1, §2) --------------------------------------------------


class _Step(_Strict, tag_field="type", frozen=True, kw_only=True):
    """One step (§2); ``type`` names the payload's kind."""

    id: StepId
    description: Text = ""


class NodeTreeStep(_Step, tag="NODE_TREE", frozen=True, kw_only=True):
    """Build or change a node group node by node."""

    payload: NodeTreePayload


class GnOpsStep(_Step, tag="GN_OPS", frozen=True, kw_only=True):
    """A deterministic patch of the tree a NODES modifier shows."""

    payload: GnOpsPayload


class PythonStep(_Step, tag="PYTHON", frozen=True, kw_only=True):
    """Python to run in Blender, in an OS sandbox: ``safe`` over a facade of bpy, ``trusted``
    with real bpy after a person approves this exact code (docs/python-steps.md)."""

    payload: PythonPayload


Step = NodeTreeStep | GnOpsStep | PythonStep


class ResponseMeta(_Strict, frozen=True, kw_only=True):
    requires_gate_verification: bool = True


class GeoNodeResponse(_Strict, frozen=True, kw_only=True):
    """A whole 004 answer: steps run in order; ``done`` says whether more are needed."""

    version: Literal["1.0"]
    # No steps with ``done`` (the shape 004 §1 shows) answers without changing anything.
    steps: Annotated[list[Step], msgspec.Meta(max_length=MAX_STEPS)]
    done: bool
    final_message: Text
    meta: ResponseMeta = ResponseMeta()

    def __post_init__(self) -> None:
        if not self.steps and not self.done:
            raise ValueError(
                "a response with no steps must set done to true: with nothing to run, "
                "nothing is left to wait for"
            )
        ids = [step.id for step in self.steps]
        for value in ids:  # msgspec's pattern check lets a trailing newline through
            if not _STEP_ID_RE.fullmatch(value):
                raise ValueError(f"step id {value!r} must match {STEP_ID_PATTERN}")
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"step ids must be unique; repeated: {', '.join(repeated)}")
        for node_id in _node_ids(self.steps):
            if not _NODE_ID_RE.fullmatch(node_id):
                raise ValueError(f"node id {node_id!r} must match {NODE_ID_PATTERN}")


def _node_ids(steps: list[Step]) -> list[str]:
    found: list[str] = []
    for step in steps:
        if isinstance(step, NodeTreeStep):
            for op in step.payload.operations:
                if isinstance(op, Link | Unlink):
                    found += [op.from_.node_id, op.to.node_id]
                elif not isinstance(op, SetGroupIO):
                    found.append(op.node_id)
        elif isinstance(step, GnOpsStep):
            for gn in step.payload.ops:
                if isinstance(gn, AddNode):
                    found.append(gn.id)
                elif isinstance(gn, GnLink | GnUnlink):
                    found += [gn.from_node, gn.to_node]
                elif isinstance(gn, RemoveNode | SetInput):
                    found.append(gn.node_id)
    return found


def op_name(op: TreeOp | GnOp) -> str:
    """The ``op`` tag of an operation (``create_node``, ``link``, ...)."""
    return str(type(op).__struct_config__.tag)


def is_geonode_response(raw: Any) -> bool:
    """Whether a plan is shaped like a 004 response (``steps`` or ``version``) rather
    than a spec 000 operation set (``operations``)."""
    return (
        isinstance(raw, dict) and "operations" not in raw and ("steps" in raw or "version" in raw)
    )


def convert_geonode_response(obj: Any) -> GeoNodeResponse:
    """Already-parsed JSON as a response; raises ``msgspec.ValidationError``."""
    return msgspec.convert(obj, type=GeoNodeResponse)


def decode_geonode_response(data: bytes | str) -> GeoNodeResponse:
    """JSON text as a response; raises ``msgspec.ValidationError`` or ``DecodeError``."""
    try:
        return msgspec.json.decode(data, type=GeoNodeResponse)
    except RecursionError:
        raise msgspec.DecodeError("JSON is malformed: nested too deeply to decode") from None


def operation_id(step_id: str, index: int, count: int) -> str:
    """The id of the ``index``-th (from 1) of ``count`` operations compiled from a step."""
    return f"{step_id}.{index:0{max(2, len(str(count)))}d}"


def step_of(operation_id: str) -> str | None:
    """The step an operation was compiled from (``step_3.02`` -> ``step_3``); None for an
    id that is not shaped like a compiled one."""
    match = _STEP_OF_RE.fullmatch(operation_id)
    return match.group(1) if match else None
