"""OperationGraph validation and scheduling (spec 000 Phase 1, Executor Guarantees 1)."""

from __future__ import annotations

from typing import Any

import pytest

from services.planner.graph import PlanInvalid, validate
from tests.support.catalog_fixture import CATALOG


def op(
    op_id: str,
    tool: str = "scene.snapshot",
    deps: list[str] | None = None,
    level: str = "read_only",
    args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": args or {},
        "depends_on": deps or [],
        "safety_level": level,
    }


def plan(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"request_id": "req-1", "operations": list(ops)}


def rejected(raw: Any) -> PlanInvalid:
    with pytest.raises(PlanInvalid) as info:
        validate(raw, CATALOG)
    return info.value


@pytest.mark.clause("000-§executor-guarantees.2")
def test_schedule_when_independent_ops_uses_lexical_tie_break() -> None:
    valid = validate(plan(op("c"), op("a"), op("b")), CATALOG)
    assert valid.schedule == ["a", "b", "c"]


@pytest.mark.clause("000-§planning.3", "000-§execution.2", "000-§executor-guarantees.2")
def test_schedule_when_dependencies_orders_topologically_then_lexically() -> None:
    valid = validate(plan(op("a", deps=["z"]), op("z"), op("m"), op("b", deps=["a"])), CATALOG)
    assert valid.schedule == ["m", "z", "a", "b"]


@pytest.mark.clause("000-§execution.2", "000-§executor-guarantees.1", "001-§plan.1")
def test_schedule_when_same_graph_twice_is_identical() -> None:
    raw = plan(
        *(op(f"op{i}", deps=[f"op{i - 1}"] if i % 3 and i > 1 else []) for i in range(1, 30))
    )
    assert validate(raw, CATALOG).schedule == validate(raw, CATALOG).schedule


@pytest.mark.clause("000-§planning.6", "000-§failure-contract.4")
def test_validate_when_cycle_rejects_with_graph_cycle() -> None:
    exc = rejected(plan(op("a", deps=["c"]), op("b", deps=["a"]), op("c", deps=["b"])))
    assert exc.failure.error_code == "GRAPH_CYCLE"
    assert exc.failure.recoverable
    assert [s.action for s in exc.failure.minimal_repair_plan] == ["drop"]
    assert "a -> b -> c" in exc.message


@pytest.mark.clause("000-§planning.6", "000-§failure-contract.4")
def test_validate_when_self_dependency_rejects_with_graph_cycle() -> None:
    assert rejected(plan(op("a", deps=["a"]))).failure.error_code == "GRAPH_CYCLE"


@pytest.mark.clause("000-§planning.5")
def test_validate_when_missing_dependency_rejects_naming_it() -> None:
    exc = rejected(plan(op("a", deps=["ghost"])))
    assert exc.failure.error_code == "GRAPH_MISSING_DEPENDENCY"
    assert exc.failure.minimal_repair_plan[0].operation_id == "a"
    assert exc.failure.minimal_repair_plan[0].action == "insert_precondition"
    assert "a -> ghost" in exc.message


@pytest.mark.clause("000-§planning.7", "000-§planner-schema.6")
def test_validate_when_unknown_tool_rejects_listing_registered_tools() -> None:
    exc = rejected(plan(op("a", tool="python.exec")))
    assert exc.failure.error_code == "TOOL_UNKNOWN"
    assert "object.create" in exc.failure.retry_hint
    assert "'python.exec'" in exc.message


@pytest.mark.clause("000-§planning.4", "000-§planner-schema.1", "000-§failure-contract.3")
def test_validate_when_extra_property_rejects_with_schema_invalid() -> None:
    raw = plan(op("a"))
    raw["operations"][0]["note"] = "x"
    exc = rejected(raw)
    assert exc.failure.error_code == "SCHEMA_INVALID"
    assert "note" in exc.message


@pytest.mark.clause("000-§planning.1", "000-§planning.4", "000-§failure-contract.3")
def test_validate_when_not_json_text_rejects_with_schema_invalid() -> None:
    assert rejected("{nope").failure.error_code == "SCHEMA_INVALID"


def test_validate_when_duplicate_ids_rejects() -> None:
    exc = rejected(plan(op("a"), op("a")))
    assert exc.failure.error_code == "GRAPH_DUPLICATE_OPERATION"


@pytest.mark.clause("000-§planner-schema.9")
def test_validate_when_safety_level_understated_rejects() -> None:
    exc = rejected(plan(op("a", tool="object.delete", level="safe_write", args={"name": "x"})))
    assert exc.failure.error_code == "SAFETY_LEVEL_MISMATCH"


def test_validate_when_safety_level_overstated_accepts() -> None:
    valid = validate(plan(op("a", tool="scene.snapshot", level="destructive")), CATALOG)
    assert valid.schedule == ["a"]
    # The plan keeps the stricter level it declared, so policy treats it as destructive.
    assert [o.safety_level for o in valid.operation_set.operations] == ["destructive"]


@pytest.mark.clause("000-§planner-schema.7", "001-§validate-input.1")
def test_validate_when_args_break_tool_schema_rejects_with_args_invalid() -> None:
    exc = rejected(
        plan(
            op(
                "a",
                tool="object.create",
                level="safe_write",
                args={"primitive": "cube", "location": [0, 0]},
            )
        )
    )
    assert exc.failure.error_code == "ARGS_INVALID"
    assert "location" in exc.message
    assert exc.failure.minimal_repair_plan[0].action == "replace_args"
