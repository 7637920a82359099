"""The fresh SQLite file ``blendmesh audit rebuild`` replays the log into.

Nobody reads it until ``SqliteStore.swap_in`` moves it over the live views, and a crash
mid-rebuild loses nothing but the rebuild, which starts again from the log. So it trades
what the live store must not, for speed:

- each fetched batch is one call to the worker thread that owns its connection
  (``sqlite_views.py``), in one transaction, however many events it holds;
- the file is written with ``synchronous=OFF`` and the rollback journal in memory, and
  fsynced once in ``seal``, before it may replace the live file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from pathlib import Path

from services.audit.run_cache import CACHE_ROWS
from services.audit.sqlite_views import ViewsThread, open_views, remove_sidecars
from services.audit.tables import Batch


class RebuildStore:
    """A fresh store at ``path``, filled batch by batch by ``replay`` and then sealed."""

    def __init__(self, path: Path, cache_rows: int = CACHE_ROWS) -> None:
        self.path = path
        self._views = ViewsThread(f"the rebuild store {path}", cache_rows)

    @classmethod
    async def open(cls, path: Path, cache_rows: int = CACHE_ROWS) -> RebuildStore:
        """An empty store at ``path``, discarding whatever an interrupted rebuild left."""
        store = cls(path, cache_rows)
        try:
            await store._views.connect(store._connect)
        except BaseException:
            await store.close()
            raise
        return store

    async def apply_many(self, batch: Batch) -> None:
        """Apply a stretch of the log in one transaction, skipping what was applied."""
        if batch:
            await self._views.run(lambda views: views.apply(batch))

    async def seal(self) -> None:
        """Write the file through to the disk and close it, ready to be moved."""
        try:
            await self._views.disconnect()
            # journal_mode=MEMORY left no journal or WAL beside it: the file is whole.
            await asyncio.to_thread(self._fsync)
        finally:
            await self.close()

    async def close(self) -> None:
        """Close without sealing (a failed rebuild); the caller discards the file."""
        await self._views.close()

    # -- on a worker thread --------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        remove_sidecars(self.path)
        # Only this rebuild writes the file and a crash discards it: no fsync per commit
        # and no journal on disk; ``seal`` fsyncs the finished file before the swap.
        return open_views(self.path, ("journal_mode=MEMORY", "synchronous=OFF"))

    def _fsync(self) -> None:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
