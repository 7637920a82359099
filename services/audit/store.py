"""The audit views in SQLite, behind the small ``ViewStore`` port.

Exactly-once comes from the tracking row (eventsourcing's tracking record): the last
applied stream sequence is written in the same transaction as the view rows, and an
event at or below it is skipped, so a redelivery changes nothing. Each event is
projected, written and committed in one call on the store's worker thread
(``sqlite_views.py``), which also answers every read, one call at a time, so a reader
never sees half an event and the event loop never waits on SQLite. An asyncio lock keeps
every call out while ``swap_in`` replaces the file.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from services.audit.projections import Row
from services.audit.run_cache import CACHE_ROWS
from services.audit.run_pages import ORDER, SECTIONS, windows
from services.audit.sqlite_views import SqliteViews, ViewsThread, open_views, remove_sidecars
from services.audit.tables import VIEWS, Applied, Batch, Project

RECORDS_AT = "SELECT * FROM audit_records WHERE stream_seq = ?"
LATEST = "SELECT max(stream_seq) AS seq FROM timeline WHERE run_id = ?"
# A run under way or waiting for a person (its state is none of the ends).
ACTIVE = "(state IS NULL OR state NOT IN ('completed', 'failed'))"


class ViewStore(Protocol):
    """Port: the read model. ``apply`` runs ``project`` at most once per stream sequence."""

    async def last_seq(self) -> int: ...

    async def apply(self, seq: int, run_id: str | None, project: Project) -> Applied:
        """Write ``project(view of run_id)`` with ``seq``, unless ``seq`` was applied."""
        ...

    async def apply_many(self, batch: Batch) -> list[Row]:
        """``apply`` each of a stretch of the log, in one transaction; the audit records
        the stretch produced, in log order, those of events applied before included."""
        ...

    async def runs(
        self, limit: int, user: str | None = None, active: bool = False
    ) -> list[Row]: ...

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
_T = TypeVar("_T")


class SqliteStore:
    """The views in one WAL-mode SQLite file that only the audit service opens.

    ``busy_timeout`` is how long a write waits for another connection's lock on the file
    before it fails (and the event is redelivered); ``cache_rows`` bounds the run views
    kept in memory.
    """

    def __init__(self, path: Path, cache_rows: int = CACHE_ROWS, busy_timeout: float = 5.0) -> None:
        self.path = path
        self._busy_timeout = busy_timeout
        self._views = ViewsThread(f"the audit store {path}", cache_rows)
        self._lock = asyncio.Lock()

    @classmethod
    async def open(
        cls, path: Path, cache_rows: int = CACHE_ROWS, busy_timeout: float = 5.0
    ) -> SqliteStore:
        store = cls(path, cache_rows, busy_timeout)
        try:
            await store._views.connect(store._connect)
        except BaseException:
            await store._views.close()
            raise
        return store

    async def close(self) -> None:
        async with self._lock:
            await self._views.close()

    async def last_seq(self) -> int:
        return await self._run(SqliteViews.last_seq)

    async def apply(self, seq: int, run_id: str | None, project: Project) -> Applied:
        def apply(views: SqliteViews) -> Applied:
            applied = views.apply([(seq, run_id, project)])
            if applied.new:
                return applied
            # Applied before, maybe just before a crash: its records are published again.
            return Applied(new=False, records=views.rows(RECORDS_AT, (seq,)))

        return await self._run(apply)

    async def apply_many(self, batch: Batch) -> list[Row]:
        def apply(views: SqliteViews) -> list[Row]:
            last = views.last_seq()
            # Applied before, maybe just before a crash: their records are published again.
            again = [
                row for seq, _, _ in batch if seq <= last for row in views.rows(RECORDS_AT, (seq,))
            ]
            return again + views.apply(batch).records

        return await self._run(apply)

    async def runs(self, limit: int, user: str | None = None, active: bool = False) -> list[Row]:
        where = [] if user is None else ["user = ?"]
        if active:
            where.append(ACTIVE)
        sql = "SELECT * FROM runs" + (f" WHERE {' AND '.join(where)}" if where else "")
        sql += " ORDER BY created_at DESC, run_id DESC LIMIT ?"
        return await self._rows(sql, (limit,) if user is None else (user, limit))

    async def run(self, run_id: str) -> dict[str, Any] | None:
        def read(views: SqliteViews) -> dict[str, Any] | None:
            found = views.rows("SELECT * FROM runs WHERE run_id = ?", (run_id,))
            if not found:
                return None
            detail: dict[str, Any] = {"run": found[0]}
            for view, order in (
                ("actions", "operation_id"),
                ("audit_records", "stream_seq"),
                ("timeline", "stream_seq"),
            ):
                sql = f"SELECT * FROM {view} WHERE run_id = ? ORDER BY {order}"
                detail[view] = views.rows(sql, (run_id,))
            return detail

        return await self._run(read)

    async def run_page(
        self, run_id: str, offset: int, limit: int, upto_seq: int | None = None
    ) -> dict[str, Any] | None:
        """Rows ``offset`` to ``offset + limit`` of the run (``run_pages.SECTIONS``), its
        audit records and timeline read up to ``upto_seq`` (None: its last event), read
        in one call so the run's row, its actions and the counts agree; None: no such run.
        Beside them: ``rows``, ``upto_seq`` and ``latest_seq``, the run's last event."""

        def read(views: SqliteViews) -> dict[str, Any] | None:
            found = views.rows("SELECT * FROM runs WHERE run_id = ?", (run_id,))
            if not found:
                return None
            latest = views.rows(LATEST, (run_id,))[0]["seq"] or 0
            upto = latest if upto_seq is None else upto_seq
            where = {view: _of_run(view, run_id, upto) for view in SECTIONS}
            counts = {
                view: views.rows(f"SELECT count(*) AS n FROM {view} WHERE {sql}", args)[0]["n"]
                for view, (sql, args) in where.items()
            }
            page: dict[str, Any] = {"run": found[0], "upto_seq": upto, "latest_seq": latest}
            page["rows"] = sum(counts.values())
            for view, (first, many) in windows(counts, offset, limit).items():
                sql, args = where[view]
                select = f"SELECT * FROM {view} WHERE {sql} ORDER BY {ORDER[view]} LIMIT ? OFFSET ?"
                page[view] = views.rows(select, (*args, many, first)) if many else []
            return page

        return await self._run(read)

    async def dump(self) -> dict[str, list[Row]]:
        def read(views: SqliteViews) -> dict[str, list[Row]]:
            dump = {"tracking": [{"last_seq": views.last_seq()}]}
            for view, order in VIEWS.items():
                dump[view] = views.rows(f"SELECT * FROM {view} ORDER BY {order}")
            return dump

        return await self._run(read)

    async def runs_in(self, state: str) -> int:
        """How many runs are in ``state`` now (the approvals-waiting gauge starts there)."""
        found = await self._rows("SELECT count(*) AS n FROM runs WHERE state = ?", (state,))
        return int(found[0]["n"])

    async def records_at(self, seq: int) -> list[Row]:
        """The audit records the event at stream sequence ``seq`` produced (none or one)."""
        return await self._rows(RECORDS_AT, (seq,))

    async def counts(self) -> dict[str, int]:
        def read(views: SqliteViews) -> dict[str, int]:
            return {view: views.rows(f"SELECT count(*) AS n FROM {view}")[0]["n"] for view in VIEWS}

        return await self._run(read)

    async def swap_in(self, fresh: F, catch_up: Callable[[F, int], Awaitable[None]]) -> None:
        """Replace these views with ``fresh`` atomically, after ``catch_up(fresh, our_seq)``
        brought it at least as far as this store got, so no applied event is lost. The
        run views cached for the old file go with its connection."""
        async with self._lock:
            await catch_up(fresh, await self._views.run(SqliteViews.last_seq))
            await fresh.seal()
            await self._views.disconnect()
            try:
                remove_sidecars(self.path)  # a stale WAL must never meet the new file
                os.replace(fresh.path, self.path)
            finally:
                await self._views.connect(self._connect)

    async def _run(self, fn: Callable[[SqliteViews], _T]) -> _T:
        async with self._lock:
            return await self._views.run(fn)

    async def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
        return await self._run(lambda views: views.rows(sql, params))

    def _connect(self) -> sqlite3.Connection:
        # An acked event must not vanish: WAL, and every commit synced.
        return open_views(self.path, ("journal_mode=WAL", "synchronous=FULL"), self._busy_timeout)


def _of_run(view: str, run_id: str, upto: int) -> tuple[str, tuple[Any, ...]]:
    """The rows of ``view`` a page of run ``run_id`` reads: its actions as they stand, its
    audit records and timeline (append-only, in log order) up to stream sequence ``upto``."""
    if view == "actions":
        return "run_id = ?", (run_id,)
    return "run_id = ? AND stream_seq <= ?", (run_id, upto)
