"""An executor takes only runs pinned to the tool catalog it serves (ADR 0053): one of
another catalog hands the run back, and the run fails CATALOG_UNSERVED only once the wait
or the deliveries are spent, never by a dead letter."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import msgspec
import pytest

from contracts.events import AnyEvent, Approved, CancelRequested, Executed, follow
from contracts.health import MAX_WAITING
from services.executor.domain.pinning import MAX_DELAY, Leave, Unserved, pinned_elsewhere
from services.executor.domain.runner import PlanRunner
from services.executor.handlers import LEFT_SHOWN, ExecutorHandlers
from services.runtime.service.errors import Retry
from services.runtime.service.publishers import PipelinedPublisher
from tests.support.fake_bridge import FakeBridge
from tests.support.runner_contract import runner
from tests.unit.executor.test_executor_handlers import Untouchable, allowed
from tests.unit.executor.test_executor_inspection import Sent
from tests.unit.test_handlers import History


async def pinned(version: str) -> tuple[list[AnyEvent], Approved]:
    events, approved = await allowed()
    assert approved.catalog_version == "test", "policy copies the plan's catalog into the approval"
    return events, msgspec.structs.replace(approved, catalog_version=version)


async def test_pin_when_catalog_matches_runs_here() -> None:
    _, approved = await pinned("v1")
    assert pinned_elsewhere(approved, "v1", now=0, wait=60, delivered=1, max_deliver=100) is None


async def test_pin_when_approval_predates_the_pin_runs_on_any_executor() -> None:
    _, approved = await pinned("")
    assert pinned_elsewhere(approved, "v2", now=0, wait=60, delivered=1, max_deliver=100) is None


@pytest.mark.parametrize(("delivered", "delay"), [(1, 0.5), (2, 0.75), (3, 1.125), (40, MAX_DELAY)])
async def test_pin_when_catalog_differs_hands_back_after_a_bounded_delay(
    delivered: int, delay: float
) -> None:
    _, approved = await pinned("v1")
    left = pinned_elsewhere(
        approved, "v2", now=approved.at + 1, wait=60, delivered=delivered, max_deliver=100
    )
    assert isinstance(left, Leave)
    assert left.delay == pytest.approx(delay)
    assert "pinned to tool catalog v1" in left.reason and "serves v2" in left.reason


async def test_pin_when_wait_is_spent_fails_unserved_with_every_operation_skipped() -> None:
    _, approved = await pinned("v1")
    ended = pinned_elsewhere(
        approved, "v2", now=approved.at + 61, wait=60, delivered=3, max_deliver=100
    )
    assert isinstance(ended, Unserved)
    assert ended.failure.error_code == "CATALOG_UNSERVED"
    assert "v1" in ended.message and "v2" in ended.message
    assert "BLENDMESH_CATALOG_WAIT" in ended.message
    assert [r.status for r in ended.receipts] == ["skipped"] * len(approved.schedule)


async def test_pin_when_deliveries_are_nearly_spent_ends_before_a_dead_letter() -> None:
    _, approved = await pinned("v1")
    assert isinstance(
        pinned_elsewhere(approved, "v2", now=approved.at, wait=60, delivered=98, max_deliver=100),
        Leave,
    )
    assert isinstance(
        pinned_elsewhere(approved, "v2", now=approved.at, wait=60, delivered=99, max_deliver=100),
        Unserved,
    )


async def test_executor_when_run_is_pinned_elsewhere_retries_and_touches_nothing() -> None:
    events, approved = await pinned("v1")
    history = History()
    history.events = [*events[:-1], approved]
    handlers = ExecutorHandlers(
        runner=cast(PlanRunner, Untouchable()),
        progress=lambda: cast(PipelinedPublisher, Untouchable()),
        history=history,
        catalog_version=lambda: "v2",
        clock=lambda: approved.at + 1,
    )
    with pytest.raises(Retry, match="left for an executor of v1"):
        await handlers.on_approved(approved, delivered=1)


async def test_executor_when_no_executor_served_the_pin_publishes_unserved_result(
    tmp_path: Path,
) -> None:
    events, approved = await pinned("v1")
    history = History()
    history.events = [*events[:-1], approved]
    sent = Sent()
    plans = runner(FakeBridge(), tmp_path)
    handlers = ExecutorHandlers(
        runner=plans,
        progress=lambda: cast(PipelinedPublisher, Untouchable()),
        history=history,
        catalog_version=lambda: plans.catalog().version,
        catalog_wait=5.0,
        clock=lambda: approved.at + 6,
    )
    (executed,) = await handlers.on_approved(approved, delivered=2)
    assert isinstance(executed, Executed) and executed.failure is not None
    assert executed.failure.error_code == "CATALOG_UNSERVED"
    assert executed.revision is None and executed.blend_path is None
    assert executed.catalog_version == plans.catalog().version != "v1"
    assert sent.events == []  # nothing ran, so no operation events


async def test_pin_when_a_waiting_run_is_cancelled_ends_it_at_once() -> None:
    _, approved = await pinned("v1")
    cancel = follow(approved, CancelRequested, approved.at + 1, cancelled_by="ana", reason="late")
    ended = pinned_elsewhere(
        approved, "v2", now=approved.at + 1, wait=60, delivered=1, max_deliver=100, cancel=cancel
    )
    assert isinstance(ended, Unserved)
    assert ended.failure.error_code == "RUN_CANCELLED"
    assert ended.message == "ana cancelled the run: late"


async def test_executor_when_it_handed_runs_back_lists_them_for_status_then_forgets() -> None:
    events, approved = await pinned("v1")
    history = History()
    history.events = [*events[:-1], approved]
    now = [approved.at + 1]
    handlers = ExecutorHandlers(
        runner=cast(PlanRunner, Untouchable()),
        progress=lambda: cast(PipelinedPublisher, Untouchable()),
        history=history,
        catalog_version=lambda: "v2",
        catalog_wait=60.0,
        clock=lambda: now[0],
    )
    with pytest.raises(Retry):
        await handlers.on_approved(approved, delivered=1)
    (said,) = handlers.waiting()
    assert f"run {approved.run_id} is pinned to tool catalog v1" in said
    assert "fails CATALOG_UNSERVED in 59 s" in said
    now[0] += LEFT_SHOWN + 1
    assert handlers.waiting() == []


async def test_executor_when_many_runs_wait_lists_at_most_the_newest_twenty() -> None:
    events, approved = await pinned("v1")
    history = History()
    handlers = ExecutorHandlers(
        runner=cast(PlanRunner, Untouchable()),
        progress=lambda: cast(PipelinedPublisher, Untouchable()),
        history=history,
        catalog_version=lambda: "v2",
        clock=lambda: approved.at + 1,
    )
    for i in range(MAX_WAITING + 5):
        run = msgspec.structs.replace(approved, run_id=f"r{i}")
        history.events = [*events[:-1], run]
        with pytest.raises(Retry):
            await handlers.on_approved(run, delivered=1)
    listed = handlers.waiting()
    assert len(listed) == MAX_WAITING
    assert "run r5 " in listed[0] and f"run r{MAX_WAITING + 4} " in listed[-1]
