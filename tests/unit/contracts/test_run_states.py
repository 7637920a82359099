"""Spec 002 §3 run states as contracts/fold.py derives them, one event at a time."""

from __future__ import annotations

import msgspec
import pytest

from contracts.events import (
    Event,
    Executed,
    OperationStarted,
    PlanningStarted,
    PolicyDecided,
    Replied,
    RunFailed,
    follow,
)
from contracts.failures import failure
from contracts.fold import action_times, fold_run, run_state_after
from services.planner.outcomes import completed
from tests.unit.test_model_handlers import REQUESTED, planned_at

STARTED = follow(REQUESTED, PlanningStarted, 0.5, planner="gemini")


@pytest.mark.clause("002-§run-states.1")
def test_run_state_when_requested_is_queued() -> None:
    assert run_state_after(None, REQUESTED) == "queued"
    result = fold_run([REQUESTED])
    assert result is not None and result.status == "queued"


@pytest.mark.clause("002-§run-states.2", "002-§core-loop.4")
def test_run_state_when_planner_starts_is_planning_before_any_plan() -> None:
    assert run_state_after("queued", STARTED) == "planning"
    result = fold_run([REQUESTED, STARTED])
    assert result is not None and result.status == "planning" and result.planner == "gemini"


@pytest.mark.clause("002-§run-states.2")
@pytest.mark.parametrize(
    "event",
    [
        planned_at(1),
        follow(planned_at(1), PolicyDecided, 1.5, decisions=[], policy_set="blendmesh.v1"),
        follow(STARTED, Replied, 1.0, planner="gemini", text="hi"),
    ],
    ids=["planned", "policy_decided", "replied"],
)
def test_run_state_when_planned_decided_or_replied_is_still_planning(event: Event) -> None:
    assert run_state_after("queued", event) == "planning"
    assert run_state_after("planning", event) == "planning"


def test_run_state_when_final_stays_final_after_a_late_planning_event() -> None:
    assert run_state_after("completed", STARTED) == "completed"


@pytest.mark.clause("002-§audit.8")
def test_action_times_when_run_goes_on_are_planned_then_last_changed() -> None:
    planned = planned_at(1)
    again = planned_at(2)  # a repair plan: its operations start afresh
    events = [REQUESTED, STARTED, planned, msgspec.structs.replace(again, at=4.0)]
    times = action_times(events)
    assert times == {"op01": (4.0, 4.0), "op02": (4.0, 4.0)}
    started = follow(
        planned, OperationStarted, 2.5, operation_id="op01", tool_name="object.create",
        mcp_call_id="m1", scene_hash_before="h",
    )  # fmt: skip
    assert action_times([REQUESTED, planned, started]) == {
        "op01": (1.0, 2.5),
        "op02": (1.0, 1.0),
    }


def executed(renders_preview: bool, revision: int | None = 1) -> Executed:
    return follow(
        planned_at(1),
        Executed,
        2.0,
        scene_id="s1",
        receipts=[],
        scene_hash="h1",
        blend_path="s1.blend",
        revision=revision,
        renders_preview=renders_preview,
    )


@pytest.mark.parametrize("renders", [True, False])
def test_result_says_whether_a_picture_of_the_revision_comes(renders: bool) -> None:
    done = executed(renders)
    whole = fold_run([REQUESTED, STARTED, done, completed(done, 3.0)])
    # A client that hears only the run's end (docs/bus.md) knows it too.
    heard_the_end = fold_run([REQUESTED, completed(done, 3.0)])
    assert whole is not None and whole.renders_preview is renders
    assert heard_the_end is not None and heard_the_end.renders_preview is renders


def test_result_of_a_run_still_executing_or_failed_promises_no_picture() -> None:
    done = executed(True)
    failed = follow(done, RunFailed, 3.0, failure=failure("GATES_FAILED", "x"), message="x")
    for events in ([REQUESTED, done], [REQUESTED, done, failed]):
        result = fold_run(events)
        assert result is not None and result.renders_preview is False
