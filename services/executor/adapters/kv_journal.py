"""The journal in a JetStream KV bucket (no TTL: it outlives the duplicate window)."""

from __future__ import annotations

from nats.js import JetStreamContext

from services.executor.domain.journal import JournalEntry
from services.runtime.nats.kv import TypedKv


class KvJournal:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._table = TypedKv(js, prefix, "journal", JournalEntry)

    async def get(self, key: str) -> JournalEntry | None:
        found = await self._table.get(key)
        return found.value if found else None

    async def put(self, key: str, entry: JournalEntry) -> None:
        await self._table.put(key, entry)

    async def delete(self, key: str) -> None:
        await self._table.delete(key)
