"""The views over one SQLite connection that one aiosqlite worker thread owns.

The live store and the rebuild both write this way: a stretch of the log (one event
live, a batch in a rebuild) is projected, written with ``executemany`` per view, tracked
and committed in one call on the worker thread (``SqliteViews.apply``). The event loop
pays one thread hop for it instead of one per statement, and never waits on SQLite.
The run views an event builds on come from a ``RunCache`` rather than three reads.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from services.audit.projections import Change, Row
from services.audit.run_cache import RunCache, RunRows
from services.audit.tables import ADDED_COLUMNS, SCHEMA, VIEWS, Applied, Batch

_T = TypeVar("_T")

# The views written with INSERT OR REPLACE and their keys: within a batch only the last
# row per key needs writing.
KEYS: dict[str, Callable[[Row], Any]] = {
    "runs": itemgetter("run_id"),
    "actions": itemgetter("run_id", "operation_id"),
}
TRACK = (
    "INSERT INTO tracking (id, last_seq) VALUES (1, ?) "
    "ON CONFLICT (id) DO UPDATE SET last_seq = excluded.last_seq"
)

# The files SQLite may keep beside a database: its rollback journal, its WAL and index.
SIDECARS = ("-wal", "-shm", "-journal")

# A view's columns in table order, as dict keys: a row's keys compare with them in C.
Columns = dict[str, None]


def open_views(path: Path, pragmas: Sequence[str], timeout: float = 5.0) -> sqlite3.Connection:
    """A connection to the views at ``path`` with ``pragmas`` set, explicit transactions
    only. Creates the views, and adds the columns a database made before them lacks.
    ``timeout``: how long a write waits for another connection's lock before failing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, timeout=timeout)
    try:
        db.row_factory = sqlite3.Row
        for pragma in pragmas:
            db.execute(f"PRAGMA {pragma}")
        db.executescript(SCHEMA)
        for table, columns in ADDED_COLUMNS.items():
            have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            for column in columns:
                if column not in have:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
    except BaseException:
        db.close()
        raise
    return db


def remove_sidecars(path: Path) -> None:
    for suffix in SIDECARS:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


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
        table, row, replace = change
        cols = self._columns.get(table)
        if cols is None:
            raise ValueError(f"no view named {table!r}")
        if row.keys() != cols.keys():
            row = dict.fromkeys(cols) | row
            if len(row) != len(cols):
                unknown = sorted(row.keys() - cols)
                raise ValueError(f"the {table} view has no columns {unknown}")
        key = KEYS.get(table) if replace else None
        if key is not None:  # a later write of the same row replaces it: keep the last
            self._keyed[table][key(row)] = row
        elif (rows := self._appended.get((table, replace))) is not None:
            rows.append(row)
        else:
            self._appended[(table, replace)] = [row]
        return row

    def flush(self, db: sqlite3.Connection) -> None:
        for table, keyed in self._keyed.items():
            if keyed:
                db.executemany(self._insert(table, True), map(self._values(table), keyed.values()))
        for (table, replace), rows in self._appended.items():
            db.executemany(self._insert(table, replace), map(self._values(table), rows))

    def _values(self, table: str) -> Callable[[Row], tuple[Any, ...]]:
        # Bound by position, not by name: sqlite3 makes a string of every name of every
        # row it binds, which cost a rebuild more than the tuples do.
        return itemgetter(*self._columns[table])

    def _insert(self, table: str, replace: bool) -> str:
        cols = self._columns[table]
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        names = ", ".join(f'"{c}"' for c in cols)
        return f"{verb} INTO {table} ({names}) VALUES ({', '.join('?' for _ in cols)})"


