"""Executor handlers: run what the policy approved, reporting each operation as it goes."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from contracts import subjects
from contracts.events import (
    AnyEvent,
    Approved,
    CancelRequested,
    Event,
    Executed,
    RunCompleted,
    RunFailed,
    RunRequested,
)
from contracts.health import MAX_WAITING
from services.executor.domain.authority import unbacked
from services.executor.domain.inspection import run_record
from services.executor.domain.lanes import LanePool
from services.executor.domain.pinning import Leave, pinned_elsewhere
from services.executor.domain.ports import LeaseHeld
from services.executor.domain.runner import PlanRunner
from services.runtime.service import metrics
from services.runtime.service.consumer_spec import Delivery
from services.runtime.service.errors import Retry
from services.runtime.service.publishers import PipelinedPublisher

log = logging.getLogger("blendmesh.executor")
# A handed-back run comes round every 5 s at most (pinning.MAX_DELAY), to one executor of
# several: one not seen for this long has been taken or has ended.
LEFT_SHOWN = 30.0
RunHistory = Callable[[str], Awaitable[Sequence[AnyEvent]]]


@dataclass
class ExecutorHandlers:
    runner: PlanRunner
    # Operation events go out live, not at the end of the run; all of them are stored
    # before the run's result is published.
    progress: Callable[[], PipelinedPublisher]
    history: RunHistory  # a run's events, read back from the log
    catalog_version: Callable[[], str]  # the tool catalog this executor serves
    # The pin (ADR 0053): how long a run waits for an executor of its catalog, and the
    # deliveries its message may have before the consumer loop would dead-letter it.
    catalog_wait: float = 300.0
    max_deliver: int = 100
    clock: Callable[[], float] = time.time
    # Several bridges (ADR 0070): each run takes the lane for its scene; None: ``runner``
    # alone serves every run.
    lanes: LanePool[PlanRunner] | None = None
    # Runs handed back lately, for its STATS: run id -> (what it said, when).
    _left: dict[str, tuple[str, float]] = field(default_factory=dict, init=False)

    def waiting(self) -> list[str]:
        """The runs pinned to another catalog it handed back in the last ``LEFT_SHOWN``
        seconds, newest last, at most ``MAX_WAITING``: ``blendmesh status`` says why they
        wait."""
        since = self.clock() - LEFT_SHOWN
        for run_id in [r for r, (_, at) in self._left.items() if at < since]:
            del self._left[run_id]
        return [said for said, _ in self._left.values()]

    async def on_approved(self, event: Approved, delivered: int = 1) -> Sequence[Event]:
        events = await self.history(event.run_id)
        if any(isinstance(e, Executed) and e.causation_id == event.event_id for e in events):
            # Already executed, and the result is in the log: a redelivery, or a replay
            # past the duplicate window, must not give the run a second outcome.
            return []
        if any(isinstance(e, RunCompleted | RunFailed) for e in events):
            return []  # ended before it came here (cancelled as it was approved): not run
        reason = unbacked(event, events)
        if reason is not None:
            log.error(
                "refused approval %s of run %s: the log does not back it (%s); "
                "nothing was run. Only the policy service may publish approvals: "
                "check the NATS server's permissions.",
                event.event_id,
                event.run_id,
                reason,
            )
            return []
        elsewhere = pinned_elsewhere(
            event,
            self.catalog_version(),
            now=self.clock(),
            wait=self.catalog_wait,
            delivered=delivered,
            max_deliver=self.max_deliver,
            cancel=next((e for e in events if isinstance(e, CancelRequested)), None),
        )
        self._left.pop(event.run_id, None)
        if isinstance(elsewhere, Leave):
            self._left[event.run_id] = (elsewhere.reason, self.clock())
            while len(self._left) > MAX_WAITING:
                del self._left[next(iter(self._left))]
            raise Retry(elsewhere.reason, delay=elsewhere.delay)
        if elsewhere is not None:
            log.error("run %s: %s", event.run_id, elsewhere.message)
            return [self.runner.unserved(event, elsewhere.failure, elsewhere.receipts)]
        async with self._lane(event.scene_id) as runner:
            return await self._execute(event, events, runner)

    @contextlib.asynccontextmanager
    async def _lane(self, scene_id: str) -> AsyncIterator[PlanRunner]:
        if self.lanes is None:
            yield self.runner
            return
        async with self.lanes.lane(scene_id) as runner:
            yield runner

    async def _execute(
        self, event: Approved, events: Sequence[AnyEvent], runner: PlanRunner
    ) -> Sequence[Event]:
        pipeline = self.progress()
        started = time.perf_counter()
        try:
            # The log read for the authority check also names the run's approvals.
            # Its request, found there too, names the host and any determinism asked for.
            requested = next((e for e in events if isinstance(e, RunRequested)), None)
            record = run_record(event, events)
            executed = await runner.run(event, pipeline.send, record, requested, pipeline.flush)
            metrics.executor_busy(time.perf_counter() - started)
            for receipt in executed.receipts:
                metrics.operation_ran(receipt.tool_name, receipt.status)
            # Every operation event is stored before the result that sums them up: a
            # result must never be in the log without the events it reports.
            await pipeline.settle()
            # The result goes out before the preview is rendered: nobody waits for a picture.
            await pipeline.send(executed)
        except LeaseHeld as busy:
            # Another executor writes this scene: come back when its lease may be free. Or
            # it holds the scene warm (ADR 0037): come back at once, for it to take the run.
            floor = 0.05 if busy.idle else 0.2
            raise Retry(str(busy), delay=min(max(busy.retry_in, floor), 5.0)) from None
        finally:
            await pipeline.settle()
        await runner.preview(executed)
        return []

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        match event:
            case Approved():
                return await self.on_approved(event, delivery.num_delivered)
        return []


def filter_subjects(prefix: str) -> list[str]:
    """Subject -> handler table: the executor consumes only approved plans."""
    return [subjects.any_run(prefix, "approved")]
