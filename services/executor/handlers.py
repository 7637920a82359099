"""Executor handlers: run what the policy approved, reporting each operation as it goes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contracts import subjects
from contracts.events import AnyEvent, Approved, Event
from services.executor.runner import PlanRunner
from services.runtime.bus import PipelinedPublisher
from services.runtime.consumer import Delivery


@dataclass
class ExecutorHandlers:
    runner: PlanRunner
    # Operation events go out live, not at the end of the run; all of them are stored
    # before the run's result is published.
    progress: Callable[[], PipelinedPublisher]

    async def on_approved(self, event: Approved) -> Sequence[Event]:
        pipeline = self.progress()
        executed = await self.runner.run(event, pipeline.send)
        await pipeline.settle()
        return [executed]

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        match event:
            case Approved():
                return await self.on_approved(event)
        return []


def filter_subjects(prefix: str) -> list[str]:
    """Subject -> handler table: the executor consumes only approved plans."""
    return [subjects.any_run(prefix, "approved")]
