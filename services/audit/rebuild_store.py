"""The fresh SQLite file ``blendmesh audit rebuild`` replays the log into.

Nobody reads it until ``SqliteStore.swap_in`` moves it over the live views, and a crash
mid-rebuild loses nothing but the rebuild, which starts again from the log. So it trades
what the live store must not, for speed:

- each fetched batch is one call to a worker thread that owns a plain ``sqlite3``
  connection: projecting, writing and committing a batch never blocks the event loop,
  and costs one thread hop instead of several per event;
- the run views the projection builds on are kept in memory (``RunCache``, least
  recently used runs dropped beyond ``CACHE_ROWS`` rows and read back when a later event
  needs them) instead of being read back for every event;
- the file is written with ``synchronous=OFF`` and the rollback journal in memory, and
  fsynced once in ``seal``, before it may replace the live file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

from services.audit.projections import Change, Row, RunView
from services.audit.store import SCHEMA, VIEWS, Project

Batch = Sequence[tuple[int, str | None, Project]]
_T = TypeVar("_T")

# Rows (a run's row, its actions and last records) the cache keeps between batches:
# hundreds of runs of a typical size, some 15 MB at most; a run beyond it is read back.
CACHE_ROWS = 10_000
# The views written with INSERT OR REPLACE and their keys: within a batch only the last
# row per key needs writing.
KEYS: dict[str, Callable[[Row], Any]] = {
    "runs": itemgetter("run_id"),
    "actions": itemgetter("run_id", "operation_id"),
}
SIDECARS = ("-wal", "-shm", "-journal")

# A view's columns in table order, as dict keys: a row's keys compare with them in C.
Columns = dict[str, None]


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


class RunCache:
    """The run views of the rows written so far, least recently used first.

    Bounded by ``limit`` rows in all; ``evict`` trims it between batches only, so a view
    dropped from it is always in the database by then, and read back when needed.
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


class Writes:
    """A batch's rows, written with one ``executemany`` per view.

    Each row carries every column of its view, NULL where the projection left one out,
    which is what a plain INSERT of the columns it names stores too.
    """

    def __init__(self, columns: Mapping[str, Columns]) -> None:
        self._columns = columns
        self._keyed: dict[str, dict[Any, Row]] = {table: {} for table in KEYS}
        self._appended: dict[tuple[str, bool], list[Row]] = {}

    def add(self, change: Change) -> Row:
        """Queue ``change``; returns its row with every column of the view."""
        cols = self._columns.get(change.table)
        if cols is None:
            raise ValueError(f"no view named {change.table!r}")
        row = change.row
        if row.keys() != cols.keys():
            row = dict.fromkeys(cols) | row
            if len(row) != len(cols):
                unknown = sorted(row.keys() - cols)
                raise ValueError(f"the {change.table} view has no columns {unknown}")
        key = KEYS.get(change.table) if change.replace else None
        if key is not None:  # a later write of the same row replaces it: keep the last
            self._keyed[change.table][key(row)] = row
        else:
            self._appended.setdefault((change.table, change.replace), []).append(row)
        return row

    def flush(self, db: sqlite3.Connection) -> None:
        for table, keyed in self._keyed.items():
            if keyed:
                db.executemany(self._insert(table, True), keyed.values())
        for (table, replace), rows in self._appended.items():
            db.executemany(self._insert(table, replace), rows)

    def _insert(self, table: str, replace: bool) -> str:
        cols = self._columns[table]
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        names = ", ".join(f'"{c}"' for c in cols)
        return f"{verb} INTO {table} ({names}) VALUES ({', '.join(f':{c}' for c in cols)})"


