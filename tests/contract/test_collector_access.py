"""The executor's own login may do all a collection does, and nothing about it needs more:
commit chunks, tag, list and delete revisions, chunks, result images and uploads."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.executor.adapters.collector import Collector
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.uploads import ObjectStoreUploads
from services.executor.domain.retention import Retention
from services.runtime.service.host import Bus

pytestmark = pytest.mark.integration


async def test_collect_when_logged_in_as_the_executor_removes_what_the_policy_drops(
    executor_bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(executor_bus.js, executor_bus.prefix)
    head = None
    for n in range(3):
        path = tmp_path / f"{n}.blend"
        path.write_bytes(b"BLENDER" + bytes([n]) * 2_000_000)
        head = await store.commit("s", path, f"{n}" * 16, head, 1, owner="ana")
    await store.put_result("_results/x", path)
    await ObjectStoreUploads(executor_bus.js, executor_bus.prefix).stage("ana", b"BLENDER")
    policy = Retention(keep=1, chunk_grace=0.0, result_ttl=0.001, upload_ttl=0.001)
    collector = Collector(executor_bus.js, executor_bus.prefix, policy)
    await collector.tags.tag("s", 1, "kept", by="ana")
    got = await collector.collect()
    assert (got.revisions, got.results, got.uploads) == (1, 1, 1) and got.chunks >= 1
    assert head is not None and await store.read(head) == path.read_bytes()
    assert [n for s, n, _ in await store.revisions() if s == "s"] == [1, 3]
