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

    def __len__(self) -> int:
        return len(self._entries)
