"""The events of a run planned by a model: plan, repair after a failure, end the thread turn.

``PlannerHandlers`` hands ``gemini`` runs here. Such a run is a conversation: the request
is appended to its thread as the user's message, the outcome as the assistant's, and a
failed execution goes back to the model for a repair plan while iterations remain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    Event,
    Executed,
    GatesEvaluated,
    Planned,
    PlanningStarted,
    PlanRejected,
    Role,
    RunEvent,
    RunFailed,
    RunRequested,
    ThreadMessage,
    derive_event_id,
    follow,
)
from contracts.failures import FailureContract, failure
from contracts.operations import Operation
from contracts.tools import ToolCatalog
from services.planner.gates import gates_failure
from services.planner.graph import Reply
from services.planner.model.answer import encode_answer
from services.planner.model.conversation import Accepted, GaveUp, ModelPlanner
from services.planner.model.port import ModelError
from services.planner.model.prompt import PlanContext
from services.planner.model.repair import (
    MAX_ITERATIONS,
    Attempt,
    committed_operations,
    may_continue,
    may_repair,
    summary_of,
)
from services.planner.outcomes import completed, naming_step, replied
from services.planner.versions import planned_by


class Announce(Protocol):
    """Port: append an event to the log now, before the handler returns (the consumer
    loop publishes the rest); its id is derived, so a second copy is dropped."""

    async def publish(self, event: Event) -> int: ...


@dataclass
class ModelRuns:
    planner: ModelPlanner
    name: str = "gemini"  # the backend name runs ask for and events carry
    # Where the user's message and run.planning go before the model is called (002 §4:
    # the run is ``planning`` during the call). None: they are returned with the outcome.
    announce: Announce | None = None

    async def requested(
        self, event: RunRequested, catalog: ToolCatalog, now: float
    ) -> Sequence[Event]:
        if not event.prompt:
            contract = failure("REQUEST_UNREADABLE", "Send a prompt or a plan", recoverable=False)
            return self._failed(event, contract, "the request has no prompt", now)
        opening: list[Event] = [
            message(event, "user", event.prompt, now),
            follow(event, PlanningStarted, now, planner=self.name),
        ]
        if self.announce is not None:
            for early in opening:
                await self.announce.publish(early)
            opening = []
        try:
            outcome = await self.planner.plan(_context(event), event.thread_id, catalog)
        except ModelError as exc:
            return [*opening, *self._model_failed(event, exc, now)]
        return [*opening, *self._outcome(event, event, outcome, catalog, now)]

    async def executed(
        self,
        event: Executed,
        history: Sequence[AnyEvent],
        catalog: ToolCatalog,
        now: float,
        gates: GatesEvaluated | None = None,
    ) -> Sequence[Event]:
        """Complete the run, or send a failed execution (or failed gates, 004 §8) back for
        a repair plan.

        ``history`` is the run's events from the log: its request and latest plan.
        """
        requested = next(e for e in history if isinstance(e, RunRequested))
        planned = next(e for e in reversed(history) if isinstance(e, Planned))
        committed = committed_operations([*history, event])  # over every iteration
        applied = list(committed.values())
        gates_failed = gates is not None and not gates.envelope.success
        cause: RunEvent = gates if gates is not None else event
        if event.failure is None and not gates_failed:
            if planned.done or not may_continue(planned.iteration):
                return self._completed(event, applied, now, gates, unfinished=not planned.done)
            attempt = Attempt(
                encode_answer(planned.operation_set),
                None,
                "",
                stage="continue",
                gates=gates.envelope if gates is not None else None,
                receipts=tuple(event.receipts),
                scene=await self.planner.scenes.get(event.scene_id),
                scene_id=event.scene_id,
                committed=tuple(sorted(committed)),
            )
            return await self._again(
                cause, requested, planned, attempt, catalog, now, committed, (event, gates)
            )
        contract, text = event.failure, event.message
        if contract is not None:
            contract, text = naming_step(contract, text, event.receipts)
        if gates is not None and gates_failed:
            contract = gates_failure(gates.envelope, planned.operation_set.operations)
            text = f"the committed scene failed its gates: {', '.join(gates.envelope.failed_gates)}"
        assert contract is not None
        if not may_repair(planned.iteration, contract):
            return self._failed(cause, contract, text, now, applied)
        attempt = Attempt(
            encode_answer(planned.operation_set),
            contract,
            text,
            stage="gates" if gates_failed else "execution",
            gates=gates.envelope if gates is not None and gates_failed else None,
            receipts=tuple(event.receipts),
            scene=await self.planner.scenes.get(event.scene_id),
            scene_id=event.scene_id,
            committed=tuple(sorted(committed)),
        )
        return await self._again(
            cause, requested, planned, attempt, catalog, now, committed, (event, gates)
        )

    async def _again(
        self,
        cause: RunEvent,
        requested: RunRequested,
        planned: Planned,
        attempt: Attempt,
        catalog: ToolCatalog,
        now: float,
        committed: dict[str, Operation],
        after: tuple[Executed, GatesEvaluated | None],
    ) -> Sequence[Event]:
        """Ask the model for its next answer after ``attempt`` (a repair or what is left);
        ``after`` is the execution (and its gates) the attempt reports."""
        applied = list(committed.values())
        try:
            outcome = await self.planner.plan(
                _context(requested),
                requested.thread_id,
                catalog,
                iteration=planned.iteration + 1,
                earlier=[attempt],
                committed=committed,
            )
        except ModelError as exc:
            return self._model_failed(cause, exc, now, applied)
        if isinstance(outcome, Accepted) and isinstance(outcome.plan, Reply):
            said = outcome.plan.text
            if attempt.failure is not None:  # words are no repair: the failure stands
                text = f"{attempt.message}; the model answered without a repair: {said}"
                return self._failed(cause, attempt.failure, text, now, applied)
            # Nothing more to do (004 §1: no steps and done): what was applied stands.
            return self._completed(after[0], applied, now, after[1], said=said)
        return self._outcome(cause, requested, outcome, catalog, now, applied)

    def asking(self, event: ApprovalRequested, now: float) -> Event:
        """The assistant's approval-request message (002 §4.6): what waits, and why."""
        ops = ", ".join(f"{op.operation_id} {op.tool}" for op in event.operations) or ", ".join(
            event.operation_ids
        )
        text = f"Waiting for your approval of {ops}: {event.reason}"
        return message(event, "assistant", text, now)

    def ended(self, cause: RunEvent, contract: FailureContract, text: str, now: float) -> Event:
        """The assistant's message for a run that failed outside the planner (a denial)."""
        return message(cause, "assistant", f"Failed ({contract.error_code}): {text}", now)

    def _outcome(
        self,
        cause: RunEvent,
        requested: RunRequested,
        outcome: Accepted | GaveUp,
        catalog: ToolCatalog,
        now: float,
        applied: Sequence[Operation] = (),
    ) -> Sequence[Event]:
        if isinstance(outcome, GaveUp):
            return [
                follow(
                    cause,
                    PlanRejected,
                    now,
                    planner=self.name,
                    failure=outcome.failure,
                    message=outcome.message,
                    model=outcome.model,
                ),
                *self._failed(cause, outcome.failure, outcome.message, now, applied),
            ]
        if isinstance(outcome.plan, Reply):  # a question, or nothing to change (002 §4.5)
            text = outcome.plan.text
            return [
                *replied(cause, self.name, text, now, requested.scene_id, outcome.model),
                message(cause, "assistant", text, now),
            ]
        return [
            follow(
                cause,
                Planned,
                now,
                scene_id=requested.scene_id,
                planner=self.name,
                operation_set=outcome.plan.operation_set,
                schedule=outcome.plan.schedule,
                catalog_version=catalog.version,
                model=outcome.model,
                iteration=outcome.iteration,
                pre_approved=requested.pre_approved,
                rollback_boundary=requested.rollback_boundary,
                done=outcome.plan.done,
                requires_gate_verification=outcome.plan.requires_gate_verification,
                **planned_by(catalog),
            )
        ]

    def _completed(
        self,
        event: Executed,
        applied: Sequence[Operation],
        now: float,
        gates: GatesEvaluated | None = None,
        unfinished: bool = False,
        said: str = "",
    ) -> Sequence[Event]:
        done = completed(event, now, gates)
        # An answer still not done at the last iteration: what it applied stands.
        left = f" The model was not done after {MAX_ITERATIONS} answers." if unfinished else ""
        left += f" {said}" if said else ""
        text = summary_of(f"Completed: {done.summary}.{left}", applied)
        return [
            done,
            message(event, "assistant", text, now),
        ]

    def _failed(
        self,
        cause: RunEvent,
        contract: FailureContract,
        text: str,
        now: float,
        applied: Sequence[Operation] = (),
    ) -> list[Event]:
        said = summary_of(f"Failed ({contract.error_code}): {text}", applied)
        return [
            follow(cause, RunFailed, now, failure=contract, message=text),
            message(cause, "assistant", said, now),
        ]

    def _model_failed(
        self, cause: RunEvent, exc: ModelError, now: float, applied: Sequence[Operation] = ()
    ) -> list[Event]:
        contract = failure("MODEL_ERROR", _HINTS[exc.kind], recoverable=exc.recoverable)
        return self._failed(cause, contract, exc.message, now, applied)


def message(cause: RunEvent, role: Role, text: str, now: float) -> ThreadMessage:
    """A thread message caused by ``cause``; its id is derived, so a re-run dedupes it."""
    return ThreadMessage(
        event_id=derive_event_id(cause.event_id, f"thread.message.{role}"),
        at=now,
        thread_id=cause.thread_id,
        run_id=cause.run_id,
        role=role,
        text=text,
    )


def _context(event: RunRequested) -> PlanContext:
    return PlanContext(
        run_id=event.run_id,
        request_id=event.request_id,
        scene_id=event.scene_id,
        prompt=event.prompt or "",
        focus=event.focus,
    )


_HINTS = {
    "unavailable": "Gemini is unavailable or rate limited: run the request again later",
    "auth": "Set GEMINI_API_KEY or GOOGLE_API_KEY for the planner, or use BLENDMESH_PLANNER=rules",
    "bad_request": "Check BLENDMESH_GEMINI_MODEL and BLENDMESH_GEMINI_BASE_URL",
    "blocked": "Rephrase the request: Gemini's safety filters blocked it",
    "refused": "Rephrase the request: Gemini gave no plan for it",
}
