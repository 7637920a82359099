"""Each spec 001 ToolResult code becomes one spec 000 failure contract: its code, whether a
follow-up plan may safely repair it (000 §Failure Contract: ``recoverable``), and how."""

from __future__ import annotations

import pytest

from services.executor.domain.failures import contract_code, rollback_failure, tool_failure

# 001 code -> (000 code, recoverable, repair action). recoverable is true exactly when the
# model can safely issue a follow-up plan: wrong arguments, a missing object, a timeout or
# a policy refusal a person can lift are; a Blender without the capability, or a bridge
# that broke, are not (the same plan would fail the same way, or worse).
EXPECTED = {
    "invalid_input": ("ARGS_INVALID", True, "replace_args"),
    "not_found": ("TOOL_ERROR", True, "insert_precondition"),
    "conflict": ("TOOL_ERROR", True, "replace_args"),
    "capability_missing": ("CAPABILITY_MISSING", False, "drop"),
    "policy_refused": ("POLICY_BLOCKED", True, "drop"),
    "timeout": ("TOOL_TIMEOUT", True, "retry"),
    "nondeterministic_refused": ("CAPABILITY_MISSING", True, "drop"),
    "internal_error": ("INTERNAL_ERROR", False, "retry"),
}


@pytest.mark.parametrize(("code", "expected"), sorted(EXPECTED.items()))
@pytest.mark.clause("000-§failure-contract.1", "000-§failure-contract.9")
def test_tool_failure_when_a_tool_fails_with_a_001_code_gives_its_000_contract(
    code: str, expected: tuple[str, bool, str]
) -> None:
    contract = tool_failure("op07", "object.create", code, "it broke")
    repair = [(s.operation_id, s.action) for s in contract.minimal_repair_plan]
    assert (contract.error_code, contract.recoverable, repair[0][1]) == expected
    assert repair == [("op07", expected[2])]
    assert contract.retry_hint == "op07 (object.create) failed: it broke"
    assert contract_code(code) == expected[0]


@pytest.mark.clause("000-§failure-contract.9")
def test_tool_failure_when_the_code_is_unknown_or_missing_is_an_internal_error() -> None:
    for code in (None, "teapot"):
        contract = tool_failure("op01", "object.create", code, "?")
        assert (contract.error_code, contract.recoverable) == ("INTERNAL_ERROR", False)
    assert contract_code("teapot") == "INTERNAL_ERROR"


@pytest.mark.clause("000-§executor-guarantees.12", "000-§failure-contract.9")
def test_rollback_failure_when_the_checkpoint_cannot_be_restored_is_not_recoverable() -> None:
    contract = rollback_failure("op03", "disk full")
    assert (contract.error_code, contract.recoverable) == ("ROLLBACK_FAILED", False)
    assert [(s.operation_id, s.action) for s in contract.minimal_repair_plan] == [("op03", "retry")]
    assert "disk full" in contract.retry_hint
