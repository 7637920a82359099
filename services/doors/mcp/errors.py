"""Spec 002 §8's error classes as MCP tool errors: a type name and a safe message.

    ToolError
    ├── ValidationError      arguments that do not match the tool's schema, a plan too large
    ├── AuthError            no authenticated user (HTTP)
    ├── NotFound             unknown, or another user's (the two look the same)
    ├── PolicyRefused        a viewer's run, refused before it starts (PolicyError)
    ├── Conflicted           a run on a scene another user has locked (Conflict)
    ├── Unavailable          the mesh or the audit service did not answer
    └── Timeout              no answer in time; the run goes on in the mesh

A failed run is a tool error too, of the class its error code belongs to (the same table
the gateway answers with). A message never echoes a plan's args, a token or a traceback.
"""

from __future__ import annotations

from contracts.errors import BlendmeshError
from contracts.failures import ErrorCode

VALIDATION, POLICY, TOOL, CONFLICT, MODEL = (
    "ValidationError",
    "PolicyError",
    "ToolExecutionError",
    "Conflict",
    "ModelError",
)

# The 002 class a failed run's error code belongs to.
FAILURE_TYPE: dict[ErrorCode, str] = {
    "SCHEMA_INVALID": VALIDATION,
    "GRAPH_CYCLE": VALIDATION,
    "GRAPH_MISSING_DEPENDENCY": VALIDATION,
    "GRAPH_DUPLICATE_OPERATION": VALIDATION,
    "TOOL_UNKNOWN": VALIDATION,
    "ARGS_INVALID": VALIDATION,
    "SAFETY_LEVEL_MISMATCH": VALIDATION,
    "REQUEST_UNREADABLE": VALIDATION,
    "POLICY_BLOCKED": POLICY,
    "APPROVAL_REJECTED": POLICY,
    "APPROVAL_EXPIRED": POLICY,
    "CAPABILITY_MISSING": TOOL,
    "TOOL_ERROR": TOOL,
    "TOOL_TIMEOUT": TOOL,
    "IDEMPOTENCY_CONFLICT": CONFLICT,
    "ROLLBACK_FAILED": TOOL,
    "LEASE_LOST": CONFLICT,
    "DEPENDENCY_FAILED": TOOL,
    "INTERNAL_ERROR": TOOL,
    "MODEL_ERROR": MODEL,
    "GATES_FAILED": TOOL,
    "RUN_CANCELLED": CONFLICT,
    "CATALOG_UNSERVED": CONFLICT,
}


def failure_type(code: ErrorCode) -> str:
    return FAILURE_TYPE.get(code, "ApiError")


class ToolError(BlendmeshError):
    """An answer other than success; ``str(exc)`` is safe to show the model and the person."""

    type_name = "ApiError"


class ValidationError(ToolError):
    type_name = VALIDATION


class AuthError(ToolError):
    type_name = "AuthError"


class NotFound(ToolError):
    type_name = "NotFound"


class PolicyRefused(ToolError):
    """Refused before a run starts: the caller's role on the scene only reads."""

    type_name = POLICY


class Conflicted(ToolError):
    """Refused before a run starts: another user holds the scene's lock."""

    type_name = CONFLICT


class Unavailable(ToolError):
    type_name = "Unavailable"


class Timeout(ToolError):
    type_name = "Timeout"
