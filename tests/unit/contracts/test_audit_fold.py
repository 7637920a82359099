"""Folding a run's events into its state and result (spec 002 §3), as the CLI does live."""

from __future__ import annotations

from typing import Any

import pytest

from contracts import events as ev
from contracts.failures import failure
from contracts.fold import action_states, fold_run, is_terminal, run_state_after
from contracts.operations import Operation, OperationSet
from contracts.receipts import Receipt, RunResult

REQ = ev.RunRequested(
    event_id="r1",
    at=1.0,
    run_id="run1",
    request_id="req1",
    thread_id="th1",
    user="ana",
    scene_id="shot",
    prompt="add a cube",
)
OPS = [
    Operation(
        operation_id="cube",
        tool_name="object.create",
        args={},
        depends_on=[],
        safety_level="safe_write",
    ),
    Operation(
        operation_id="wipe",
        tool_name="object.delete",
        args={},
        depends_on=["cube"],
        safety_level="destructive",
    ),
]
OPSET = OperationSet(request_id="req1", operations=OPS)
BROKE = failure("TOOL_ERROR", "fix the args")


def _of_execution(kind: type[Any]) -> bool:
    return kind in (
        ev.OperationStarted,
        ev.OperationSucceeded,
        ev.OperationFailed,
        ev.OperationRolledBack,
        ev.OperationSkipped,
        ev.Executed,
    )


class Run:
    """Builds one run's events in order, each caused by the previous one (an execution's
    by its Approved)."""

    def __init__(self) -> None:
        self.events: list[ev.AnyEvent] = [REQ]

    def then(self, kind: type[Any], index: int = 0, **fields: Any) -> Run:
        last = self.events[-1]
        assert isinstance(last, ev.RunEvent)
        # Like the executor, an execution's events are all caused by its Approved.
        cause = self.execution if _of_execution(kind) and self.execution else last
        self.events.append(ev.follow(cause, kind, last.at + 1, index, **fields))
        return self

    @property
    def execution(self) -> ev.Approved | None:
        return next((e for e in reversed(self.events) if isinstance(e, ev.Approved)), None)

    def planned(self, model: str | None = None) -> Run:
        return self.then(
            ev.Planned,
            scene_id="shot",
            planner="gemini" if model else "rules",
            model=model,
            operation_set=OPSET,
            schedule=["cube", "wipe"],
            catalog_version="c1",
        )

    def approved(self) -> Run:
        return self.then(
            ev.Approved,
            scene_id="shot",
            operation_set=OPSET,
            schedule=["cube", "wipe"],
            approved_by="policy",
        )

    def op(self, op_id: str, status: str = "succeeded", after: str = "h1") -> Run:
        op = next(o for o in OPS if o.operation_id == op_id)
        self.then(
            ev.OperationStarted,
            operation_id=op_id,
            tool_name=op.tool_name,
            mcp_call_id=f"m-{op_id}",
            scene_hash_before="h0",
        )
        receipt = Receipt(
            operation_id=op_id,
            tool_name=op.tool_name,
            safety_level=op.safety_level,
            status=status,  # type: ignore[arg-type]
            scene_hash_before="h0",
            scene_hash_after=after,
        )
        if status == "failed":
            return self.then(
                ev.OperationFailed,
                operation_id=op_id,
                mcp_call_id=f"m-{op_id}",
                receipt=receipt,
                failure=BROKE,
            )
        return self.then(
            ev.OperationSucceeded,
            operation_id=op_id,
            mcp_call_id=f"m-{op_id}",
            blender_mutation_id=f"b-{op_id}",
            receipt=receipt,
        )

    def receipts(self) -> list[Receipt]:
        return [
            e.receipt
            for e in self.events
            if isinstance(e, ev.OperationSucceeded | ev.OperationFailed)
        ]

    def result(self) -> RunResult:
        result = fold_run(self.events)
        assert result is not None
        return result


