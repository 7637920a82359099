"""The capability gate of spec 001 Phase 2: refuse a plan this runtime cannot honour,
before anything executes.

It judges every operation against the run's negotiated session contract (host profile x
Blender profile, the caller's determinism request, the operator's unsafe_ops opt-in) and
answers with 001's own ToolResult code, which the refused operation's receipt carries,
beside the 000 failure contract the run ends with.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from contracts.bridge import ToolErrorCode
from contracts.failures import FailureContract, RepairAction, failure
from contracts.operations import Operation
from contracts.python_approvals import PYTHON_TOOLS
from contracts.session import SessionContract
from contracts.tools import ToolCatalog, ToolSpec
from services.executor.domain.failures import contract_code

SANDBOX = "bubblewrap"  # BlenderProfile.sandbox where Python steps can run


@dataclass(frozen=True)
class Refusal:
    """Why the gate refused the plan: the operation, its 001 code and the 000 contract."""

    operation_id: str
    code: ToolErrorCode
    contract: FailureContract


def _refuse(
    op: Operation, code: ToolErrorCode, hint: str, recoverable: bool, action: RepairAction
) -> Refusal:
    contract = failure(
        contract_code(code), hint, recoverable=recoverable, repair=[(op.operation_id, action)]
    )
    return Refusal(op.operation_id, code, contract)


def gate(ops: list[Operation], catalog: ToolCatalog, contract: SessionContract) -> Refusal | None:
    """The first refusal for the plan, or None when every tool can run here."""
    for op in ops:
        tool = catalog.get(op.tool_name)
        if tool is None:
            hint = f"{op.tool_name} is not served by this bridge"
            return _refuse(op, "capability_missing", hint, True, "replace_args")
        refusal = _judge(op, tool, contract)
        if refusal is not None:
            return refusal
    return None


def _judge(op: Operation, tool: ToolSpec, contract: SessionContract) -> Refusal | None:
    blender, host = contract.blender, contract.host
    size = len(msgspec.json.encode(op.args))
    if size > host.max_payload_bytes:
        hint = (
            f"{op.tool_name}'s arguments are {size:,} bytes; the {host.transport} host carries "
            f"at most {host.max_payload_bytes:,} in one message: split the operation"
        )
        return _refuse(op, "capability_missing", hint, True, "replace_args")
    if blender.version_tuple < tool.min_blender_version:
        need = ".".join(map(str, tool.min_blender_version))
        have = ".".join(map(str, blender.version_tuple))
        hint = f"{op.tool_name} needs Blender {need}; this bridge runs {have}"
        return _refuse(op, "capability_missing", hint, False, "drop")
    if tool.safety_mode == "ui_assisted" and blender.background:
        hint = f"{op.tool_name} needs Blender's UI; executors run headless"
        return _refuse(op, "capability_missing", hint, False, "drop")
    if op.tool_name in PYTHON_TOOLS and blender.sandbox != SANDBOX:
        hint = (
            f"{op.tool_name} needs the bubblewrap OS sandbox, which this executor's "
            "Blender bridge cannot start; Python steps never run unconfined (install "
            "the Debian package bubblewrap, or plan without Python)"
        )
        return _refuse(op, "capability_missing", hint, False, "drop")
    if tool.safety_mode == "unsafe_ops" and not contract.allow_unsafe:
        hint = (
            f"{op.tool_name} is unsafe_ops and this executor does not opt in "
            "(its operator sets BLENDMESH_ALLOW_UNSAFE_OPS=1 to allow such tools)"
        )
        return _refuse(op, "policy_refused", hint, True, "drop")
    if not contract.honours(tool.determinism_class):
        hint = (
            f"{op.tool_name} is {tool.determinism_class} and the request asked for "
            "determinism: plan without it, or ask without determinism"
        )
        return _refuse(op, "nondeterministic_refused", hint, True, "drop")
    return None
