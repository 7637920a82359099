"""The executor's SceneSummaries port: MemorySceneSummaries and KvSceneSummaries held to the
same behaviour. Planners read the summary the executor wrote after a scene's last commit."""

from __future__ import annotations

import pytest

from contracts.scenes import ObjectSummary, SceneSummary
from services.executor.adapters.scene_summaries import KvSceneSummaries
from services.executor.domain.ports import SceneSummaries
from services.executor.memory import MemorySceneSummaries
from services.runtime.service.host import Bus


def summary(scene_id: str, *names: str) -> SceneSummary:
    objects = [
        ObjectSummary(
            name=name,
            type="MESH",
            location=[0.0, 0.0, 1.0],
            rotation_degrees=[0.0, 0.0, 0.0],
            scale=[1.0, 1.0, 1.0],
            modifiers=["Bevel:BEVEL"],
            materials=[],
        )
        for name in names
    ]
    return SceneSummary(
        scene_id=scene_id, scene_hash="h-" + scene_id, objects=objects, materials=[]
    )


class SceneSummariesContract:
    """Subclass with a ``summaries`` fixture."""

    async def test_get_when_scene_never_saved_returns_none(self, summaries: SceneSummaries) -> None:
        assert await summaries.get("s") is None

    async def test_put_when_read_back_returns_equal_summary(
        self, summaries: SceneSummaries
    ) -> None:
        await summaries.put(summary("s", "Box"))
        assert await summaries.get("s") == summary("s", "Box")
        assert await summaries.get("other") is None

    async def test_put_when_scene_saved_again_keeps_only_latest(
        self, summaries: SceneSummaries
    ) -> None:
        await summaries.put(summary("s", "Box"))
        await summaries.put(summary("s", "Box", "Ball"))
        assert await summaries.get("s") == summary("s", "Box", "Ball")


class TestMemorySceneSummaries(SceneSummariesContract):
    @pytest.fixture
    def summaries(self) -> SceneSummaries:
        return MemorySceneSummaries()


@pytest.mark.integration
class TestKvSceneSummaries(SceneSummariesContract):
    @pytest.fixture
    def summaries(self, executor_bus: Bus) -> SceneSummaries:
        return KvSceneSummaries(executor_bus.js, executor_bus.prefix)
