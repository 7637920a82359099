"""A spec 004 response compiled into a spec 000 operation set of ``gn.*`` tool calls.

Steps keep their order, and each op becomes one operation of the bridge's Geometry Nodes
tools; every operation depends on the one before, so the steps run as one chain (§6) and
the executor stops at the first failure. Operation ids carry the step
(``contracts.geonodes.operation_id``), so a receipt or failure names its ``step.id``.
A PYTHON step becomes one ``python.safe`` or ``python.trusted`` operation carrying its code
and the code's sha256, the name a person approves and an always-allow is keyed by; the
bridge runs it in its OS sandbox (docs/python-steps.md). Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.failures import failure
from contracts.geonodes import (
    AddNode,
    CleanupUnused,
    CreateNode,
    DeleteNode,
    EnsureSingleGroupIO,
    EnsureTarget,
    GeoNodeResponse,
    GnLink,
    GnOp,
    GnOpsStep,
    GnUnlink,
    Link,
    NodeTreeStep,
    PythonStep,
    RemoveNode,
    SetGroupIO,
    SetInput,
    SetInputDefault,
    SetProperty,
    Step,
    TreeOp,
    Unlink,
    convert_geonode_response,
    operation_id,
)
from contracts.limits import geonode_problem
from contracts.operations import Operation, OperationSet
from contracts.python_steps import code_sha256
from contracts.tools import ToolCatalog
from services.planner.graph import PlanInvalid

Call = tuple[str, dict[str, Any]]  # (tool name, args)


def parse_response(raw: Any, max_operations: int, max_python_chars: int) -> GeoNodeResponse:
    """Already-parsed JSON as a 004 response, or ``PlanInvalid`` (SCHEMA_INVALID) naming
    what does not match ``geonode-response.v1`` or which limit it passes."""
    too_big = geonode_problem(raw, max_operations)
    if too_big:
        raise _schema_invalid(too_big)
    try:
        response = convert_geonode_response(raw)
    except msgspec.ValidationError as exc:
        raise _schema_invalid(str(exc)) from None
    for step in response.steps:
        if isinstance(step, PythonStep) and len(step.payload.code) > max_python_chars:
            raise _schema_invalid(
                f"the code of step {step.id} has {len(step.payload.code)} characters, more "
                f"than the {max_python_chars} a PYTHON step may hold "
                "(BLENDMESH_MAX_PYTHON_CHARS)"
            )
    return response


def _schema_invalid(problem: str) -> PlanInvalid:
    return PlanInvalid(
        failure("SCHEMA_INVALID", f"Emit JSON matching geonode-response.v1: {problem}"),
        f"the response does not match the Geometry Nodes response schema (spec 004): {problem}",
    )


def compile_response(
    response: GeoNodeResponse, request_id: str, catalog: ToolCatalog
) -> OperationSet:
    """The operation set that applies ``response``'s steps in order, one chain."""
    operations: list[Operation] = []
    for step in response.steps:
        calls = step_calls(step)
        for index, (tool, args) in enumerate(calls, start=1):
            spec = catalog.get(tool)
            if spec is None:
                raise PlanInvalid(
                    failure(
                        "TOOL_UNKNOWN",
                        f"This mesh's Blender bridge has no {tool} tool: answer with an "
                        "operation set of its registered tools instead",
                        recoverable=True,
                    ),
                    f"step {step.id} needs the Geometry Nodes tool {tool}, which this mesh's "
                    "Blender bridge does not register",
                )
            op_id = operation_id(step.id, index, len(calls))
            previous = [operations[-1].operation_id] if operations else []
            operations.append(
                Operation(
                    operation_id=op_id,
                    tool_name=tool,
                    args=args,
                    depends_on=previous,
                    safety_level=spec.safety_level,
                )
            )
    return OperationSet(request_id=request_id, operations=operations)


def step_calls(step: Step) -> list[Call]:
    """The tool calls one step compiles to, in order."""
    if isinstance(step, NodeTreeStep):
        target = step.payload.target
        where = {"object": target.object_name, "modifier": target.modifier_name}
        ensure = {
            **where,
            "node_group": target.node_group_name,
            "allow_create_modifier": True,
        }
        return [
            ("gn.ensure_target", ensure),
            *(_tree_call(op, where) for op in step.payload.operations),
        ]
    if isinstance(step, GnOpsStep):
        patched = step.payload.target
        where = {"object": patched.object_name, "modifier": patched.modifier_name}
        return [_gn_call(op, where) for op in step.payload.ops]
    payload = step.payload
    return [
        (
            f"python.{payload.mode}",
            {
                "code": payload.code,
                "timeout_ms": payload.timeout_ms,
                "code_sha256": code_sha256(payload.code),
            },
        )
    ]


def _link(from_node: str, from_socket: str, to_node: str, to_socket: str) -> dict[str, Any]:
    return {
        "from_node": from_node,
        "from_socket": from_socket,
        "to_node": to_node,
        "to_socket": to_socket,
    }


def _tree_call(op: TreeOp, where: dict[str, Any]) -> Call:
    match op:
        case CreateNode():
            args = {**where, "node_id": op.node_id, "bl_idname": op.bl_idname}
            if op.location is not None:
                args["location"] = list(op.location)
            return "gn.add_node", args
        case DeleteNode():
            return "gn.remove_node", {**where, "node_id": op.node_id}
        case SetInputDefault():
            return "gn.set_input", {
                **where,
                "node_id": op.node_id,
                "socket": op.socket,
                "value": op.value,
            }
        case SetProperty():
            return "gn.set_property", {
                **where,
                "node_id": op.node_id,
                "property": op.property,
                "value": op.value,
            }
        case Link():
            ends = _link(op.from_.node_id, op.from_.socket, op.to.node_id, op.to.socket)
            return "gn.link", {**where, **ends}
        case Unlink():
            ends = _link(op.from_.node_id, op.from_.socket, op.to.node_id, op.to.socket)
            return "gn.unlink", {**where, **ends}
        case SetGroupIO():
            return "gn.set_group_io", {
                **where,
                "in_out": op.in_out,
                "name": op.name,
                "socket_type": op.socket_type,
            }
    raise AssertionError(f"unhandled NODE_TREE op {op!r}")


def _gn_call(op: GnOp, where: dict[str, Any]) -> Call:
    match op:
        case EnsureTarget():
            return "gn.ensure_target", {**where, "allow_create_modifier": op.allow_create_modifier}
        case EnsureSingleGroupIO():
            return "gn.ensure_group_io", dict(where)
        case AddNode():
            return "gn.add_node", {
                **where,
                "node_id": op.id,
                "bl_idname": op.bl_idname,
                "location": [op.x, op.y],
            }
        case RemoveNode():
            return "gn.remove_node", {**where, "node_id": op.node_id}
        case GnLink():
            return "gn.link", {
                **where,
                **_link(op.from_node, op.from_socket, op.to_node, op.to_socket),
            }
        case GnUnlink():
            ends = _link(op.from_node, op.from_socket, op.to_node, op.to_socket)
            return "gn.unlink", {**where, **ends}
        case SetInput():
            return "gn.set_input", {
                **where,
                "node_id": op.node_id,
                "socket": op.socket_name,
                "value": op.value,
            }
        case CleanupUnused():
            return "gn.cleanup_unused", dict(where)
    raise AssertionError(f"unhandled GN_OPS op {op!r}")
