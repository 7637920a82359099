"""Policy decisions by safety level (DESIGN §3 defaults, spec 002 §6)."""

from __future__ import annotations

from contracts.operations import Operation
from services.policy.engine import SafetyLevelPolicy
from tests.catalog_fixture import CATALOG


def decide(tool: str, level: str) -> str:
    op = Operation(operation_id="a", tool_name=tool, args={}, depends_on=[], safety_level=level)  # type: ignore[arg-type]
    return SafetyLevelPolicy().decide("ana", op, CATALOG.get(tool)).mode


def test_decide_when_read_only_allows() -> None:
    assert decide("scene.snapshot", "read_only") == "allow"


def test_decide_when_safe_write_allows() -> None:
    assert decide("object.create", "safe_write") == "allow"


def test_decide_when_destructive_requires_approval() -> None:
    assert decide("object.delete", "destructive") == "require_approval"


def test_decide_when_plan_declares_destructive_for_safe_tool_requires_approval() -> None:
    assert decide("object.create", "destructive") == "require_approval"


def test_decide_when_tool_unknown_denies() -> None:
    assert decide("python.exec", "read_only") == "deny"


def test_decision_when_made_names_policy_ids() -> None:
    op = Operation(
        operation_id="a",
        tool_name="object.delete",
        args={},
        depends_on=[],
        safety_level="destructive",
    )
    decision = SafetyLevelPolicy().decide("ana", op, CATALOG.get("object.delete"))
    assert decision.policy_ids == ["blendmesh.safety-levels.v1#approve-destructive"]
