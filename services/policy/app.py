"""Composition root of the policy service."""

from __future__ import annotations

from functools import partial

from services.policy.engine import SafetyLevelPolicy
from services.policy.handlers import PolicyHandlers, filter_subjects
from services.runtime.catalog import KvCatalog
from services.runtime.consumer import ConsumerSpec
from services.runtime.history import read_run
from services.runtime.host import Bus, ConsumerService
from services.runtime.settings import Settings


async def start(settings: Settings, bus: Bus) -> ConsumerService:
    handlers = PolicyHandlers(
        engine=SafetyLevelPolicy(),
        catalog=KvCatalog(bus.js, bus.prefix),
        history=partial(read_run, bus.js, bus.prefix),
    )
    service = ConsumerService("policy")
    await service.add(
        bus,
        ConsumerSpec(
            durable="policy",
            filter_subjects=filter_subjects(bus.prefix),
            handler=handlers.handle,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
        ),
    )
    return service
