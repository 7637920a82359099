"""The audit views in SQLite (aiosqlite), behind the small ``ViewStore`` port.

Exactly-once comes from the tracking row (eventsourcing's tracking record): the last
applied stream sequence is written in the same transaction as the view rows, and an
event at or below it is skipped, so a redelivery changes nothing. One asyncio lock
serialises transactions, reads and the rebuild swap on the single connection, so a
reader never sees half an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import aiosqlite

from services.audit.projections import Change, Row, RunView

Project = Callable[[RunView], Sequence[Change]]

# aiosqlite logs every call with its SQL parameters at DEBUG, and those carry users'
# prompts: a service run with debug logging must not copy them into its log.
logging.getLogger("aiosqlite").setLevel(logging.INFO)

SCHEMA = """
CREATE TABLE IF NOT EXISTS tracking (id INTEGER PRIMARY KEY CHECK (id = 1), last_seq INTEGER);
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, request_id TEXT, thread_id TEXT,
  user TEXT, scene_id TEXT, prompt TEXT, state TEXT, planner TEXT, model TEXT, error_code TEXT,
  message TEXT, blend_path TEXT, scene_hash TEXT, created_at REAL, updated_at REAL);
CREATE INDEX IF NOT EXISTS runs_newest ON runs (created_at DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_by_user ON runs (user, created_at DESC, run_id DESC);
CREATE TABLE IF NOT EXISTS actions (run_id TEXT, operation_id TEXT, tool_name TEXT,
  safety_level TEXT, state TEXT, decision TEXT, mcp_call_id TEXT, blender_mutation_id TEXT,
  error_code TEXT, approval_id TEXT, input_hash TEXT, PRIMARY KEY (run_id, operation_id));
CREATE TABLE IF NOT EXISTS audit_records (stream_seq INTEGER PRIMARY KEY, event_id TEXT,
  run_id TEXT, user TEXT, timestamp REAL, request_id TEXT, operation_id TEXT, mcp_call_id TEXT,
  blender_mutation_id TEXT, tool_name TEXT, safety_level TEXT, status TEXT,
  scene_hash_before TEXT, scene_hash_after TEXT, scene_id TEXT, model TEXT, input_hash TEXT,
  decision TEXT, approval_id TEXT, error_code TEXT, message TEXT);
CREATE INDEX IF NOT EXISTS audit_by_run ON audit_records (run_id, stream_seq);
CREATE TABLE IF NOT EXISTS timeline (stream_seq INTEGER PRIMARY KEY, run_id TEXT,
  event_id TEXT, type TEXT, at REAL, detail TEXT);
CREATE INDEX IF NOT EXISTS timeline_by_run ON timeline (run_id, stream_seq);
CREATE TABLE IF NOT EXISTS dead_letters (stream_seq INTEGER PRIMARY KEY, consumer TEXT,
  subject TEXT, failed_seq INTEGER, deliveries INTEGER, reason TEXT, at REAL);
"""

# Columns added after the first release: a database made before them gets them (NULL in
# old rows until ``blendmesh audit rebuild``) instead of failing on its first write.
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "actions": ("approval_id", "input_hash"),
    "audit_records": (
        "scene_id", "model", "input_hash", "decision", "approval_id", "error_code", "message",
    ),
}  # fmt: skip

# Every view and its deterministic order, so two dumps compare with ``==``.
VIEWS: dict[str, str] = {
    "runs": "run_id",
    "actions": "run_id, operation_id",
    "audit_records": "stream_seq",
    "timeline": "stream_seq",
    "dead_letters": "stream_seq",
}


class ViewStore(Protocol):
    """Port: the read model. ``apply`` runs ``project`` at most once per stream sequence."""

    async def last_seq(self) -> int: ...

    async def apply(self, seq: int, run_id: str | None, project: Project) -> bool:
        """Write ``project(view of run_id)`` with ``seq``; False when ``seq`` was applied."""
        ...

    async def runs(self, limit: int, user: str | None = None) -> list[Row]: ...

    async def run(self, run_id: str) -> dict[str, Any] | None:
        """``{"run": row, "actions", "audit_records", "timeline": rows}`` or None."""
        ...

    async def records_at(self, seq: int) -> list[Row]: ...

    async def dump(self) -> dict[str, list[Row]]: ...

    async def close(self) -> None: ...


class Sealable(Protocol):
    """A store built beside the live one (``rebuild_store.py``), to be moved over it."""

    path: Path

    async def seal(self) -> None:
        """Make ``path`` one self-contained, durable file and close it."""
        ...


F = TypeVar("F", bound=Sealable)


class SqliteStore:
    """The views in one WAL-mode SQLite file that only the audit service opens."""

    def __init__(self, path: Path, db: aiosqlite.Connection) -> None:
        self.path = path
        self._db = db
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path) -> SqliteStore:
        path.parent.mkdir(parents=True, exist_ok=True)
        return cls(path, await _connect(path))

    async def close(self) -> None:
        async with self._lock:
            await self._db.close()

    async def last_seq(self) -> int:
        async with self._lock:
            return await self._last_seq()

    async def apply(self, seq: int, run_id: str | None, project: Project) -> bool:
        async with self._lock:
            db = self._db
            await _run(db, "BEGIN IMMEDIATE")
            try:
                if seq <= await self._last_seq():
                    await _run(db, "ROLLBACK")
                    return False
                view = await self._view(run_id) if run_id is not None else RunView()
                for change in project(view):
                    await self._write(change)
                await _run(
                    db,
                    "INSERT INTO tracking (id, last_seq) VALUES (1, ?) "
                    "ON CONFLICT (id) DO UPDATE SET last_seq = excluded.last_seq",
                    (seq,),
                )
                await _run(db, "COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    await _run(db, "ROLLBACK")
                raise
            return True

    async def runs(self, limit: int, user: str | None = None) -> list[Row]:
        async with self._lock:
            if user is None:
                sql = "SELECT * FROM runs ORDER BY created_at DESC, run_id DESC LIMIT ?"
                return await self._rows(sql, (limit,))
            sql = "SELECT * FROM runs WHERE user = ? ORDER BY created_at DESC, run_id DESC LIMIT ?"
            return await self._rows(sql, (user, limit))

    async def run(self, run_id: str) -> dict[str, Any] | None:
        async with self._lock:
            found = await self._rows("SELECT * FROM runs WHERE run_id = ?", (run_id,))
            if not found:
                return None
            detail: dict[str, Any] = {"run": found[0]}
            for view, order in (
                ("actions", "operation_id"),
                ("audit_records", "stream_seq"),
                ("timeline", "stream_seq"),
            ):
                sql = f"SELECT * FROM {view} WHERE run_id = ? ORDER BY {order}"
                detail[view] = await self._rows(sql, (run_id,))
            return detail

    async def dump(self) -> dict[str, list[Row]]:
        async with self._lock:
            dump = {"tracking": [{"last_seq": await self._last_seq()}]}
            for view, order in VIEWS.items():
                dump[view] = await self._rows(f"SELECT * FROM {view} ORDER BY {order}")
            return dump

    async def records_at(self, seq: int) -> list[Row]:
        """The audit records the event at stream sequence ``seq`` produced (none or one)."""
        async with self._lock:
            return await self._rows("SELECT * FROM audit_records WHERE stream_seq = ?", (seq,))

    async def counts(self) -> dict[str, int]:
        async with self._lock:
            return {
                view: (await self._rows(f"SELECT count(*) AS n FROM {view}"))[0]["n"]
                for view in VIEWS
            }

    async def swap_in(self, fresh: F, catch_up: Callable[[F, int], Awaitable[None]]) -> None:
        """Replace these views with ``fresh`` atomically, after ``catch_up(fresh, our_seq)``
        brought it at least as far as this store got, so no applied event is lost."""
        async with self._lock:
            await catch_up(fresh, await self._last_seq())
            await fresh.seal()
            await self._db.close()
            try:
                _remove_sidecars(self.path)  # a stale WAL must never meet the new file
                os.replace(fresh.path, self.path)
            finally:
                self._db = await _connect(self.path)

    async def _last_seq(self) -> int:
        rows = await self._rows("SELECT last_seq FROM tracking WHERE id = 1")
        return int(rows[0]["last_seq"]) if rows else 0

    async def _view(self, run_id: str) -> RunView:
        run = await self._rows("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        actions = await self._rows("SELECT * FROM actions WHERE run_id = ?", (run_id,))
        sql = "SELECT * FROM audit_records WHERE run_id = ? ORDER BY stream_seq"
        records = {r["operation_id"]: r for r in await self._rows(sql, (run_id,))}
        return RunView(
            run=run[0] if run else None,
            actions={a["operation_id"]: a for a in actions},
            records=records,
        )

    async def _write(self, change: Change) -> None:
        if change.table not in VIEWS:
            raise ValueError(f"no view named {change.table!r}")
        cols = list(change.row)
        verb = "INSERT OR REPLACE" if change.replace else "INSERT"
        names = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" for _ in cols)
        sql = f"{verb} INTO {change.table} ({names}) VALUES ({marks})"
        await _run(self._db, sql, [change.row[c] for c in cols])

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        async with self._db.execute(sql, params) as cursor:
            return [dict(row) for row in await cursor.fetchall()]


async def _connect(path: Path) -> aiosqlite.Connection:
    db = await aiosqlite.connect(path, isolation_level=None)  # explicit BEGIN/COMMIT only
    try:
        db.row_factory = aiosqlite.Row
        await _run(db, "PRAGMA journal_mode=WAL")
        await _run(db, "PRAGMA synchronous=FULL")  # an acked event must not vanish
        await db.executescript(SCHEMA)
        await _add_columns(db)
    except BaseException:
        await db.close()
        raise
    return db


async def _add_columns(db: aiosqlite.Connection) -> None:
    for table, columns in ADDED_COLUMNS.items():
        async with db.execute(f"PRAGMA table_info({table})") as cursor:
            have = {row[1] for row in await cursor.fetchall()}
        for column in columns:
            if column not in have:
                await _run(db, f"ALTER TABLE {table} ADD COLUMN {column} TEXT")


async def _run(db: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> None:
    """Execute and finish the statement at once: one left open pins a read transaction."""
    async with db.execute(sql, params) as cursor:
        await cursor.fetchall()


def _remove_sidecars(path: Path) -> None:
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
