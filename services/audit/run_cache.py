"""Run views kept in memory between events, so projecting an event reads nothing back.

Both stores use it on the thread that owns their connection (``sqlite_views.py``): the
live one between events, the rebuild between batches.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from services.audit.projections import Row, RunView

# Rows (a run's row, its actions and last records) the cache keeps: hundreds of runs of a
# typical size, some 15 MB at most; a run beyond it is read back when next needed.
CACHE_ROWS = 10_000


@dataclass
class RunRows:
    """One run's view as the database would return it: every column of every row."""

    run: Row | None = None
    actions: dict[str, Row] = field(default_factory=dict)
    records: dict[str, Row] = field(default_factory=dict)

    def view(self) -> RunView:
        return RunView(run=self.run, actions=self.actions, records=self.records)

    def size(self) -> int:
        return 1 + len(self.actions) + len(self.records)

    def remember(self, table: str, row: Row) -> None:
        """Keep what reading the run back would give: every column (``Writes.add``), the
        values as written (the projection writes floats to the REAL columns and strings
        or None to the TEXT ones, which SQLite returns unchanged)."""
        if table == "runs":
            self.run = row
        elif table == "actions":
            self.actions[row["operation_id"]] = row
        elif table == "audit_records":  # the last record per operation, as a read returns
            self.records[row["operation_id"]] = row


class RunCache:
    """The run views of the rows written so far, least recently used first.

    Bounded by ``limit`` rows in all; ``evict`` trims it between transactions only, so a
    view dropped from it is always in the database by then, and read back when needed.
    Whoever rolls a transaction back must ``clear`` it: it may hold rows that never were.
    """

    def __init__(self, limit: int, load: Callable[[str], RunRows]) -> None:
        self._limit = limit
        self._load = load
        self._runs: OrderedDict[str, RunRows] = OrderedDict()

    def __len__(self) -> int:
        return len(self._runs)

    def get(self, run_id: str) -> RunRows:
        rows = self._runs.get(run_id)
        if rows is None:
            rows = self._runs[run_id] = self._load(run_id)
        else:
            self._runs.move_to_end(run_id)
        return rows

    def evict(self) -> None:
        total = sum(rows.size() for rows in self._runs.values())
        while total > self._limit and self._runs:
            total -= self._runs.popitem(last=False)[1].size()

    def clear(self) -> None:
        self._runs.clear()
