"""The run-level metrics, measured where every run's events meet once: the audit views.

Only the audit consumer sees each run from its request to its end, with the run's row
(its state and when it was requested) at hand. What an event means for the metrics is
worked out by ``measure`` (pure, from the event and the row it applies to) while the event
is projected, and recorded only once its transaction committed: an event applied before
is never projected again, so a redelivery or a retried batch counts nothing twice, and
``blendmesh audit rebuild`` (replay.py) records nothing at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contracts import events as ev
from contracts.fold import FINAL, run_state_after
from contracts.render_events import RenderEvent
from services.audit.projections import Change, Row, RunView
from services.runtime.service import metrics

WAITING = "awaiting_confirmation"


@dataclass(frozen=True)
class Measure:
    """What one event changes in the run metrics."""

    ended: str | None = None  # the outcome, when the event ends the run
    error_code: str | None = None
    run_seconds: float = 0.0  # from the request to the end
    waiting: int = 0  # +1: starts waiting for a person; -1: stops waiting
    waited: float | None = None  # seconds the approval it resolves waited


def measure(event: ev.AnyEvent, run: Row | None) -> Measure:
    """The metrics ``event`` moves, given the run's row before it (None: its first)."""
    if not isinstance(event, ev.RunEvent) or isinstance(event, RenderEvent):
        return Measure()
    before = run["state"] if run is not None else None
    after = run_state_after(before, event)
    waiting = int(after == WAITING) - int(before == WAITING)
    waited = None
    if isinstance(event, ev.ApprovalResolved) and before == WAITING and run is not None:
        waited = event.at - run["updated_at"]  # the row last changed when the ask came
    if after not in FINAL or before in FINAL:
        return Measure(waiting=waiting, waited=waited)
    failure = getattr(event, "failure", None)
    requested = run["created_at"] if run is not None else event.at
    return Measure(
        ended=after,
        error_code=failure.error_code if failure is not None else None,
        run_seconds=event.at - requested,
        waiting=waiting,
        waited=waited,
    )


class RunMetrics:
    """One audit service's share of the run metrics. The approvals-waiting gauge starts at
    what its views hold and gives its share back when the service stops, so a process that
    starts an audit service again counts every waiting run once."""

    def __init__(self) -> None:
        self._waiting = 0

    def start(self, waiting: int) -> None:
        self._waiting += waiting
        metrics.approvals_waiting(waiting)  # also 0: the gauge shows from the start

    async def close(self) -> None:
        self._change(-self._waiting)

    def observing(
        self,
        event: ev.AnyEvent,
        write: Callable[[RunView], Sequence[Change]],
        seen: list[Measure],
    ) -> Callable[[RunView], Sequence[Change]]:
        """``write`` that also notes in ``seen`` what the event measures; called only for an
        event not applied before."""

        def observed(view: RunView) -> Sequence[Change]:
            changes = write(view)
            seen.append(measure(event, view.run))
            return changes

        return observed

    def record(self, seen: Sequence[Measure]) -> None:
        """Record what committed events measured."""
        for found in seen:
            if found.waiting:
                self._change(found.waiting)
            if found.waited is not None:
                metrics.approval_waited(found.waited)
            if found.ended is not None:
                metrics.run_ended(found.ended, found.error_code, found.run_seconds)

    def _change(self, by: int) -> None:
        if by:
            self._waiting += by
            metrics.approvals_waiting(by)
