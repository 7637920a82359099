"""Planner handlers for the unit tests of the planner's logic, built one way.

The rules planner on a fixed tool catalog and a fixed clock, so event times and ids are
the same on every run; a test adds what its behaviour reads (a run's history, scene
summaries, a node catalog, a limit), or a scripted model for the gemini backend.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from contracts.events import AnyEvent, RunRequested, ThreadMessage
from contracts.limits import DEFAULT_MAX_OPERATIONS
from contracts.tools import ToolCatalog
from services.executor.client import CatalogSource, NodeCatalogSource, SceneSummaries
from services.executor.memory import MemorySceneSummaries, StaticCatalog
from services.planner.handlers import PlannerHandlers, RunHistory, RunKinds
from services.planner.model.conversation import ModelPlanner, no_history
from services.planner.model.port import ModelClient
from services.planner.model.runs import ModelRuns
from tests.support.catalog_fixture import CATALOG

NOW = 5.0  # every event the planner makes is at this time

ThreadReader = Callable[[str], Awaitable[Sequence[ThreadMessage]]]


def requested(prompt: str | None = None, plan: Any = None, **fields: Any) -> RunRequested:
    """ana's request (run r1, request q1, thread t1, scene s1) as the planner hears it;
    ``fields`` replace any of those, or name the planner asked for."""
    ids: dict[str, Any] = {
        "event_id": "e0",
        "at": 0.0,
        "run_id": "r1",
        "request_id": "q1",
        "thread_id": "t1",
        "user": "ana",
        "scene_id": "s1",
    }
    return RunRequested(**{**ids, "prompt": prompt, "plan": plan, **fields})


class Log:
    """A planner's ``history``: the events given, read back per run in the order given."""

    def __init__(self, *events: AnyEvent) -> None:
        self.events = list(events)

    async def __call__(self, run_id: str) -> Sequence[AnyEvent]:
        return [e for e in self.events if getattr(e, "run_id", None) == run_id]


def planner(
    catalog: ToolCatalog | None = CATALOG,
    *,
    source: CatalogSource | None = None,
    history: RunHistory | None = None,
    kinds: RunKinds | None = None,
    scenes: SceneSummaries | None = None,
    nodes: NodeCatalogSource | None = None,
    models: ModelRuns | None = None,
    max_operations: int = DEFAULT_MAX_OPERATIONS,
    catalog_wait: float = 0.0,
) -> PlannerHandlers:
    """The planner on ``catalog`` (None: no executor has published one yet) at ``NOW``;
    or on ``source``, for a test that publishes a catalog while the planner waits."""
    return PlannerHandlers(
        catalog=source or StaticCatalog(catalog),
        clock=lambda: NOW,
        history=history,
        kinds=kinds,
        scenes=scenes,
        nodes=nodes,
        models=models,
        max_operations=max_operations,
        catalog_wait=catalog_wait,
    )


def model_planner(
    model: ModelClient,
    catalog: ToolCatalog = CATALOG,
    *,
    history: RunHistory | None = None,
    thread: ThreadReader = no_history,
    nodes: NodeCatalogSource | None = None,
) -> PlannerHandlers:
    """The planner whose gemini backend asks ``model``, reading a thread's earlier messages
    from ``thread``; the model and the planner read the same node catalog."""
    models = ModelRuns(ModelPlanner(model, MemorySceneSummaries(), thread, nodes=nodes))
    return planner(catalog, history=history, nodes=nodes, models=models)
