"""The planner's one fold of a run (services/planner/run_state.py) and the lean states it
keeps of the runs it heard last (recent.HeardRuns)."""

from __future__ import annotations

import msgspec

from contracts.events import (
    AnyEvent,
    Executed,
    PlanRejected,
    RunCompleted,
    RunFailed,
    follow,
)
from contracts.failures import failure
from services.planner.recent import RECENT_EXECUTIONS, HeardRuns
from services.planner.run_state import RunState, backend_of, fold, step
from tests.support.planners import requested
from tests.unit.test_gates_flow import PASSED, committed, planned, verdict

PLAN = {"request_id": "q1", "operations": []}


def rejected(cause: AnyEvent) -> PlanRejected:
    contract = failure("SCHEMA_INVALID", "Write the plan again", recoverable=True)
    return follow(cause, PlanRejected, 1.0, planner="plan", failure=contract, message="bad")


def test_backend_when_a_plan_is_given_is_plan_whatever_planner_was_asked() -> None:
    assert backend_of(requested("add a cube", planner="gemini")) == "gemini"
    assert backend_of(requested(plan=PLAN, planner="gemini")) == "plan"


def test_fold_when_nothing_happened_knows_nothing() -> None:
    state = fold([])
    assert state == RunState()
    assert (state.requested, state.backend, state.plan, state.gated) == (None, None, None, None)
    assert not state.ended and state.answered == frozenset() and dict(state.executions) == {}


def test_fold_when_requests_disagree_on_the_planner_names_none() -> None:
    first = requested("add a cube", planner="rules")
    assert fold([first]).backend == "rules"
    assert fold([first, first]).backend == "rules"
    second = requested("add a cube", planner="gemini", event_id="e1")
    both = fold([first, second])
    assert both.backend == "" and both.requested is first  # the run's first request


def test_fold_when_planned_keeps_the_latest_plan_and_which_requests_it_answered() -> None:
    plan = planned()
    later = msgspec.structs.replace(
        plan, event_id="p2", causation_id="e9", requires_gate_verification=True
    )
    state = fold([requested("add a cube"), plan, later])
    assert state.plan is later and state.gated is True
    assert state.answered == frozenset({plan.causation_id, "e9"})
    assert state.planned_operations() == list(plan.operation_set.operations)
    assert fold([requested("x")]).planned_operations() == []
    refused = fold([requested("?")]).answered | step(RunState(), rejected(plan)).answered
    assert refused == frozenset({plan.event_id})


def test_planned_by_when_no_request_or_another_planner_is_false() -> None:
    plan = planned()
    assert fold([requested("x"), plan]).planned_by(plan.planner)
    assert not fold([plan]).planned_by(plan.planner)  # no request in the run
    assert not fold([requested("x"), plan]).planned_by("someone-else")
    assert not fold([requested("x")]).planned_by(plan.planner)


def test_fold_when_the_run_completes_or_fails_has_ended() -> None:
    plan = planned()
    done = committed(plan)
    assert not fold([requested("x"), plan, done]).ended
    completed = follow(
        done, RunCompleted, 4.0, summary="done", blend_path="/s1.blend", scene_hash="h"
    )
    assert fold([plan, done, completed]).ended
    contract = failure("EXECUTION_FAILED", "Look", recoverable=False)
    assert fold([plan, follow(plan, RunFailed, 4.0, failure=contract, message="m")]).ended


def test_fold_when_read_in_two_parts_equals_the_whole() -> None:
    plan = planned()
    done = committed(plan)
    events: list[AnyEvent] = [requested("x"), plan, done, verdict(done, PASSED)]
    assert fold(events[2:], fold(events[:2])) == fold(events)
    assert fold(events).events == tuple(events)


def test_lean_when_kept_drops_bodies_but_not_what_finishing_a_run_reads() -> None:
    plan = msgspec.structs.replace(planned(), requires_gate_verification=True)
    done = committed(plan)
    whole = fold([requested("x", planner="rules"), plan, done])
    lean = whole.lean()
    assert (lean.events, lean.requested, lean.plan) == ((), None, None)
    assert (lean.backend, lean.gated, lean.answered) == ("rules", True, whole.answered)
    assert dict(lean.executions) == {done.event_id: done}
    assert dict(lean.without_execution(done.event_id).executions) == {}
    assert lean.without_execution("other") is lean
    assert dict(whole.executions) == {done.event_id: done}  # a state is never changed


def test_heard_runs_when_an_execution_is_judged_gives_it_once() -> None:
    heard = HeardRuns()
    plan = planned()
    done = committed(plan)
    heard.heard(requested("x", planner="rules"))
    heard.heard(plan)
    assert heard.heard(done).executions[done.event_id] is done
    assert heard.get(plan.run_id).backend == "rules"
    assert heard.judged("other-run", done.event_id) is None
    assert heard.judged(done.run_id, done.event_id) is done
    assert heard.judged(done.run_id, done.event_id) is None
    assert heard.get("never-heard") == RunState()


def test_heard_runs_when_more_executions_than_kept_forgets_the_oldest_only() -> None:
    heard = HeardRuns()
    first = committed(planned())
    heard.heard(first)
    later: list[Executed] = [
        msgspec.structs.replace(first, event_id=f"x{n}", run_id=f"r{n}")
        for n in range(RECENT_EXECUTIONS)
    ]
    for done in later[:-1]:
        heard.heard(done)
    assert first.event_id in heard.get(first.run_id).executions  # RECENT_EXECUTIONS kept
    heard.heard(later[-1])
    assert heard.judged(first.run_id, first.event_id) is None  # pushed out: read it back
    assert all(heard.judged(d.run_id, d.event_id) is d for d in later)
