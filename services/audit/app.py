"""Composition root of the audit service: the store, the consumer, the query responders."""

from __future__ import annotations

from services.audit.handlers import AuditHandlers
from services.audit.queries import QueryResponders
from services.audit.replay import JetStreamLog
from services.audit.run_metrics import WAITING, RunMetrics
from services.audit.store import SqliteStore
from services.audit.stream import JetStreamAuditPublisher
from services.runtime.nats.audit_log import ensure_audit_log
from services.runtime.service import health
from services.runtime.service.consumer_spec import ConsumerSpec
from services.runtime.service.host import Bus, ConsumerService
from services.runtime.service.settings import Settings

DURABLE = "audit"
BATCH = 64  # events one transaction of the live views applies at most


async def start(settings: Settings, bus: Bus) -> ConsumerService:
    return await serve(await SqliteStore.open(settings.audit_db), settings, bus)


async def serve(store: SqliteStore, settings: Settings, bus: Bus) -> ConsumerService:
    """The service on an opened ``store``, which it closes when it stops (or fails to
    start)."""
    service = ConsumerService("audit", closers=[store.close])
    try:
        responders = QueryResponders(bus, store)
        service.closers.append(responders.stop)  # closers run in reverse: responders first
        await responders.start()
        await ensure_audit_log(bus.js, bus.prefix, bus.ready_wait)
        measured = RunMetrics()
        measured.start(await store.runs_in(WAITING))
        service.closers.append(measured.close)
        records = JetStreamAuditPublisher(bus.js, bus.prefix, bus.nc)
        handlers = AuditHandlers(store, records, measured, JetStreamLog(bus.js, bus.prefix))
        for spec in consumers(handlers, settings):
            await service.add(bus, spec)
        registered = await health.register(
            bus, "audit", health.consumer_stats(bus.js, bus.prefix, [DURABLE], service.problems)
        )
        service.closers.append(registered.stop)
    except BaseException:
        await service.stop()
        raise
    return service


def consumers(handlers: AuditHandlers, settings: Settings) -> list[ConsumerSpec]:
    """Audit's consumer as it runs it; an in-memory mesh for tests wires this."""
    return [
        ConsumerSpec(
            durable=DURABLE,
            # handlers.subject_table sends every subject of the log to on_event: no
            # filter, so the one consumer sees the whole log in order.
            filter_subjects=[],
            handler=handlers.on_event,
            # What is waiting is applied together, up to BATCH events: the views keep up
            # with a busy log at one commit per batch. A delivery that skips ahead of the
            # views makes the handler read the log between (ADR 0041).
            batch=BATCH,
            batch_handler=handlers.on_events,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
            max_ack_pending=BATCH,
        )
    ]
