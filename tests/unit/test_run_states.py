"""Spec 002 §3 run states as contracts/fold.py derives them, one event at a time."""

from __future__ import annotations

import pytest

from contracts.events import Event, PlanningStarted, PolicyDecided, Replied, follow
from contracts.fold import fold_run, run_state_after
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
