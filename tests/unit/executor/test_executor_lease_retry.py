"""A run whose scene another executor holds comes back later: soon when that executor
holds it warm and idle (ADR 0037), when its lease may be free when it runs something."""

from __future__ import annotations

from typing import Any, cast

import pytest

from services.executor.domain.ports import LeaseHeld
from services.executor.domain.runner import PlanRunner
from services.executor.domain.session import WARM_RETRY
from services.executor.handlers import ExecutorHandlers
from services.runtime.service.errors import Retry
from services.runtime.service.publishers import PipelinedPublisher
from tests.unit.executor.test_executor_handlers import allowed
from tests.unit.test_handlers import History


class Busy:
    """A runner whose scene is held by another executor, and a pipeline that sends nothing."""

    def __init__(self, held: LeaseHeld) -> None:
        self.held = held
        self.sent: list[Any] = []

    async def run(self, *args: Any) -> Any:
        raise self.held

    async def send(self, event: Any) -> None:
        self.sent.append(event)

    async def settle(self) -> None:
        return None

    def flush(self) -> None:
        return None


@pytest.mark.parametrize(
    ("held", "delay"),
    [
        (LeaseHeld("s1", "exec-2", WARM_RETRY, idle=True, epoch=3), WARM_RETRY),
        (LeaseHeld("s1", "exec-2", 0.0, idle=True, epoch=3), 0.05),
        (LeaseHeld("s1", "exec-2", 0.01), 0.2),
        (LeaseHeld("s1", "exec-2", 2.5), 2.5),
        (LeaseHeld("s1", "exec-2", 30.0), 5.0),
    ],
)
async def test_executor_when_scene_is_held_elsewhere_retries_after_a_bounded_delay(
    held: LeaseHeld, delay: float
) -> None:
    events, approved = await allowed()
    history = History()
    history.events = events
    busy = Busy(held)
    handlers = ExecutorHandlers(
        runner=cast(PlanRunner, busy),
        progress=lambda: cast(PipelinedPublisher, busy),
        history=history,
        catalog_version=lambda: "test",
    )
    with pytest.raises(
        Retry, match="held warm by exec-2" if held.idle else "being written"
    ) as info:
        await handlers.on_approved(approved)
    assert info.value.delay == pytest.approx(delay)
    assert busy.sent == []  # no outcome for a run that did not run
