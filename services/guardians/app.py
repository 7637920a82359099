"""Composition root of the guardians service: gates file, artifact reader, the consumer."""

from __future__ import annotations

import shutil

from services.executor.client import SceneFiles
from services.guardians.client import revision_artifacts
from services.guardians.config import gates_file, load
from services.guardians.handlers import GuardiansHandlers, filter_subjects
from services.runtime.service import health
from services.runtime.service.consumer_spec import ConsumerSpec
from services.runtime.service.host import Bus, ConsumerService
from services.runtime.service.settings import Settings


async def start(settings: Settings, bus: Bus) -> ConsumerService:
    config = load(gates_file(settings.env))  # a bad gates file stops the start here
    work_dir = settings.work_dir / "guardians"
    files = SceneFiles(bus.js, bus.prefix)
    handlers = GuardiansHandlers(
        config=config,
        artifact=files.inspection,
        work_dir=work_dir,
        revision=revision_artifacts(files),
    )

    async def cleanup() -> None:
        shutil.rmtree(work_dir, ignore_errors=True)

    service = ConsumerService("guardians", closers=[cleanup])
    for spec in consumers(handlers, settings, bus.prefix):
        await service.add(bus, spec)
    registered = await health.register(
        bus, "guardians", health.consumer_stats(bus.js, bus.prefix, ["guardians"], service.problems)
    )
    service.closers.append(registered.stop)
    return service


def consumers(handlers: GuardiansHandlers, settings: Settings, prefix: str) -> list[ConsumerSpec]:
    """The guardians' consumers as they run them; an in-memory mesh for tests wires these."""
    return [
        ConsumerSpec(
            durable="guardians",
            filter_subjects=filter_subjects(prefix),
            handler=handlers.handle,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
        )
    ]
