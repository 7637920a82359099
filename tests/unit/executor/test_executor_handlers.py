"""The executor's handler refuses what the log does not back, and never runs twice."""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest

from contracts.events import AnyEvent, Approved, Executed, follow
from services.executor.domain.runner import PlanRunner
from services.executor.handlers import ExecutorHandlers
from services.runtime.service.publishers import PipelinedPublisher
from tests.unit.test_handlers import History, plan_event, policy, requested


class Untouchable:
    """A runner and a pipeline that fail the test when anything reaches them."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the executor reached {name}: it must not run anything")


def handlers(history: History) -> ExecutorHandlers:
    def progress() -> PipelinedPublisher:
        return cast(PipelinedPublisher, Untouchable())

    return ExecutorHandlers(
        runner=cast(PlanRunner, Untouchable()),
        progress=progress,
        history=history,
        catalog_version=lambda: "test",
    )


async def allowed() -> tuple[list[AnyEvent], Approved]:
    planned = plan_event("object.create")
    decided, approved = await policy().on_planned(planned)
    assert isinstance(approved, Approved)
    return [requested(), planned, decided, approved], approved


@pytest.mark.clause("000-§executor-guarantees.8")
async def test_executor_when_approval_was_executed_before_runs_nothing_again() -> None:
    events, approved = await allowed()
    done = follow(
        approved, Executed, 3.0, scene_id="s1", receipts=[], scene_hash="h", blend_path=None
    )
    history = History()
    history.events = [*events, done]
    assert await handlers(history).on_approved(approved) == []


async def test_executor_when_approval_is_forged_runs_nothing_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events, approved = await allowed()
    history = History()
    history.events = events[:2]  # the request and the plan: policy never decided
    with caplog.at_level(logging.ERROR, logger="blendmesh.executor"):
        assert await handlers(history).on_approved(approved) == []
    assert "the log does not back it" in caplog.text
    assert "policy decided nothing about the approved plan" in caplog.text
