"""Composition root of the planner: catalog adapter, handlers, durable consumer."""

from __future__ import annotations

from services.planner.handlers import PlannerHandlers, filter_subjects
from services.runtime.catalog import KvCatalog
from services.runtime.consumer import ConsumerSpec
from services.runtime.host import Bus, ConsumerService
from services.runtime.settings import Settings


async def start(settings: Settings, bus: Bus) -> ConsumerService:
    handlers = PlannerHandlers(catalog=KvCatalog(bus.js, bus.prefix))
    service = ConsumerService("planner")
    await service.add(
        bus,
        ConsumerSpec(
            durable="planner",
            filter_subjects=filter_subjects(bus.prefix),
            handler=handlers.handle,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
        ),
    )
    return service
