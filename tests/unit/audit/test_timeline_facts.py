"""The facts of a run's timeline (issue 42), from the recorded history of two runs: one a
person approved, one whose operation failed and was rolled back; and their bounds."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts import events as ev
from contracts.operations import convert_operation_set
from services.audit.timeline_facts import ARGS_BUDGET, MIN_ARGS_CHARS, facts
from tests.unit.audit.test_audit_projections import load_history


def timeline(run_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (ev.event_kind(e), facts(e))
        for e in load_history()
        if isinstance(e, ev.RunEvent) and e.run_id == run_id
    ]


def of(entries: list[tuple[str, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [f for k, f in entries if k == kind]


def test_facts_when_a_person_approved_name_arguments_decision_and_approver() -> None:
    ring = timeline("run-ring")
    (planned,) = of(ring, "run.planned")
    ops = {op["operation_id"]: op for op in planned["operations"]}
    assert ops["ring"]["args"] == {"kind": "torus", "name": "Ring"}
    assert ops["drop_cube"]["safety_level"] == "destructive"
    assert planned["catalog_version"] == "cat-1"
    assert planned["blendmesh_version"] == ""  # recorded before the field: still decodes
    (decided,) = of(ring, "run.policy_decided")
    modes = {d["operation_id"]: d["mode"] for d in decided["decisions"]}
    assert modes["drop_cube"] == "require_approval" and modes["ring"] == "allow"
    (resolved,) = of(ring, "run.approval_resolved")
    (approved,) = of(ring, "run.approved")
    assert approved["approved_by"] == resolved["resolved_by"] != "policy"
    receipts = of(ring, "run.op_succeeded")
    assert {r["status"] for r in receipts} == {"succeeded"}
    assert all(r["scene_hash_before"] and r["scene_hash_after"] for r in receipts)
    assert all(r["duration_ms"] >= 0 for r in receipts)
    (executed,) = of(ring, "run.executed")
    assert executed["scene_hash"] and executed["error_code"] is None


def test_facts_when_an_operation_failed_show_the_failure_and_the_rollback() -> None:
    entries = [
        (k, f) for run in {e.run_id for e in load_history() if isinstance(e, ev.RunEvent)}
        if run != "run-ring" for k, f in timeline(run)
    ]  # fmt: skip
    (failed,) = of(entries, "run.op_failed")
    assert failed["status"] == "failed" and failed["error_code"]
    (rolled,) = of(entries, "run.op_rolled_back")
    assert rolled["operation_id"] == failed["operation_id"] and rolled["method"]
    assert rolled["scene_hash"] == failed["scene_hash_before"]
    (executed,) = of(entries, "run.executed")
    assert executed["error_code"] is not None
    (ended,) = of(entries, "run.failed")
    assert ended["error_code"] == executed["error_code"]


def planned_with(count: int, value: str) -> ev.Planned:
    ops = [
        {
            "operation_id": f"op{i}",
            "tool_name": "object.create",
            "args": {"name": value},
            "depends_on": [],
            "safety_level": "safe_write",
        }
        for i in range(count)
    ]
    return ev.Planned(
        event_id="p", at=1.0, run_id="r", request_id="q", thread_id="t", user="ana",
        scene_id="s", planner="plan", schedule=[o["operation_id"] for o in ops],
        operation_set=convert_operation_set({"request_id": "q", "operations": ops}),
        catalog_version="c",
    )  # fmt: skip


def test_facts_when_arguments_are_long_keep_an_excerpt_within_the_budget() -> None:
    planned = facts(planned_with(500, "x" * 5000))
    first = planned["operations"][0]
    assert first["args"] is None and first["args_chars"] > 5000
    assert len(first["args_excerpt"]) == MIN_ARGS_CHARS
    whole = len(msgspec.json.encode(planned))
    assert whole < 500 * (MIN_ARGS_CHARS + 200), whole  # not the 2.5 MB of the arguments


def test_facts_when_arguments_are_short_keep_them_whole() -> None:
    (op,) = facts(planned_with(1, "Ring"))["operations"]
    assert op["args"] == {"name": "Ring"} and "args_excerpt" not in op
    assert ARGS_BUDGET >= MIN_ARGS_CHARS


def test_facts_when_a_run_is_cancelled_name_who_and_why() -> None:
    cancel = ev.CancelRequested(
        event_id="c", at=2.0, run_id="r", request_id="q", thread_id="t", user="ana",
        cancelled_by="ana", reason="wrong scene",
    )  # fmt: skip
    assert facts(cancel) == {"cancelled_by": "ana", "reason": "wrong scene"}
