"""Executor handlers: run what the policy approved, reporting each operation as it goes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contracts import subjects
from contracts.events import AnyEvent, Approved, Event
from services.executor.runner import PlanRunner
from services.runtime.bus import EventPublisher
from services.runtime.consumer import Delivery


@dataclass
class ExecutorHandlers:
    runner: PlanRunner
    publisher: EventPublisher  # operation events go out live, not at the end of the run

    async def on_approved(self, event: Approved) -> Sequence[Event]:
        async def emit(progress: Event) -> None:
            await self.publisher.publish(progress)

        return [await self.runner.run(event, emit)]

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        match event:
            case Approved():
                return await self.on_approved(event)
        return []


def filter_subjects(prefix: str) -> list[str]:
    """Subject -> handler table: the executor consumes only approved plans."""
    return [subjects.any_run(prefix, "approved")]