@pytest.mark.clause("002-§run-states.5", "002-§action-states.4", "002-§core-loop.15")
def test_fold_when_run_completes_reports_receipts_and_summary() -> None:
    run = Run().planned().then(ev.PolicyDecided, decisions=[], policy_set="p1").approved()
    run.op("cube").op("wipe", after="h2")
    run.then(
        ev.Executed,
        scene_id="shot",
        receipts=run.receipts(),
        scene_hash="h2",
        blend_path="shot.blend",
    )
    run.then(ev.RunCompleted, summary="2 of 2 applied", blend_path=None, scene_hash="h2")
    result = run.result()
    assert (result.status, result.message, result.planner) == (
        "completed",
        "2 of 2 applied",
        "rules",
    )
    assert (result.run_id, result.request_id, result.thread_id, result.scene_id, result.user) == (
        "run1",
        "req1",
        "th1",
        "shot",
        "ana",
    )
    assert [r.operation_id for r in result.receipts] == ["cube", "wipe"]
    assert (result.blend_path, result.scene_hash, result.failure) == ("shot.blend", "h2", None)
    assert is_terminal(result)
    assert action_states(run.events) == {"cube": "completed", "wipe": "completed"}


@pytest.mark.clause("002-§run-states.6")
def test_fold_when_plan_rejected_fails_at_planning() -> None:
    rejected = failure("TOOL_UNKNOWN", "use a known tool", recoverable=False)
    run = Run().then(ev.PlanRejected, planner="rules", failure=rejected, message="no tool x")
    result = run.result()
    assert (result.status, result.failure, result.message) == ("failed", rejected, "no tool x")
    assert result.planner == "rules" and is_terminal(result)
    assert action_states(run.events) == {}


@pytest.mark.clause(
    "002-§run-states.3", "002-§action-states.1", "002-§action-states.2", "002-§core-loop.9"
)
def test_fold_when_approval_requested_is_awaiting_with_pending_ops() -> None:
    run = Run().planned(model="gemini-2.5-flash")
    run.then(ev.ApprovalRequested, approval_id="a1", operation_ids=["wipe"], reason="destructive")
    result = run.result()
    assert (result.status, result.pending_operations) == ("awaiting_confirmation", ["wipe"])
    assert (result.planner, result.model) == ("gemini", "gemini-2.5-flash")
    assert is_terminal(result)
    assert action_states(run.events) == {"cube": "planned", "wipe": "awaiting_confirmation"}


@pytest.mark.clause("002-§run-states.4")
def test_fold_when_approved_then_completed_leaves_awaiting() -> None:
    run = Run().planned()
    run.then(ev.ApprovalRequested, approval_id="a1", operation_ids=["wipe"], reason="d")
    run.then(ev.ApprovalResolved, approval_id="a1", decision="approve_once", resolved_by="ana")
    assert run.result().status == "awaiting_confirmation"  # resolved keeps the state
    run.approved()
    assert run.result().status == "executing" and not is_terminal(run.result())
    assert run.result().pending_operations == []
    run.op("cube")
    assert run.result().receipts == run.receipts()  # before Executed: the op receipts so far
    run.op("wipe").then(
        ev.Executed, scene_id="shot", receipts=run.receipts(), scene_hash="h1", blend_path=None
    )
    run.then(ev.RunCompleted, summary="done", blend_path=None, scene_hash="h1")
    assert (run.result().status, run.result().message) == ("completed", "done")
    assert action_states(run.events) == {"cube": "completed", "wipe": "completed"}


@pytest.mark.clause("002-§action-states.6", "002-§approvals.3")
def test_fold_when_approval_rejected_is_failed_and_ops_rejected() -> None:
    blocked = failure("APPROVAL_REJECTED", "drop the delete", recoverable=True)
    run = Run().planned()
    run.then(ev.ApprovalRequested, approval_id="a1", operation_ids=["wipe"], reason="d")
    run.then(ev.ApprovalResolved, approval_id="a1", decision="reject", resolved_by="ana")
    run.then(ev.Denied, failure=blocked, message="ana rejected wipe", operation_ids=["wipe"])
    assert (run.result().status, run.result().message) == ("failed", "ana rejected wipe")
    run.then(ev.RunFailed, failure=blocked, message="run failed: wipe rejected")
    result = run.result()
    assert (result.status, result.failure, result.message) == (
        "failed",
        blocked,
        "run failed: wipe rejected",
    )
    assert action_states(run.events) == {"cube": "planned", "wipe": "rejected"}