class SqliteViews:
    """The views over ``db``; every method runs on the thread that opened ``db``."""

    def __init__(self, db: sqlite3.Connection, cache_rows: int) -> None:
        self.db = db
        self._columns: dict[str, Columns] = {
            table: dict.fromkeys(row[1] for row in db.execute(f"PRAGMA table_info({table})"))
            for table in VIEWS
        }
        self._cache = RunCache(cache_rows, self._load)
        self._version = self._data_version()

    def apply(self, batch: Batch) -> Applied:
        """Apply ``batch`` in one transaction, skipping sequences applied before. ``new``
        when any event was written; ``records`` are the audit records written now."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            self._forget_foreign_writes()
            last = self.last_seq()
            writes, records, new = Writes(self._columns), [], False
            add, get = writes.add, self._cache.get
            for seq, run_id, project in batch:
                if seq <= last:
                    continue
                new = True
                rows = get(run_id) if run_id is not None else RunRows()
                for change in project(rows.view()):
                    row = add(change)
                    rows.remember(change.table, row)
                    if change.table == "audit_records":
                        records.append(dict(row))
                last = seq
            if not new:
                db.execute("ROLLBACK")  # all applied before: nothing to write or fsync
                return Applied(new=False)
            writes.flush(db)
            db.execute(TRACK, (last,))
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            self._cache.clear()  # it may hold rows the rollback just undid
            raise
        self._cache.evict()
        return Applied(new=True, records=records)

    def last_seq(self) -> int:
        row = self.db.execute("SELECT last_seq FROM tracking WHERE id = 1").fetchone()
        return int(row[0]) if row is not None else 0

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return [dict(row) for row in self.db.execute(sql, params)]

    def _load(self, run_id: str) -> RunRows:
        run = self.rows("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        actions = self.rows("SELECT * FROM actions WHERE run_id = ?", (run_id,))
        sql = "SELECT * FROM audit_records WHERE run_id = ? ORDER BY stream_seq"
        return RunRows(
            run=run[0] if run else None,
            actions={a["operation_id"]: a for a in actions},
            records={r["operation_id"]: r for r in self.rows(sql, (run_id,))},
        )

    def _forget_foreign_writes(self) -> None:
        """Another connection (a second process, the sqlite3 shell) committed to the file
        since our last transaction: the cached views may be stale, so read them back."""
        version = self._data_version()
        if version != self._version:
            self._cache.clear()
            self._version = version

    def _data_version(self) -> int:
        return int(self.db.execute("PRAGMA data_version").fetchone()[0])


class ViewsThread:
    """The ``SqliteViews`` over one aiosqlite connection, whose own worker thread opened
    the sqlite3 connection and runs every call on it, one after another, in order.

    A whole call (``fn(views)``: an event projected, written, tracked and committed) is
    one job on that thread. aiosqlite runs each of its own methods as such a job through
    ``Connection._execute``; it offers no public way to run several statements in one, and
    one hop per statement is what made the projection the costliest part of a run.
    """

    def __init__(self, what: str, cache_rows: int) -> None:
        self._what = what  # says which store in errors, e.g. "the audit store <path>"
        self._cache_rows = cache_rows
        self._db: aiosqlite.Connection | None = None
        self._views: SqliteViews | None = None
        self._closed = False

    async def connect(self, connect: Callable[[], sqlite3.Connection]) -> None:
        """Open the connection ``connect`` makes, on a new aiosqlite worker thread."""
        if self._closed:
            raise RuntimeError(f"{self._what} is closed")
        await self.disconnect()
        failed: list[Exception] = []
        db = aiosqlite.Connection(partial(_opened, connect, failed), iter_chunk_size=64)
        await db  # starts the thread, which runs ``connect``
        try:
            if failed:
                raise failed[0]
            self._views = await _on_thread(db, SqliteViews, db._conn, self._cache_rows)
        except BaseException:
            await db.close()
            raise
        self._db = db

    async def run(self, fn: Callable[[SqliteViews], _T]) -> _T:
        """``fn(views)`` on the connection's thread."""
        if self._closed:
            raise RuntimeError(f"{self._what} is closed")
        if self._db is None or self._views is None:
            raise RuntimeError(f"{self._what} is not connected; restart the audit service")
        return await _on_thread(self._db, fn, self._views)

    async def disconnect(self) -> None:
        """Close the connection (and its thread); ``connect`` opens a new one."""
        db, self._db, self._views = self._db, None, None
        if db is not None:
            await db.close()

    async def close(self) -> None:
        if self._closed:
            return
        try:
            await self.disconnect()
        finally:
            self._closed = True


def _opened(
    connect: Callable[[], sqlite3.Connection], failed: list[Exception]
) -> sqlite3.Connection:
    """``connect()``, or a stand-in when it fails, with the failure kept in ``failed``: a
    connector that raises leaves aiosqlite's thread to stop after its caller may be gone,
    while a connection that opened closes, with its thread, when the caller says so."""
    try:
        return connect()
    except Exception as exc:  # noqa: BLE001 - raised by ``connect`` once the thread stopped
        failed.append(exc)
        return sqlite3.connect(":memory:")


async def _on_thread(db: aiosqlite.Connection, fn: Callable[..., _T], *args: Any) -> _T:
    result: _T = await db._execute(fn, *args)
    return result
