"""Scene summaries in a KV bucket: written by the executor, read by planners."""

from __future__ import annotations

from nats.js import JetStreamContext

from contracts.scenes import SceneSummary
from services.runtime.nats.kv import TypedKv


class KvSceneSummaries:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._table = TypedKv(js, prefix, "scene_summaries", SceneSummary)

    async def get(self, scene_id: str) -> SceneSummary | None:
        found = await self._table.get(scene_id)
        return found.value if found else None

    async def put(self, summary: SceneSummary) -> None:
        await self._table.put(summary.scene_id, summary)
