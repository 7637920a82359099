"""Composition root of the executor: bridge child process, catalog, runner, consumer."""

from __future__ import annotations

from contracts.tools import catalog_from_mcp
from services.executor.handlers import ExecutorHandlers, filter_subjects
from services.executor.runner import PlanRunner
from services.executor.scenes import SceneFiles
from services.executor.supervisor import SupervisedBridge
from services.runtime.bus import JetStreamPipeline
from services.runtime.catalog import KvCatalog
from services.runtime.consumer import ConsumerSpec
from services.runtime.host import Bus, ConsumerService
from services.runtime.scene_summaries import KvSceneSummaries
from services.runtime.settings import Settings


async def start(settings: Settings, bus: Bus) -> ConsumerService:
    bridge = SupervisedBridge(call_timeout=settings.op_timeout)
    tools = await bridge.start()
    catalog = catalog_from_mcp(tools, str(bridge.profile.get("version", "unknown")))
    await KvCatalog(bus.js, bus.prefix).publish(catalog)
    runner = PlanRunner(
        bridge=bridge,
        scenes=SceneFiles(settings.scenes_dir),
        work_dir=settings.work_dir / "checkpoints",
        op_timeout=settings.op_timeout,
        summaries=KvSceneSummaries(bus.js, bus.prefix),
    )
    handlers = ExecutorHandlers(
        runner=runner, progress=lambda: JetStreamPipeline(bus.js, bus.prefix)
    )
    service = ConsumerService("executor", closers=[bridge.close])
    await service.add(
        bus,
        ConsumerSpec(
            durable="executor",
            filter_subjects=filter_subjects(bus.prefix),
            handler=handlers.handle,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
            heartbeat=True,
        ),
    )
    return service
