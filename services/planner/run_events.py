"""What the planner reads back from a run's events: whether it ended, and its last plan."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.events import AnyEvent, Planned, RunCompleted, RunFailed
from contracts.fold import latest
from contracts.operations import Operation


def ended(events: Sequence[AnyEvent]) -> bool:
    """Whether the run's outcome is in the log already. A service whose consumer was
    recreated replays the log past the duplicate window; an old run must not get a
    second outcome then (a completed run turned failed)."""
    return any(isinstance(e, RunCompleted | RunFailed) for e in events)


def last_plan(events: Sequence[AnyEvent]) -> Planned | None:
    return latest(events, Planned)


def planned_operations(events: Sequence[AnyEvent]) -> list[Operation]:
    """The operations of the run's latest plan (for a repair plan's operation ids)."""
    return list(planned.operation_set.operations) if (planned := last_plan(events)) else []
