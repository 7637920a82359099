"""Composition root of the planner: catalog, log readers, the model adapter, the consumer."""

from __future__ import annotations

from functools import partial

from services.executor.client import KvCatalog, KvNodeCatalog, KvSceneSummaries
from services.planner.handlers import PlannerHandlers, cancel_subjects, filter_subjects
from services.planner.model.conversation import ModelPlanner
from services.planner.model.deferred import DeferredGemini
from services.planner.model.prompt import HISTORY_LIMIT
from services.planner.model.runs import ModelRuns
from services.planner.recall import RulesThreads
from services.planner.settings import GeminiSettings, PlanLimits
from services.planner.threads import read_thread
from services.runtime.nats.history import read_run, run_kinds
from services.runtime.service import health
from services.runtime.service.consumer_spec import ConsumerSpec
from services.runtime.service.host import Bus, ConsumerService
from services.runtime.service.settings import Settings

# A request waits this long for the first executor's tool catalog before it is retried: a
# mesh whose executor starts late (a Procfile, a cluster) still plans what came early.
CATALOG_WAIT = 600.0
CANCELS = "planner-cancels"  # the durable that hears cancels (cancels.py)
RULES_HISTORY = 8  # messages a rules run reads back: its thread's last few requests


async def start(settings: Settings, bus: Bus) -> ConsumerService:
    # The SDK is imported, and its client made, on the first gemini run: a mesh without a
    # key still starts, and starts without paying for the SDK.
    gemini = DeferredGemini(GeminiSettings.from_env(settings.env))
    limits = PlanLimits.from_env(settings.env, settings.max_operations)
    nodes = KvNodeCatalog(bus.js, bus.prefix)
    scenes = KvSceneSummaries(bus.js, bus.prefix)
    models = ModelRuns(
        ModelPlanner(
            model=gemini,
            scenes=scenes,
            thread=partial(read_thread, bus.js, bus.prefix, limit=HISTORY_LIMIT),
            max_operations=limits.max_operations,
            nodes=nodes,
            max_python_chars=limits.max_python_chars,
        ),
        announce=bus.publisher,  # run.planning reaches the log before the model is called
    )
    handlers = PlannerHandlers(
        catalog=KvCatalog(bus.js, bus.prefix),
        history=partial(read_run, bus.js, bus.prefix),
        kinds=partial(run_kinds, bus.js, bus.prefix),
        threads=RulesThreads(
            thread=partial(read_thread, bus.js, bus.prefix, limit=RULES_HISTORY),
            history=partial(read_run, bus.js, bus.prefix),
            announce=bus.publisher,
        ),
        models=models,
        max_operations=limits.max_operations,
        nodes=nodes,
        max_python_chars=limits.max_python_chars,
        scenes=scenes,
        catalog_wait=CATALOG_WAIT,
    )
    service = ConsumerService("planner", closers=[gemini.aclose])
    for spec in consumers(handlers, settings, bus.prefix):
        await service.add(bus, spec)
    registered = await health.register(
        bus,
        "planner",
        health.consumer_stats(bus.js, bus.prefix, ["planner", CANCELS], service.problems),
    )
    service.closers.append(registered.stop)
    return service


def consumers(handlers: PlannerHandlers, settings: Settings, prefix: str) -> list[ConsumerSpec]:
    """The planner's consumers as it runs them; an in-memory mesh for tests wires these."""
    return [
        ConsumerSpec(
            durable="planner",
            filter_subjects=filter_subjects(prefix),
            handler=handlers.handle,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
            heartbeat=True,  # a model call with retries can outlast ack_wait
        ),
        # Apart, so a cancel is heard while the main consumer waits on a model.
        ConsumerSpec(
            durable=CANCELS,
            filter_subjects=cancel_subjects(prefix),
            handler=handlers.handle,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
        ),
    ]