class RebuildStore:
    """A fresh store at ``path``, filled batch by batch by ``replay`` and then sealed."""

    def __init__(self, path: Path, cache_rows: int = CACHE_ROWS) -> None:
        self.path = path
        # One thread owns the connection: batches run on it one after another, in order.
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit-rebuild")
        self._db: sqlite3.Connection | None = None
        self._columns: dict[str, Columns] = {}
        self._cache = RunCache(cache_rows, self._load)
        self._last = 0
        self._closed = False

    @classmethod
    async def open(cls, path: Path, cache_rows: int = CACHE_ROWS) -> RebuildStore:
        """An empty store at ``path``, discarding whatever an interrupted rebuild left."""
        store = cls(path, cache_rows)
        try:
            await store._call(store._open)
        except BaseException:
            await store.close()
            raise
        return store

    async def apply_many(self, batch: Batch) -> None:
        """Apply a stretch of the log in one transaction, skipping what was applied."""
        if batch:
            await self._call(self._apply, batch)

    async def seal(self) -> None:
        """Write the file through to the disk and close it, ready to be moved."""
        try:
            await self._call(self._seal)
        finally:
            await self.close()

    async def close(self) -> None:
        """Close without sealing (a failed rebuild); the caller discards the file."""
        if self._closed:
            return
        try:
            await self._call(self._close)
        finally:
            self._closed = True
            self._thread.shutdown(wait=False)

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise RuntimeError(f"the rebuild store {self.path} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    # -- on the worker thread ------------------------------------------------------------

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for name in (str(self.path), *(f"{self.path}{s}" for s in SIDECARS)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
        db = self._db = sqlite3.connect(self.path, isolation_level=None)
        db.row_factory = sqlite3.Row
        # Only this rebuild writes the file and a crash discards it: no fsync per commit
        # and no journal on disk; ``_seal`` fsyncs the finished file before the swap.
        db.execute("PRAGMA journal_mode=MEMORY")
        db.execute("PRAGMA synchronous=OFF")
        db.executescript(SCHEMA)
        for table in VIEWS:
            info = db.execute(f"PRAGMA table_info({table})").fetchall()
            self._columns[table] = dict.fromkeys(row[1] for row in info)

    def _apply(self, batch: Batch) -> None:
        db = self._connection()
        writes, last = Writes(self._columns), self._last
        db.execute("BEGIN")
        try:
            for seq, run_id, project in batch:
                if seq <= last:
                    continue
                rows = self._cache.get(run_id) if run_id is not None else RunRows()
                for change in project(rows.view()):
                    _remember(rows, change.table, writes.add(change))
                last = seq
            writes.flush(db)
            db.execute(
                "INSERT INTO tracking (id, last_seq) VALUES (1, ?) "
                "ON CONFLICT (id) DO UPDATE SET last_seq = excluded.last_seq",
                (last,),
            )
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            self._cache.clear()  # it may hold rows the rollback just undid
            raise
        self._last = last
        self._cache.evict()

    def _load(self, run_id: str) -> RunRows:
        db = self._connection()
        run = db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        actions = db.execute("SELECT * FROM actions WHERE run_id = ?", (run_id,)).fetchall()
        sql = "SELECT * FROM audit_records WHERE run_id = ? ORDER BY stream_seq"
        records = db.execute(sql, (run_id,)).fetchall()
        return RunRows(
            run=dict(run) if run is not None else None,
            actions={a["operation_id"]: dict(a) for a in actions},
            records={r["operation_id"]: dict(r) for r in records},
        )

    def _seal(self) -> None:
        self._connection().close()
        self._db = None
        # journal_mode=MEMORY left no journal or WAL beside it: the file is whole.
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError(f"the rebuild store {self.path} is closed")
        return self._db


def _remember(rows: RunRows, table: str, row: Row) -> None:
    """Keep ``rows`` what reading the run back from the database would give: every column
    (``Writes.add``), the values as written (the projection writes floats to the REAL
    columns and strings or None to the TEXT ones, which SQLite returns unchanged)."""
    if table == "runs":
        rows.run = row
    elif table == "actions":
        rows.actions[row["operation_id"]] = row
    elif table == "audit_records":  # the last record per operation, as a read returns
        rows.records[row["operation_id"]] = row
