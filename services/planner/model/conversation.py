"""Planning with a model: ask, validate, and send failures back until a plan holds.

``ModelPlanner`` gathers what the prompt needs (the scene summary and the thread's
history, through ports), calls the model, and validates every answer with
``intake.accept`` (an operation set, or a Geometry Nodes response compiled into one). An
invalid answer goes back with its failure contract while the repair policy allows
(``repair.py``); ``ModelError`` is left to the caller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from contracts.events import ThreadMessage
from contracts.failures import FailureContract
from contracts.geonodes import DEFAULT_MAX_PYTHON_CHARS
from contracts.limits import DEFAULT_MAX_OPERATIONS
from contracts.operations import Operation
from contracts.tools import ToolCatalog
from services.executor.client import NodeCatalogSource, SceneSummaries
from services.planner.graph import PlanInvalid, Reply, ValidPlan
from services.planner.intake import accept, node_catalog
from services.planner.model.answer import decode_answer
from services.planner.model.port import ModelClient, ModelReply
from services.planner.model.prompt import PlanContext, build_request
from services.planner.model.repair import Attempt, check_ids, may_repair, repair_turns
from services.planner.settings import PlanLimits

ThreadHistory = Callable[[str], Awaitable[Sequence[ThreadMessage]]]


async def no_history(thread_id: str) -> Sequence[ThreadMessage]:
    return []


@dataclass(frozen=True)
class Accepted:
    plan: ValidPlan | Reply  # a Reply: the model answered in words, nothing to run
    model: str
    iteration: int


@dataclass(frozen=True)
class GaveUp:
    """The last answer failed and no further iteration is allowed."""

    failure: FailureContract
    message: str
    model: str
    iteration: int


@dataclass
class ModelPlanner:
    model: ModelClient
    scenes: SceneSummaries
    thread: ThreadHistory = field(default=no_history)  # a thread's messages, from the log
    max_operations: int = DEFAULT_MAX_OPERATIONS  # BLENDMESH_MAX_OPERATIONS
    nodes: NodeCatalogSource | None = None  # the node catalog, for Geometry Nodes answers
    max_python_chars: int = DEFAULT_MAX_PYTHON_CHARS  # BLENDMESH_MAX_PYTHON_CHARS

    async def plan(
        self,
        context: PlanContext,
        thread_id: str,
        catalog: ToolCatalog,
        iteration: int = 1,
        earlier: Sequence[Attempt] = (),
        committed: dict[str, Operation] | None = None,
    ) -> Accepted | GaveUp:
        """Ask for a plan as answer number ``iteration``, after the ``earlier`` failures.

        ``committed`` are the operations earlier executions of the run applied.
        """
        nodes = await node_catalog(self.nodes, catalog)
        summary = await self.scenes.get(context.scene_id)
        history = await self.thread(thread_id)
        attempts = list(earlier)
        limits = PlanLimits(self.max_operations, self.max_python_chars)
        while True:
            turns = repair_turns(attempts)
            request = build_request(context, catalog, summary, history, turns, nodes)
            reply = await self.model.generate(request)
            try:
                raw = _decoded(reply, context.request_id)
                if isinstance(raw, Reply):
                    return Accepted(raw, reply.model, iteration)
                plan = accept(raw, context.request_id, catalog, nodes, limits)
                if isinstance(plan, ValidPlan):
                    check_ids(plan.operation_set.operations, committed or {})
            except PlanInvalid as exc:
                if not may_repair(iteration, exc.failure):
                    return GaveUp(exc.failure, exc.message, reply.model, iteration)
                attempts.append(Attempt(reply.text, exc.failure, exc.message))
                iteration += 1
                continue
            return Accepted(plan, reply.model, iteration)


def _decoded(reply: ModelReply, request_id: str) -> object:
    try:
        return decode_answer(reply.text, request_id)
    except PlanInvalid as exc:
        if reply.finish_reason != "MAX_TOKENS":
            raise
        cut = "the answer was cut off at the output token limit; send fewer operations"
        raise PlanInvalid(
            msgspec.structs.replace(exc.failure, retry_hint=f"{exc.failure.retry_hint} ({cut})"),
            f"{exc.message} ({cut})",
        ) from None
