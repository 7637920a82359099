"""What the planner heard moments ago, kept so finishing a run needs no read of the log.

A run's request and its execution reach the planner's own consumer before the events
that finish the run: the request says which planner the run has (it never changes), the
execution is what the guardians judged. Both are facts of the log, never state that can
go stale, so they need no invalidation; a miss (after a restart, or once ``limit``
newer entries pushed one out) only means the log is read, as before.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

from contracts.events import AnyEvent, Executed
from services.planner.run_state import RunState, step

K = TypeVar("K")
V = TypeVar("V")

RECENT_RUNS = 4096  # runs whose planner is remembered: a few hundred KB at most
RECENT_EXECUTIONS = 64  # executions awaiting their gates: each holds its receipts
RECENT_THREADS = 1024  # threads whose last rules run is remembered for `it` and `again`


class Recent(Generic[K, V]):
    """A mapping that keeps the ``limit`` most recently written entries."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a Recent keeps at least one entry, not {limit}")
        self._limit = limit
        self._entries: OrderedDict[K, V] = OrderedDict()

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self._limit:
            self._entries.popitem(last=False)

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def pop(self, key: K) -> V | None:
        return self._entries.pop(key, None)

    def oldest(self) -> K | None:
        """The key written longest ago, or None when there is none."""
        return next(iter(self._entries), None)

    def __len__(self) -> int:
        return len(self._entries)


class HeardRuns:
    """The lean state (run_state.py) of each of the ``RECENT_RUNS`` runs heard last: which
    planner its request asked for, whether its plan required gate verification (004 §7),
    and the executions awaiting their gates. Those executions hold their receipts, so only
    the ``RECENT_EXECUTIONS`` heard last are kept; an older one is read back from the log
    when its gates come."""

    def __init__(self) -> None:
        self._runs: Recent[str, RunState] = Recent(RECENT_RUNS)
        self._awaited: Recent[str, str] = Recent(RECENT_EXECUTIONS + 1)  # execution -> run

    def get(self, run_id: str) -> RunState:
        return self._runs.get(run_id) or RunState()

    def heard(self, event: AnyEvent) -> RunState:
        """The run's state once ``event`` is heard too (whole; the kept one is lean)."""
        run_id = getattr(event, "run_id", "")
        state = step(self.get(run_id), event)
        self._runs.put(run_id, state.lean())
        if isinstance(event, Executed):
            self._awaited.put(event.event_id, run_id)
            if len(self._awaited) > RECENT_EXECUTIONS:
                oldest = self._awaited.oldest()
                if oldest is not None:
                    self.judged(self._awaited.pop(oldest) or "", oldest)
        return state

    def judged(self, run_id: str, execution_id: str) -> Executed | None:
        """The run's execution ``execution_id`` heard awaiting its gates, now forgotten;
        None when it was not heard or was pushed out."""
        self._awaited.pop(execution_id)
        known = self._runs.get(run_id)
        if known is None or execution_id not in known.executions:
            return None
        self._runs.put(run_id, known.without_execution(execution_id))
        return known.executions[execution_id]
