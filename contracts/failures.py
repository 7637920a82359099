"""The failure contract of spec 000 (§Failure Contract), returned by every failure path."""

from __future__ import annotations

from typing import Literal

import msgspec

ErrorCode = Literal[
    "SCHEMA_INVALID",  # the plan does not match the operation-set schema
    "GRAPH_CYCLE",  # depends_on forms a cycle
    "GRAPH_MISSING_DEPENDENCY",  # depends_on names an operation that is not in the plan
    "GRAPH_DUPLICATE_OPERATION",  # two operations share an operation_id
    "TOOL_UNKNOWN",  # tool_name is not in the bridge registry
    "ARGS_INVALID",  # args do not match the tool's input schema
    "SAFETY_LEVEL_MISMATCH",  # the plan understates a tool's declared safety level
    "REQUEST_UNREADABLE",  # the offline planner could not read the request
    "POLICY_BLOCKED",  # the policy denied an operation
    "APPROVAL_REJECTED",  # a human rejected an operation that needed approval
    "APPROVAL_EXPIRED",  # nobody resolved the approval before it expired
    "CAPABILITY_MISSING",  # the Blender runtime lacks what a tool needs
    "TOOL_ERROR",  # the tool failed; its 001 error code is in the event
    "TOOL_TIMEOUT",  # the tool exceeded its time budget
    "IDEMPOTENCY_CONFLICT",  # a committed receipt does not fit the current scene
    "ROLLBACK_FAILED",  # restoring the consistency point failed
    "LEASE_LOST",  # another executor took the scene over; nothing was committed
    "DEPENDENCY_FAILED",  # not run because an operation it depends on failed
    "INTERNAL_ERROR",  # a bug in blendmesh; not the plan's fault
    "MODEL_ERROR",  # the model could not be reached, or refused or was blocked (spec 002 §8)
    "GATES_FAILED",  # the committed scene failed a verification gate (spec 004 §8)
    "RUN_CANCELLED",  # a person cancelled the run; nothing of it was kept
    "CATALOG_UNSERVED",  # no executor serving the run's pinned tool catalog took it in time
]

RepairAction = Literal["retry", "replace_args", "drop", "insert_precondition"]


class RepairStep(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One operation-level edit of the minimal repair plan."""

    operation_id: str
    action: RepairAction


class FailureContract(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Exactly the four fields of spec 000: what failed, whether a new plan can fix it, how.

    API users and the model read ``retry_hint``: it never carries a process's output
    (a crashed bridge's stderr, a traceback), which stays in the log of the service that
    saw it.
    """

    error_code: ErrorCode
    recoverable: bool
    retry_hint: str
    minimal_repair_plan: list[RepairStep]


def failure(
    code: ErrorCode,
    hint: str,
    *,
    recoverable: bool = True,
    repair: list[tuple[str, RepairAction]] | None = None,
) -> FailureContract:
    """Build a failure contract; ``repair`` pairs are (operation_id, action)."""
    steps = [RepairStep(operation_id=op, action=action) for op, action in repair or []]
    return FailureContract(
        error_code=code, recoverable=recoverable, retry_hint=hint, minimal_repair_plan=steps
    )
