"""Executor handlers: run what the policy approved, reporting each operation as it goes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contracts import subjects
from contracts.events import AnyEvent, Approved, Event
from services.executor.ports import LeaseHeld
from services.executor.runner import PlanRunner
from services.runtime.bus import PipelinedPublisher
from services.runtime.consumer import Delivery
from services.runtime.errors import Retry


@dataclass
class ExecutorHandlers:
    runner: PlanRunner
    # Operation events go out live, not at the end of the run; all of them are stored
    # before the run's result is published.
    progress: Callable[[], PipelinedPublisher]

    async def on_approved(self, event: Approved) -> Sequence[Event]:
        pipeline = self.progress()
        try:
            executed = await self.runner.run(event, pipeline.send)
            # The result goes out before the preview is rendered: nobody waits for a picture.
            await pipeline.send(executed)
        except LeaseHeld as busy:
            # Another executor writes this scene: come back when its lease may be free.
            raise Retry(str(busy), delay=min(max(busy.retry_in, 0.2), 5.0)) from None
        finally:
            await pipeline.settle()
        await self.runner.preview(executed)
        return []

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        match event:
            case Approved():
                return await self.on_approved(event)
        return []


def filter_subjects(prefix: str) -> list[str]:
    """Subject -> handler table: the executor consumes only approved plans."""
    return [subjects.any_run(prefix, "approved")]
