"""The journal in a JetStream KV bucket (no TTL: it outlives the duplicate window)."""

from __future__ import annotations

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.kv import KeyValue

from services.executor.domain.journal import JournalEntry
from services.runtime.streams import ensure_kv


class KvJournal:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix

    async def _kv(self) -> KeyValue:
        return await ensure_kv(self._js, self._prefix, "journal")

    async def get(self, key: str) -> JournalEntry | None:
        try:
            entry = await (await self._kv()).get(key)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        if not entry.value:
            return None
        return msgspec.json.decode(entry.value, type=JournalEntry)

    async def put(self, key: str, entry: JournalEntry) -> None:
        await (await self._kv()).put(key, msgspec.json.encode(entry))

    async def delete(self, key: str) -> None:
        await (await self._kv()).delete(key)
