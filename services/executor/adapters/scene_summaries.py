"""Scene summaries in a KV bucket: written by the executor, read by planners."""

from __future__ import annotations

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError

from contracts.scenes import SceneSummary
from services.runtime.streams import ensure_kv


class KvSceneSummaries:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix

    async def get(self, scene_id: str) -> SceneSummary | None:
        kv = await ensure_kv(self._js, self._prefix, "scene_summaries")
        try:
            entry = await kv.get(scene_id)
        except KeyNotFoundError:
            return None
        return msgspec.json.decode(entry.value or b"", type=SceneSummary)

    async def put(self, summary: SceneSummary) -> None:
        kv = await ensure_kv(self._js, self._prefix, "scene_summaries")
        await kv.put(summary.scene_id, msgspec.json.encode(summary))
