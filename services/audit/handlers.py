"""The audit consumer's handler: apply each event of the log to the views, exactly once.

Audit never produces events in the log. The live consumer and ``replay.py`` (which
``rebuild`` uses) both project through ``projection``, which is why a rebuilt database
equals the live one. The live consumer alone then publishes the records the event
produced on the audit stream (``stream.py``): a rebuild changes no record, so it
publishes none; and it alone measures the runs (``run_metrics.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from contracts import subjects
from contracts.audit import from_row
from contracts.events import AnyEvent, Event, RunEvent
from services.audit.projections import project
from services.audit.run_metrics import Measure, RunMetrics
from services.audit.store import Applied, Project, ViewStore
from services.audit.stream import AuditPublisher
from services.runtime.consumer_spec import Delivery, Handler


def projection(event: AnyEvent, seq: int, subject: str = "") -> tuple[str | None, Project]:
    """The run ``event`` belongs to and what projecting it writes."""
    if subjects.signed_run_id(subject) is not None:
        # Not a fact yet: the copy the planner or policy passes on once checked is (ADR
        # 0010). Tracked all the same, so the views count as caught up with the log.
        return None, lambda _view: []
    run_id = event.run_id if isinstance(event, RunEvent) else None
    return run_id, partial(project, event, seq)


async def apply_event(store: ViewStore, event: AnyEvent, seq: int, subject: str = "") -> Applied:
    """Project ``event`` (stream sequence ``seq``), unless it was applied before."""
    run_id, writes = projection(event, seq, subject)
    return await store.apply(seq, run_id, writes)


@dataclass
class AuditHandlers:
    store: ViewStore
    records: AuditPublisher | None = None
    metrics: RunMetrics | None = None  # the live consumer's; a rebuild measures nothing

    def _projection(
        self, event: AnyEvent, delivery: Delivery, seen: list[Measure]
    ) -> tuple[str | None, Project]:
        run_id, writes = projection(event, delivery.stream_seq, delivery.subject)
        if self.metrics is None or run_id is None:
            return run_id, writes
        return run_id, self.metrics.observing(event, writes, seen)

    async def on_event(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        seen: list[Measure] = []
        applied = await self.store.apply(
            delivery.stream_seq, *self._projection(event, delivery, seen)
        )
        if self.metrics is not None:
            self.metrics.record(seen)  # committed: each is measured once
        if self.records is not None:
            # Also when the event was applied before: a crash between the commit and the
            # publish must not lose the record, and its message id drops a second copy.
            for row in applied.records:
                await self.records.publish(from_row(row))
        return []

    async def on_events(self, items: Sequence[tuple[AnyEvent, Delivery]]) -> Sequence[Event]:
        """A stretch of the log in one transaction (the consumer's batch mode), then its
        records, published together: one fsync of the views and one wait for the stream
        per batch instead of per event."""
        seen: list[Measure] = []
        batch = [(d.stream_seq, *self._projection(event, d, seen)) for event, d in items]
        rows = await self.store.apply_many(batch)
        if self.metrics is not None:
            self.metrics.record(seen)
        if self.records is not None:
            await self.records.publish_many([from_row(row) for row in rows])
        return []


def subject_table(prefix: str, handlers: AuditHandlers) -> dict[str, Handler]:
    """Subject -> handler: every subject of the event log goes to ``on_event``, so the
    durable consumer needs no filter and sees events in log order."""
    return {subject: handlers.on_event for subject in subjects.stream_subjects(prefix)}
