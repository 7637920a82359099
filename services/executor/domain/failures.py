"""From a tool's spec 001 error code to the spec 000 failure contract."""

from __future__ import annotations

from contracts.bridge import ToolErrorCode, ToolResult
from contracts.failures import ErrorCode, FailureContract, RepairAction, failure

# 001 ToolResult code -> (000 error code, recoverable, repair action)
_MAP: dict[str, tuple[ErrorCode, bool, RepairAction]] = {
    "invalid_input": ("ARGS_INVALID", True, "replace_args"),
    "not_found": ("TOOL_ERROR", True, "insert_precondition"),
    "conflict": ("TOOL_ERROR", True, "replace_args"),
    "capability_missing": ("CAPABILITY_MISSING", False, "drop"),
    "policy_refused": ("POLICY_BLOCKED", True, "drop"),
    "timeout": ("TOOL_TIMEOUT", True, "retry"),
    # 000 names no determinism code: a tool that cannot give what the run asked lacks a
    # capability this run needs (docs/adr/0022).
    "nondeterministic_refused": ("CAPABILITY_MISSING", True, "drop"),
    "internal_error": ("INTERNAL_ERROR", False, "retry"),
}


def contract_code(code: str) -> ErrorCode:
    """The spec 000 error code a spec 001 ToolResult code becomes."""
    return _MAP.get(code, _MAP["internal_error"])[0]


def tool_failure(operation_id: str, tool: str, code: str | None, message: str) -> FailureContract:
    error, recoverable, action = _MAP.get(code or "internal_error", _MAP["internal_error"])
    return failure(
        error,
        f"{operation_id} ({tool}) failed: {message}",
        recoverable=recoverable,
        repair=[(operation_id, action)],
    )


def rollback_failure(operation_id: str, detail: str) -> FailureContract:
    return failure(
        "ROLLBACK_FAILED",
        f"{operation_id} failed and its checkpoint could not be restored ({detail}); "
        "the scene keeps its last saved revision",
        recoverable=False,
        repair=[(operation_id, "retry")],
    )


def unfinished(message: str, code: ToolErrorCode = "internal_error") -> ToolResult:
    """A call that did not end as the tool meant: the bridge died, timed out, or its
    result cannot be kept. It may have changed the scene (``mutated``), so the operation
    is rolled back like any failed write."""
    return ToolResult(ok=False, error_code=code, mutated=True, message=message)
