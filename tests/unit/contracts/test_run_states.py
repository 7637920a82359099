"""Spec 002 §3 run states as contracts/fold.py derives them, one event at a time."""

from __future__ import annotations

import msgspec
import pytest

from contracts.events import (
    Event,
    OperationStarted,
    PlanningStarted,
    PolicyDecided,
    Replied,
    follow,
)
from contracts.fold import action_times, fold_run, run_state_after
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
