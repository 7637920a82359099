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
from contracts.fold import latest
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
from services.planner.recent import RECENT_EXECUTIONS, RECENT_RUNS, Recent
from services.planner.run_events import ended, last_plan, planned_operations
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
    # Which planner each recent run's request asked for ("" when two requests disagreed),
    # and the executions awaiting their gates, by event id (recent.py).
    _backends: Recent[str, str] = field(
        default_factory=lambda: Recent(RECENT_RUNS), init=False, repr=False
    )
    _executions: Recent[str, Executed] = field(
        default_factory=lambda: Recent(RECENT_EXECUTIONS), init=False, repr=False
    )
    # Whether each recent run's plan required gate verification (004 §7), so an execution
    # no gate judges is finished without reading the run back.
    _gated: Recent[str, bool] = field(
        default_factory=lambda: Recent(RECENT_RUNS), init=False, repr=False
    )
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

    def _remember(self, event: RunRequested) -> None:
        backend = _backend(event)
        known = self._backends.get(event.run_id)
        self._backends.put(event.run_id, backend if known in (None, backend) else "")

    def _plain(self, run_id: str) -> bool:
        """Whether no model planned ``run_id``, known without reading the log: its request,
        heard by this planner, asked for another planner (or there is no model)."""
        if self.models is None:
            return True
        backend = self._backends.get(run_id)
        return bool(backend) and backend != self.models.name

    async def _model_run(
        self, run_id: str, events: Sequence[AnyEvent] | None = None
    ) -> Sequence[AnyEvent] | None:
        """The events of ``run_id`` when a model planned it, else None; ``events`` is the
        run's history when the caller read it already (one read per handler)."""
        if self.models is None or self.history is None:
            return None
        if events is None:
            events = await self.history(run_id)
        requested = next((e for e in events if isinstance(e, RunRequested)), None)
        planned = latest(events, Planned)
        if requested is None or planned is None or planned.planner != self.models.name:
            return None
        return events

    async def _planned_before(self, event: RunRequested) -> bool:
        if self.history is None:
            return False
        if self.kinds is not None:
            kinds = await self.kinds(event.run_id)
            if kinds & NOT_TO_PLAN:
                return True  # ended or cancelled before it was planned: nothing to plan
            if not PLAN_KINDS & kinds:
                return False  # nothing planned in this run yet: no need to read it back
        return any(
            isinstance(e, Planned | PlanRejected) and e.causation_id == event.event_id
            for e in await self.history(event.run_id)
        )

    async def on_requested(self, event: RunRequested) -> Sequence[Event]:
        self._remember(event)
        # Two round trips at once: the handlers of every service share one event loop.
        before, published = await asyncio.gather(self._planned_before(event), self.catalog.get())
        if before:
            return []  # planned before: a replay past the duplicate window plans nothing new
        catalog = await self._present(published)
        backend = _backend(event)
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
        self._gated.put(event.run_id, plan.requires_gate_verification)
        log.info(
            "planned %d operations with the %s planner", len(plan.operation_set.operations), backend
        )
        return [
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
            self._executions.put(event.event_id, event)
            return []
        return await self._executed(event)

    async def _executed(
        self,
        event: Executed,
        gates: GatesEvaluated | None = None,
        events: Sequence[AnyEvent] | None = None,
    ) -> Sequence[Event]:
        passed = gates is None or gates.envelope.success
        # No gate will judge a successful execution: its plan may have required one (004 §7),
        # which only the log's Planned says.
        unjudged = gates is None and event.failure is None and not awaits_gates(event)
        unjudged = unjudged and self._gated.get(event.run_id) is not False
        if events is None and passed and not unjudged and self.kinds and self._plain(event.run_id):
            # The outcome is built from the execution and its gates alone: the log is only
            # asked whether the run ended already (a replay past the duplicate window).
            finished = END_KINDS & await self.kinds(event.run_id)
            return [] if finished else self._outcome(event, gates)
        if events is None and self.history is not None:
            events = await self.history(event.run_id)
        if events is not None and ended(events):
            return []
        model_run = await self._model_run(event.run_id, events)
        refused = unverified(event, last_plan(events or ())) if unjudged else None
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
        return self._outcome(event, gates, events)

    def _outcome(
        self,
        event: Executed,
        gates: GatesEvaluated | None,
        events: Sequence[AnyEvent] | None = None,
    ) -> Sequence[Event]:
        """The end of a run no model planned; ``events`` name the plan when gates failed."""
        now = self.clock()
        if gates is not None and not gates.envelope.success:
            planned = planned_operations(events or ())
            contract = gates_failure(gates.envelope, planned)
            text = f"the committed scene failed its gates: {', '.join(gates.envelope.failed_gates)}"
            return [follow(gates, RunFailed, now, failure=contract, message=text)]
        if event.failure is not None:
            contract, text = naming_step(event.failure, event.message, event.receipts)
            return [follow(event, RunFailed, now, failure=contract, message=text)]
        return [completed(event, now, gates)]

    async def on_gates(self, event: GatesEvaluated) -> Sequence[Event]:
        """The guardians' verdict: complete the run, send it back to the model, or fail it."""
        heard = self._executions.pop(event.causation_id) if event.causation_id else None
        if heard is not None and heard.run_id == event.run_id:
            return await self._executed(heard, event)
        if self.history is None:
            raise Retry("the planner reads a run's history to finish it after its gates", 1.0)
        events = await self.history(event.run_id)
        executed = next(
            (e for e in events if isinstance(e, Executed) and e.event_id == event.causation_id),
            None,
        )
        if executed is None:
            raise Retry(f"the execution gates {event.event_id} judged is not in the log yet", 0.5)
        return await self._executed(executed, event, events)

    async def on_denied(self, event: Denied) -> Sequence[Event]:
        now = self.clock()
        failed = follow(event, RunFailed, now, failure=event.failure, message=event.message)
        if self.kinds is not None and self._plain(event.run_id):
            # As in _executed: one cheap question instead of reading the run back.
            return [] if END_KINDS & await self.kinds(event.run_id) else [failed]
        events = await self.history(event.run_id) if self.history is not None else None
        if events is not None and ended(events):
            return []
        if self.models is not None and await self._model_run(event.run_id, events) is not None:
            return [failed, self.models.ended(event, event.failure, event.message, now)]
        return [failed]

    async def on_approval_requested(self, event: ApprovalRequested) -> Sequence[Event]:
        """002 §4.6: a model run's thread hears that the run waits for a person's approval.
        Runs of other planners have no thread to tell."""
        if self.models is None or self._plain(event.run_id):
            return []
        model_run = await self._model_run(event.run_id)
        return [self.models.asking(event, self.clock())] if model_run else []

    async def on_cancel(self, event: CancelRequested) -> Sequence[Event]:
        """End a cancelled run the executor holds no part of (cancels.py says when)."""
        self._models.stop(event.run_id)
        events = await self.history(event.run_id) if self.history is not None else []
        return cancels.outcome(event, events, self.models, self.clock())

    async def on_dead_letter(self, event: DeadLettered) -> Sequence[Event]:
        """A run whose event no service could process is failed, never left open."""
        run_id = subjects.run_id_in(event.subject)
        if event.consumer not in RUN_SERVICES or run_id is None or self.history is None:
            return []
        events = await self.history(run_id)
        requested = next((e for e in events if isinstance(e, RunRequested)), None)
        if ended(events):
            return []
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


def _backend(event: RunRequested) -> str:
    """The planner a request asks for: a given plan is planned as given."""
    return "plan" if event.plan is not None else event.planner


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
