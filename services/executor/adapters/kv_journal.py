"""The journal in a JetStream KV bucket (no TTL: it outlives the duplicate window)."""

from __future__ import annotations

from collections.abc import Sequence

from nats.aio.client import Client
from nats.js import JetStreamContext

from services.executor.domain.journal import JournalEntry
from services.runtime.nats.kv import TypedKv


class KvJournal:
    def __init__(self, js: JetStreamContext, prefix: str, nc: Client | None = None) -> None:
        self._table = TypedKv(js, prefix, "journal", JournalEntry)
        self._nc = nc  # with it, a run's entries are stored as atomic batches (ADR 0069)

    async def get(self, key: str) -> JournalEntry | None:
        found = await self._table.get(key)
        return found.value if found else None

    async def put(self, key: str, entry: JournalEntry) -> None:
        await self._table.put(key, entry)

    async def put_many(self, entries: Sequence[tuple[str, JournalEntry]]) -> None:
        await self._table.put_many(entries, self._nc)

    async def delete(self, key: str) -> None:
        await self._table.delete(key)
