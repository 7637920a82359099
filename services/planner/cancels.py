"""A cancelled run, as the planner honours it (``run.cancel_requested``).

The planner ends a run the executor holds no part of: one being planned (a model call in
flight is cancelled), waiting for approval, or between a model's turns. A run the
executor has been handed, and not finished, is the executor's to stop: it runs nothing
after the operation in hand, rolls the run back and reports ``RUN_CANCELLED``, which
ends the run here like any failed execution. A run whose last execution is in the log
already ends as that execution says: the cancel came too late to change anything.

The cancel has a consumer of its own, so it is heard while the main consumer waits on a
model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field

from contracts.cancels import CANCELLED, cancelled
from contracts.events import (
    AnyEvent,
    Approved,
    CancelRequested,
    Event,
    Executed,
    RunFailed,
    RunRequested,
    follow,
)
from contracts.failures import FailureContract
from contracts.fold import latest
from services.planner.model.runs import ModelRuns
from services.planner.run_state import fold


def was_cancelled(event: Executed) -> tuple[FailureContract, str] | None:
    """An execution the executor stopped for a cancel: it ends the run, and no model is
    asked to repair it."""
    if event.failure is None or event.failure.error_code != CANCELLED:
        return None
    return event.failure, event.message


def executor_holds(events: Sequence[AnyEvent]) -> bool:
    """Whether the run's last approval went to the executor and has no result yet."""
    approved = latest(events, Approved)
    if approved is None:
        return False
    return not any(isinstance(e, Executed) and e.causation_id == approved.event_id for e in events)


def finishing(events: Sequence[AnyEvent]) -> bool:
    """Whether the run's last execution is in the log: its end is on its way."""
    approved = latest(events, Approved)
    last = latest(events, Executed)
    return approved is not None and last is not None and last.causation_id == approved.event_id


def ends_here(events: Sequence[AnyEvent], model_run: bool) -> bool:
    """Whether the planner ends a cancelled run (the module's docstring says when)."""
    if fold(events).ended or executor_holds(events):
        return False
    return model_run or not finishing(events)


def outcome(
    cancel: CancelRequested, events: Sequence[AnyEvent], models: ModelRuns | None, now: float
) -> list[Event]:
    """What the planner publishes for ``cancel``, given the run's ``events``: the run's
    failure (with the thread's message, for a model's run), or nothing."""
    requested = next((e for e in events if isinstance(e, RunRequested)), None)
    name = requested.plan is None and requested.planner if requested is not None else None
    model = models is not None and name == models.name
    if not ends_here(events, model):
        return []
    contract, text = cancelled(cancel)
    out: list[Event] = [follow(cancel, RunFailed, now, failure=contract, message=text)]
    if model and models is not None:
        out.append(models.ended(cancel, contract, text, now))
    return out


@dataclass
class InFlight:
    """The model calls under way, by run: a cancel stops its run's call."""

    _calls: dict[str, asyncio.Task[Sequence[Event]]] = field(default_factory=dict)

    async def run(self, run_id: str, call: Awaitable[Sequence[Event]]) -> Sequence[Event]:
        """Await ``call``; what it would have published is dropped (nothing) when the run
        is cancelled meanwhile. The caller's own cancellation always goes through."""
        task = asyncio.ensure_future(call)
        self._calls[run_id] = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and (current is None or not current.cancelling()):
                return []  # stopped by ``stop``: the cancel ends the run
            raise
        finally:
            if self._calls.get(run_id) is task:
                del self._calls[run_id]

    def stop(self, run_id: str) -> bool:
        """Cancel the run's model call, if one is under way."""
        task = self._calls.get(run_id)
        return task is not None and task.cancel()
