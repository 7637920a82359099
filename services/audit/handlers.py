"""The audit consumer's handler: apply each event of the log to the views, exactly once.

Audit never produces events in the log. The live consumer and ``replay.py`` (which
``rebuild`` uses) both project through ``projection``, which is why a rebuilt database
equals the live one. The live consumer alone then publishes the records the event
produced on the audit stream (``stream.py``): a rebuild changes no record, so it
publishes none; and it alone measures the runs (``run_metrics.py``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from contracts import subjects
from contracts.audit import from_row
from contracts.events import AnyEvent, Event, RunEvent
from services.audit.projections import project
from services.audit.run_metrics import Measure, RunMetrics
from services.audit.store import Applied, Project, ViewStore
from services.audit.stream import AuditPublisher
from services.runtime.service.consumer_spec import Delivery, Handler

log = logging.getLogger("blendmesh.audit")


class EventLog(Protocol):
    """Port: the event log itself, read in order between two stream sequences."""

    def stretches(
        self, after: int, upto: int
    ) -> AsyncGenerator[Sequence[tuple[AnyEvent, Delivery]], None]:
        """The decodable events ``after < seq <= upto``, a stretch at a time."""
        ...


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
    event_log: EventLog | None = None  # None: deliveries come in order (an in-memory bus)

    def _projection(
        self, event: AnyEvent, delivery: Delivery, seen: list[Measure]
    ) -> tuple[str | None, Project]:
        run_id, writes = projection(event, delivery.stream_seq, delivery.subject)
        if self.metrics is None or run_id is None:
            return run_id, writes
        return run_id, self.metrics.observing(event, writes, seen)

    async def on_event(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        await self._fill_gap([(event, delivery)])
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
        await self._fill_gap(items)
        await self._apply(items)
        return []

    async def _fill_gap(self, items: Sequence[tuple[AnyEvent, Delivery]]) -> None:
        """Apply what the log holds up to ``items`` that they skip past, in log order.

        JetStream sends a message whose delivery was lost (a fetch answered by a server
        that then died) again only after ``ack_wait``, behind the messages that follow
        it. Applied as they came, those would move the tracking row past it and it would
        be skipped for good, so a stretch that does not start where the views stopped is
        read from the log itself; the delivered copies then count as applied before, and
        only their records are published again.
        """
        if self.event_log is None or not items:
            return
        last = await self.store.last_seq()
        ahead = [d.stream_seq for _, d in items if d.stream_seq > last]
        if ahead == list(range(last + 1, last + 1 + len(ahead))):
            return
        log.warning(
            "audit: sequences %d..%d came after %d, with a gap; reading the log between",
            min(ahead), max(ahead), last,
        )  # fmt: skip
        read = self.event_log.stretches(last, max(ahead))
        async with contextlib.aclosing(read):
            async for stretch in read:
                await self._apply(stretch)

    async def _apply(self, items: Sequence[tuple[AnyEvent, Delivery]]) -> None:
        seen: list[Measure] = []
        batch = [(d.stream_seq, *self._projection(event, d, seen)) for event, d in items]
        rows = await self.store.apply_many(batch)
        if self.metrics is not None:
            self.metrics.record(seen)
        if self.records is not None:
            await self.records.publish_many([from_row(row) for row in rows])


def subject_table(prefix: str, handlers: AuditHandlers) -> dict[str, Handler]:
    """Subject -> handler: every subject of the event log goes to ``on_event``, so the
    durable consumer needs no filter and sees events in log order."""
    return {subject: handlers.on_event for subject in subjects.stream_subjects(prefix)}
