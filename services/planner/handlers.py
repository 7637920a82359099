"""Planner handlers: a request becomes a validated plan; an outcome ends the run.

The planner owns the run's beginning and end (docs/architecture.md): it turns ``run.requested``
into ``run.planned`` or ``run.plan_rejected``, and turns ``run.executed`` or
``run.denied`` into the terminal ``run.completed`` / ``run.failed``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from contracts import subjects
from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    CancelRequested,
    DeadLettered,
    Denied,
    Event,
    Executed,
    GatesEvaluated,
    Planned,
    PlanRejected,
    RunFailed,
    RunRequested,
    follow,
)
from contracts.failures import failure
from contracts.gates import awaits_gates
from contracts.geonodes import DEFAULT_MAX_PYTHON_CHARS
from contracts.limits import DEFAULT_MAX_OPERATIONS
from contracts.nodes import NodeCatalog
from contracts.scenes import SceneSummary
from contracts.tools import ToolCatalog
from services.executor.client import CatalogSource, NodeCatalogSource, SceneSummaries
from services.planner import cancels
from services.planner.backends.plan import plan_given
from services.planner.backends.rules import plan_rules
from services.planner.gates import gates_failure, unverified
from services.planner.graph import PlanInvalid, Reply, ValidPlan
from services.planner.intake import needs_nodes, node_catalog
from services.planner.model.runs import ModelRuns
from services.planner.outcomes import completed, dead_run, naming_step, replied, unreadable_request
from services.planner.recall import RulesThreads
from services.planner.recent import HeardRuns
from services.planner.run_state import RunState, backend_of, fold
from services.planner.settings import PlanLimits
from services.planner.versions import planned_by
from services.runtime.nats.retry import poll
from services.runtime.service.consumer_spec import Delivery
from services.runtime.service.errors import Retry

# The services whose dead letters leave a run open; audit's only miss a projection.
log = logging.getLogger("blendmesh.planner")

RUN_SERVICES = ("planner", "policy", "executor", "guardians")
CATALOG_POLL = 0.5  # seconds between looks for the first tool catalog
RunHistory = Callable[[str], Awaitable[Sequence[AnyEvent]]]
RunKinds = Callable[[str], Awaitable[set[str]]]
# The kinds of event that say a request was planned (or refused) already.
PLAN_KINDS = frozenset({"planned", "plan_rejected"})
# The kinds of event that end a run: a run has one outcome.
END_KINDS = frozenset({"completed", "failed"})
# A request whose run has one of these was ended or cancelled before it was planned.
NOT_TO_PLAN = END_KINDS | {"cancel_requested"}


@dataclass
class PlannerHandlers:
    catalog: CatalogSource
    clock: Callable[[], float] = field(default=time.time)
    history: RunHistory | None = None  # a run's events, read back from the log
    models: ModelRuns | None = None  # the gemini backend, where it is wired in
    max_operations: int = DEFAULT_MAX_OPERATIONS  # BLENDMESH_MAX_OPERATIONS
    nodes: NodeCatalogSource | None = None  # the node catalog, for Geometry Nodes plans
    max_python_chars: int = DEFAULT_MAX_PYTHON_CHARS  # BLENDMESH_MAX_PYTHON_CHARS
    scenes: SceneSummaries | None = None  # what the rules planner knows of a scene
    # Which kinds of event a run has: one cheap question before reading a run back.
    kinds: RunKinds | None = None
    # Each thread's last rules run, for `it`, `the copy` and `again` (recall.py).
    threads: RulesThreads = field(default_factory=RulesThreads)
    # Seconds a request waits in hand for the first executor's tool catalog before it is
    # retried (and, at last, dead-lettered): a mesh whose executor starts late still plans
    # it. 0: retry at once (the in-memory tests).
    catalog_wait: float = 0.0
    # What the planner heard of each recent run, so finishing it needs no read of the log.
    _heard: HeardRuns = field(default_factory=HeardRuns, init=False, repr=False)
    _models: cancels.InFlight = field(default_factory=cancels.InFlight, init=False, repr=False)

    async def _catalog(self) -> ToolCatalog:
        return await self._present(await self.catalog.get())

    async def _present(self, catalog: ToolCatalog | None) -> ToolCatalog:
        """The catalog, waiting for an executor to publish one when there is none yet."""
        if catalog is None and self.catalog_wait > 0:
            log.info("no tool catalog yet: waiting up to %g s for an executor", self.catalog_wait)
            catalog = await poll(
                self.catalog.get,
                lambda found: found is not None,
                self.catalog_wait,
                pause=CATALOG_POLL,
            )
        return _present(catalog)

    def _plain(self, run_id: str) -> bool:
        """Whether no model planned ``run_id``, known without reading the log: its request,
        heard by this planner, asked for another planner (or there is no model)."""
        if self.models is None:
            return True
        backend = self._heard.get(run_id).backend
        return bool(backend) and backend != self.models.name

    async def _read(self, run_id: str) -> RunState | None:
        """The run folded from its events read back from the log; None without a log."""
        return fold(await self.history(run_id)) if self.history is not None else None

    async def _kinds(self, run_id: str) -> set[str] | None:
        """Which kinds of event the run has (one cheap question before reading the run
        back), or None when the mesh gives no such question."""
        return await self.kinds(run_id) if self.kinds is not None else None

    def _model_run(self, state: RunState | None) -> Sequence[AnyEvent] | None:
        """The run's events when a model planned it, else None."""
        if self.models is None or state is None or not state.planned_by(self.models.name):
            return None
        return state.events

    async def _planned_before(self, event: RunRequested) -> bool:
        if self.history is None:
            return False
        kinds = await self._kinds(event.run_id)
        if kinds is not None and kinds & NOT_TO_PLAN:
            return True  # ended or cancelled before it was planned: nothing to plan
        if kinds is not None and not PLAN_KINDS & kinds:
            return False  # nothing planned in this run yet: no need to read it back
        state = await self._read(event.run_id)
        return state is not None and event.event_id in state.answered

    async def on_requested(self, event: RunRequested) -> Sequence[Event]:
        self._heard.heard(event)
        # Two round trips at once: the handlers of every service share one event loop.
        before, published = await asyncio.gather(self._planned_before(event), self.catalog.get())
        if before:
            return []  # planned before: a replay past the duplicate window plans nothing new
        catalog = await self._present(published)
        backend = backend_of(event)
        if self.models is not None and backend == self.models.name:
            call = self.models.requested(event, catalog, self.clock())
            return await self._models.run(event.run_id, call)
        nodes = None
        if backend == "rules" or needs_nodes(event.plan):
            nodes = await node_catalog(self.nodes, catalog)
        scene = None
        if backend == "rules":
            await self.threads.heard(event, self.clock())
            scene = await self.scenes.get(event.scene_id) if self.scenes is not None else None
        try:
            plan = self._plan(event, backend, catalog, nodes, scene)
        except PlanInvalid as exc:
            return self._rejected(event, backend, exc)
        if isinstance(plan, Reply):
            return replied(event, backend, plan.text, self.clock())
        log.info(
            "planned %d operations with the %s planner", len(plan.operation_set.operations), backend
        )
        planned = [
            follow(
                event,
                Planned,
                self.clock(),
                scene_id=event.scene_id,
                planner=backend,
                operation_set=plan.operation_set,
                schedule=plan.schedule,
                catalog_version=catalog.version,
                pre_approved=event.pre_approved,
                rollback_boundary=event.rollback_boundary,
                done=plan.done,
                requires_gate_verification=plan.requires_gate_verification,
                **planned_by(catalog),
            )
        ]
        self._heard.heard(planned[0])  # whether its execution must pass the gates (004 §7)
        return planned

    def _plan(
        self,
        event: RunRequested,
        backend: str,
        catalog: ToolCatalog,
        nodes: NodeCatalog | None,
        scene: SceneSummary | None = None,
    ) -> ValidPlan | Reply:
        if backend == "plan":
            limits = PlanLimits(self.max_operations, self.max_python_chars)
            return plan_given(event.plan, event.request_id, catalog, nodes, limits)
        if backend == "rules":
            return plan_rules(
                event, catalog, nodes, scene, self.threads.memory, self.max_operations
            )
        raise PlanInvalid(
            failure("REQUEST_UNREADABLE", "Use the rules or plan planner", recoverable=False),
            f"planner {backend!r} is not available in this mesh; use 'rules' or 'plan'",
        )

    def _rejected(self, event: RunRequested, backend: str, exc: PlanInvalid) -> Sequence[Event]:
        now = self.clock()
        return [
            follow(
                event, PlanRejected, now, planner=backend, failure=exc.failure, message=exc.message
            ),
            follow(event, RunFailed, now, failure=exc.failure, message=exc.message),
        ]

    async def on_executed(self, event: Executed) -> Sequence[Event]:
        if awaits_gates(event):
            # The guardians judge the committed revision first: on_gates goes on, with
            # this execution at hand instead of read back from the log.
            self._heard.heard(event)
            return []
        return await self._executed(event)

    async def _executed(
        self,
        event: Executed,
        gates: GatesEvaluated | None = None,
        state: RunState | None = None,
    ) -> Sequence[Event]:
        passed = gates is None or gates.envelope.success
        # No gate will judge a successful execution: its plan may have required one (004 §7),
        # which only the log's Planned says.
        unjudged = gates is None and event.failure is None and not awaits_gates(event)
        unjudged = unjudged and self._heard.get(event.run_id).gated is not False
        if state is None and passed and not unjudged and self._plain(event.run_id):
            # The outcome is built from the execution and its gates alone: the log is only
            # asked whether the run ended already (a replay past the duplicate window).
            kinds = await self._kinds(event.run_id)
            if kinds is not None:
                return [] if END_KINDS & kinds else self._outcome(event, gates)
        state = state or await self._read(event.run_id)
        if state is not None and state.ended:
            return []
        model_run = self._model_run(state)
        refused = unverified(event, state.plan if state else None) if unjudged else None
        refused = refused or cancels.was_cancelled(event)  # no model repairs a cancel
        if refused is not None:
            failed = follow(event, RunFailed, self.clock(), failure=refused[0], message=refused[1])
            if model_run is None or self.models is None:
                return [failed]
            return [failed, self.models.ended(event, refused[0], refused[1], self.clock())]
        if model_run is not None and self.models is not None:
            catalog = await self._catalog()
            call = self.models.executed(event, model_run, catalog, self.clock(), gates)
            return await self._models.run(event.run_id, call)
        return self._outcome(event, gates, state)

    def _outcome(
        self,
        event: Executed,
        gates: GatesEvaluated | None,
        state: RunState | None = None,
    ) -> Sequence[Event]:
        """The end of a run no model planned; ``state`` names the plan when gates failed."""
        now = self.clock()
        if gates is not None and not gates.envelope.success:
            planned = state.planned_operations() if state is not None else []
            contract = gates_failure(gates.envelope, planned)
            text = f"the committed scene failed its gates: {', '.join(gates.envelope.failed_gates)}"
            return [follow(gates, RunFailed, now, failure=contract, message=text)]
        if event.failure is not None:
            contract, text = naming_step(event.failure, event.message, event.receipts)
            return [follow(event, RunFailed, now, failure=contract, message=text)]
        return [completed(event, now, gates)]

    async def on_gates(self, event: GatesEvaluated) -> Sequence[Event]:
        """The guardians' verdict: complete the run, send it back to the model, or fail it."""
        judged = event.causation_id or ""
        heard = self._heard.judged(event.run_id, judged)
        if heard is not None:
            return await self._executed(heard, event)
        state = await self._read(event.run_id)
        if state is None:
            raise Retry("the planner reads a run's history to finish it after its gates", 1.0)
        executed = state.executions.get(judged)
        if executed is None:
            raise Retry(f"the execution gates {event.event_id} judged is not in the log yet", 0.5)
        return await self._executed(executed, event, state)

    async def on_denied(self, event: Denied) -> Sequence[Event]:
        now = self.clock()
        failed = follow(event, RunFailed, now, failure=event.failure, message=event.message)
        if self._plain(event.run_id) and (kinds := await self._kinds(event.run_id)) is not None:
            # As in _executed: one cheap question instead of reading the run back.
            return [] if END_KINDS & kinds else [failed]
        state = await self._read(event.run_id)
        if state is not None and state.ended:
            return []
        if self.models is not None and self._model_run(state) is not None:
            return [failed, self.models.ended(event, event.failure, event.message, now)]
        return [failed]

    async def on_approval_requested(self, event: ApprovalRequested) -> Sequence[Event]:
        """002 §4.6: a model run's thread hears that the run waits for a person's approval.
        Runs of other planners have no thread to tell."""
        if self.models is None or self._plain(event.run_id):
            return []
        model_run = self._model_run(await self._read(event.run_id))
        return [self.models.asking(event, self.clock())] if model_run else []

    async def on_cancel(self, event: CancelRequested) -> Sequence[Event]:
        """End a cancelled run the executor holds no part of (cancels.py says when)."""
        self._models.stop(event.run_id)
        state = await self._read(event.run_id)
        events = state.events if state is not None else ()
        return cancels.outcome(event, events, self.models, self.clock())

    async def on_dead_letter(self, event: DeadLettered) -> Sequence[Event]:
        """A run whose event no service could process is failed, never left open."""
        run_id = subjects.run_id_in(event.subject)
        if event.consumer not in RUN_SERVICES or run_id is None:
            return []
        state = await self._read(run_id)
        if state is None or state.ended:
            return []
        requested = state.requested
        if requested is None:
            # The request itself did not match its schema (a client of the bus wrote it):
            # the run still ends, failed, with the reason, under the ids it claimed.
            unreadable = unreadable_request(event, run_id, self.clock())
            return [unreadable] if unreadable is not None else []
        return [dead_run(event, requested, self.clock())]

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        match event:
            case DeadLettered():
                return await self.on_dead_letter(event)
            case RunRequested():
                return await self.on_requested(event)
            case Executed():
                return await self.on_executed(event)
            case GatesEvaluated():
                return await self.on_gates(event)
            case Denied():
                return await self.on_denied(event)
            case ApprovalRequested():
                return await self.on_approval_requested(event)
            case CancelRequested():  # from the cancel consumer
                return await self.on_cancel(event)
        return []


def _present(catalog: ToolCatalog | None) -> ToolCatalog:
    if catalog is None:
        raise Retry("no tool catalog yet: waiting for an executor to publish one", 0.5)
    return catalog


def filter_subjects(prefix: str) -> list[str]:
    """Subject -> handler table: what the planner consumes."""
    kinds = ("requested", "executed", "gates_evaluated", "denied", "approval_requested")
    runs = [subjects.any_run(prefix, kind) for kind in kinds]
    return [*runs, subjects.deadletter(prefix, "*")]


def cancel_subjects(prefix: str) -> list[str]:
    """What the planner's cancel consumer reads: every run's cancel."""
    return [subjects.any_run(prefix, "cancel_requested")]
