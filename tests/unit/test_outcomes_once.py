"""A replay of the log past the duplicate window gives no run a second outcome."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.events import (
    AnyEvent,
    DeadLettered,
    Executed,
    Planned,
    RunCompleted,
    RunFailed,
    event_kind,
    follow,
)
from contracts.failures import failure
from services.planner.handlers import PlannerHandlers
from tests.support.planners import planner
from tests.unit.test_handlers import History, requested


def executed(with_failure: bool) -> Executed:
    return follow(
        requested(),
        Executed,
        1.0,
        scene_id="s1",
        receipts=[],
        scene_hash="h",
        blend_path=None,
        failure=failure("TOOL_ERROR", "retry") if with_failure else None,
    )


async def test_planner_when_run_completed_before_ignores_a_replayed_failed_execution() -> None:
    history = History()
    ok = executed(with_failure=False)
    (done,) = await planner(history=history).on_executed(ok)
    assert isinstance(done, RunCompleted)
    history.events = [requested(), ok, done]
    assert await planner(history=history).on_executed(executed(with_failure=True)) == []


async def test_planner_when_run_failed_before_ignores_a_replayed_execution() -> None:
    history = History()
    bad = executed(with_failure=True)
    (failed,) = await planner(history=history).on_executed(bad)
    assert isinstance(failed, RunFailed)
    history.events = [requested(), bad, failed]
    assert await planner(history=history).on_executed(executed(with_failure=False)) == []


async def test_planner_when_request_planned_before_plans_nothing_new() -> None:
    history = History()
    request = requested(prompt="add a cube named Box")
    (planned,) = await planner(history=history).on_requested(request)
    history.events = [request, planned]
    assert await planner(history=history).on_requested(request) == []


async def test_planner_when_run_open_still_completes_it() -> None:
    history = History()
    history.events = [requested()]
    execution = executed(with_failure=False)
    (done,) = await planner(history=history).on_executed(execution)
    assert isinstance(done, RunCompleted) and done.causation_id == execution.event_id
    assert done.summary == "0 of 0 operations applied to scene s1"


def dead_letter(consumer: str = "policy", subject: str = "bm.run.r1.planned") -> DeadLettered:
    return DeadLettered(
        event_id="dl1",
        at=3.0,
        consumer=consumer,
        subject=subject,
        stream_seq=42,
        deliveries=5,
        reason="OverflowError: int too large to convert to float",
        payload="{}",
    )


async def test_planner_when_a_runs_event_is_dead_lettered_fails_the_run() -> None:
    history = History()
    history.events = [requested()]
    (failed,) = await planner(history=history).on_dead_letter(dead_letter())
    assert isinstance(failed, RunFailed) and failed.run_id == "r1"
    assert failed.failure.error_code == "INTERNAL_ERROR"
    assert "policy service could not process this run's planned event" in failed.message
    assert "OverflowError" not in failed.message + failed.failure.retry_hint


async def test_planner_when_dead_letter_is_audits_or_not_a_runs_leaves_runs_alone() -> None:
    history = History()
    history.events = [requested()]
    assert await planner(history=history).on_dead_letter(dead_letter(consumer="audit")) == []
    assert (
        await planner(history=history).on_dead_letter(dead_letter(subject="bm.thread.t1.message"))
        == []
    )


async def test_planner_when_dead_lettered_run_already_ended_adds_nothing() -> None:
    history = History()
    ok = executed(with_failure=False)
    (done,) = await planner(history=history).on_executed(ok)
    history.events = [requested(), ok, done]
    assert await planner(history=history).on_dead_letter(dead_letter()) == []


class CountedHistory(History):
    """A history that counts its reads, and answers which kinds of event it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def __call__(self, run_id: str) -> Sequence[AnyEvent]:
        self.reads += 1
        return self.events

    async def kinds(self, run_id: str) -> set[str]:
        return {event_kind(e).removeprefix("run.") for e in self.events}


def counted(history: CountedHistory) -> PlannerHandlers:
    return planner(history=history, kinds=history.kinds)


async def test_planner_when_request_is_new_plans_without_reading_the_run_back() -> None:
    history = CountedHistory()
    request = requested(prompt="add a cube named Box")
    history.events = [request]
    (planned,) = await counted(history).on_requested(request)
    assert isinstance(planned, Planned) and history.reads == 0


async def test_planner_when_kinds_show_a_plan_reads_the_run_and_plans_nothing_new() -> None:
    history = CountedHistory()
    request = requested(prompt="add a cube named Box")
    (planned,) = await counted(history).on_requested(request)
    history.events = [request, planned]
    assert await counted(history).on_requested(request) == []
    assert history.reads == 1


async def heard(history: CountedHistory) -> PlannerHandlers:
    """A planner that planned run r1 itself, as the same planner does before its execution."""
    handlers = counted(history)
    request = requested(prompt="add a cube named Box")
    (planned,) = await handlers.on_requested(request)
    history.events = [request, planned]
    return handlers


async def test_planner_when_no_model_is_wired_finishes_without_reading_the_run_back() -> None:
    history = CountedHistory()
    handlers = await heard(history)
    (done,) = await handlers.on_executed(executed(with_failure=False))
    assert isinstance(done, RunCompleted) and history.reads == 0


async def test_planner_when_kinds_show_the_run_ended_gives_no_second_outcome() -> None:
    history = CountedHistory()
    handlers = await heard(history)
    ok = executed(with_failure=False)
    (done,) = await handlers.on_executed(ok)
    history.events = [*history.events, ok, done]
    assert await counted(history).on_executed(executed(with_failure=True)) == []
    assert history.reads == 0


async def test_planner_when_it_did_not_plan_an_ungated_run_reads_it_once_for_its_gates() -> None:
    """After a restart the planner cannot know whether the plan required gates (004 §7)."""
    history = CountedHistory()
    history.events = [requested()]
    (done,) = await counted(history).on_executed(executed(with_failure=False))
    assert isinstance(done, RunCompleted) and history.reads == 1
