"""What the planner knows of one run, folded from the run's events in log order.

The planner's handlers ask a run the same few questions: which planner its request asked
for, whether a request was planned already, its latest plan, whether it ended, and the
execution its gates judged. Each answer is a fact of the log, so one fold gives them all,
from the events the planner heard moments ago or from the run read back, and the handlers
read the fold instead of each rebuilding its part. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from contracts.events import (
    AnyEvent,
    Executed,
    Planned,
    PlanRejected,
    RunCompleted,
    RunFailed,
    RunRequested,
)
from contracts.operations import Operation

_NONE: Mapping[str, Executed] = MappingProxyType({})


def backend_of(event: RunRequested) -> str:
    """The planner a request asks for: a given plan is planned as given."""
    return "plan" if event.plan is not None else event.planner


@dataclass(frozen=True)
class RunState:
    """One run as the planner sees it; ``RunState()`` is a run nothing is known of."""

    # The events ``fold`` read, in log order: a model's next turn reads the run whole.
    events: tuple[AnyEvent, ...] = ()
    requested: RunRequested | None = None  # the run's first request
    # The planner its requests asked for; "" when two requests of the run disagreed.
    backend: str | None = None
    plan: Planned | None = None  # the latest plan
    gated: bool | None = None  # whether it requires gate verification (004 §7); None: no plan
    # The event ids of the requests planned or refused already: one plan per request.
    answered: frozenset[str] = frozenset()
    # A run has one outcome, completed or failed: a service whose consumer was recreated
    # replays the log past the duplicate window, and an old run must not get a second one.
    ended: bool = False
    executions: Mapping[str, Executed] = field(default_factory=lambda: _NONE)  # by event id

    def planned_by(self, planner: str) -> bool:
        """Whether ``planner`` made the run's latest plan for a request of the run."""
        return self.requested is not None and self.plan is not None and self.plan.planner == planner

    def planned_operations(self) -> list[Operation]:
        """The operations of the latest plan (for a repair plan's operation ids)."""
        return [] if self.plan is None else list(self.plan.operation_set.operations)

    def lean(self) -> RunState:
        """The state kept between deliveries: the backend, whether the plan is gated and
        the executions awaiting their gates, without the events and plan bodies a run may
        hold (a request carries up to its plan's size)."""
        return replace(self, events=(), requested=None, plan=None)

    def without_execution(self, event_id: str) -> RunState:
        """The state once the execution ``event_id`` is judged and no longer awaited."""
        if event_id not in self.executions:
            return self
        left = {k: v for k, v in self.executions.items() if k != event_id}
        return replace(self, executions=MappingProxyType(left))


def step(state: RunState, event: AnyEvent) -> RunState:
    """``state`` once ``event`` happened; events the planner does not ask about keep it.
    ``events`` is left as it was: ``fold`` records what it read in one go."""
    match event:
        case RunRequested():
            backend = backend_of(event)
            agreed = backend if state.backend in (None, backend) else ""
            return replace(state, requested=state.requested or event, backend=agreed)
        case Planned():
            answered = state.answered | _cause(event)
            gated = event.requires_gate_verification
            return replace(state, plan=event, gated=gated, answered=answered)
        case PlanRejected():
            return replace(state, answered=state.answered | _cause(event))
        case Executed():
            executions = MappingProxyType({**state.executions, event.event_id: event})
            return replace(state, executions=executions)
        case RunCompleted() | RunFailed():
            return replace(state, ended=True)
    return state


def fold(events: Iterable[AnyEvent], state: RunState | None = None) -> RunState:
    """The state after ``events``, in order, starting from ``state`` (nothing known)."""
    read = tuple(events)
    folded = state or RunState()
    for event in read:
        folded = step(folded, event)
    return replace(folded, events=(*folded.events, *read))


def _cause(event: Planned | PlanRejected) -> frozenset[str]:
    return frozenset() if event.causation_id is None else frozenset({event.causation_id})