@pytest.mark.clause("002-§action-states.5", "002-§run-states.6", "000-§executor-guarantees.13")
def test_fold_when_op_fails_and_rolls_back_is_failed() -> None:
    run = Run().planned().approved().op("cube").op("wipe", status="failed")
    run.then(
        ev.OperationRolledBack,
        operation_id="wipe",
        mcp_call_id="m-wipe",
        method="checkpoint",
        scene_hash="h0",
    )
    assert run.result().status == "executing"
    assert action_states(run.events) == {"cube": "completed", "wipe": "failed"}
    run.then(ev.OperationSkipped, operation_id="cube", reason="already applied")
    assert action_states(run.events)["cube"] == "completed"  # skipped keeps the state
    run.then(
        ev.Executed,
        scene_id="shot",
        receipts=run.receipts(),
        scene_hash="h0",
        blend_path=None,
        failure=BROKE,
        message="wipe failed",
    )
    run.then(ev.RunFailed, failure=BROKE, message="wipe failed")
    result = run.result()
    assert (result.status, result.failure, result.message) == ("failed", BROKE, "wipe failed")
    assert [r.status for r in result.receipts] == ["succeeded", "failed"]


def test_fold_when_no_run_requested_returns_none() -> None:
    assert fold_run([]) is None
    assert fold_run(Run().planned().events[1:]) is None


def test_run_state_after_when_event_changes_nothing_keeps_state() -> None:
    resolved = ev.follow(
        REQ, ev.ApprovalResolved, 2.0, approval_id="a", decision="reject", resolved_by="ana"
    )
    assert run_state_after("awaiting_confirmation", resolved) == "awaiting_confirmation"
    assert run_state_after(None, REQ) == "queued"


def _executed(run: Run, receipts: list[Receipt]) -> Run:
    return run.then(
        ev.Executed, scene_id="shot", receipts=receipts, scene_hash="h2", blend_path="shot.blend"
    )


def test_fold_when_op_events_arrive_after_executed_keeps_its_receipts() -> None:
    """A reconnect can store an execution's re-published events after its Executed."""
    run = Run().planned().approved()
    run.op("cube").op("wipe", after="h2")
    late = run.events[-2:]  # wipe started and succeeded, stored again later
    _executed(run, run.receipts())
    run.events.extend(late)
    assert [r.operation_id for r in run.result().receipts] == ["cube", "wipe"]


def test_fold_when_op_events_arrive_after_completion_stays_completed() -> None:
    run = Run().planned().approved()
    run.op("cube").op("wipe", after="h2")
    late = run.events[-2:]
    _executed(run, run.receipts())
    run.then(ev.RunCompleted, summary="2 of 2 applied", blend_path=None, scene_hash="h2")
    run.events.extend(late)
    result = run.result()
    assert result.status == "completed" and len(result.receipts) == 2
    assert run_state_after("failed", late[-1]) == "failed"


def test_fold_when_repair_runs_a_new_execution_reports_only_its_receipts() -> None:
    run = Run().planned().approved()
    run.op("cube", status="failed")
    _executed(run, run.receipts())
    run.planned(model="gemini-x").approved()  # the repaired plan, approved again
    run.op("wipe", after="h3")
    result = run.result()
    assert result.status == "executing"
    assert [(r.operation_id, r.status) for r in result.receipts] == [("wipe", "succeeded")]


@pytest.mark.clause("002-§action-states.1", "002-§action-states.3", "002-§action-states.4")
def test_action_states_when_an_operation_runs_go_planned_executing_completed() -> None:
    run = Run().planned().approved()
    assert action_states(run.events) == {"cube": "planned", "wipe": "planned"}
    run.then(
        ev.OperationStarted,
        operation_id="cube",
        tool_name="object.create",
        mcp_call_id="m-cube",
        scene_hash_before="h0",
    )
    assert action_states(run.events) == {"cube": "executing", "wipe": "planned"}
    run.events.pop()
    run.op("cube")
    assert action_states(run.events) == {"cube": "completed", "wipe": "planned"}
