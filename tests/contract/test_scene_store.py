"""The executor's SceneStore port: MemorySceneStore and JetStreamSceneStore held to the same
behaviour. A commit is a compare-and-set on the head the writer read."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.domain.ports import SceneStore, StaleCommit
from services.executor.memory import MemorySceneStore
from services.runtime.service.host import Bus


def blend(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / f"{data.decode()}.blend"
    path.write_bytes(data)
    return path


class SceneStoreContract:
    """Subclass with a ``store`` fixture."""

    async def test_head_when_scene_never_committed_is_none(self, store: SceneStore) -> None:
        assert await store.head("s") is None

    async def test_result_image_when_kept_fetches_back_and_missing_is_false(
        self, store: SceneStore, tmp_path: Path
    ) -> None:
        await store.put_result("_results/abc", blend(tmp_path, b"image"))
        assert await store.fetch_result("_results/abc", tmp_path / "got" / "a.blend")
        assert (tmp_path / "got" / "a.blend").read_bytes() == b"image"
        assert not await store.fetch_result("_results/none", tmp_path / "b.blend")
        assert not (tmp_path / "b.blend").exists()
        assert await store.head("_results") is None  # an image is no scene

    async def test_commit_when_first_becomes_head_and_fetches_back(
        self, store: SceneStore, tmp_path: Path
    ) -> None:
        head = await store.commit("s", blend(tmp_path, b"first"), "h1", None, epoch=3)
        assert (head.scene_id, head.revision, head.scene_hash, head.epoch) == ("s", 1, "h1", 3)
        assert await store.head("s") == head
        assert await store.head("other") is None
        await store.fetch(head, tmp_path / "out" / "s.blend")
        assert (tmp_path / "out" / "s.blend").read_bytes() == b"first"

    async def test_commit_when_committed_twice_keeps_both_revisions(
        self, store: SceneStore, tmp_path: Path
    ) -> None:
        first = await store.commit("s", blend(tmp_path, b"first"), "h1", None, epoch=1)
        second = await store.commit("s", blend(tmp_path, b"second"), "h2", first, epoch=1)
        head = await store.head("s")
        assert head == second and (head.revision, head.scene_hash) == (2, "h2")
        await store.fetch(first, tmp_path / "old.blend")
        assert (tmp_path / "old.blend").read_bytes() == b"first"
        await store.fetch(second, tmp_path / "new.blend")
        assert (tmp_path / "new.blend").read_bytes() == b"second"

    async def test_commit_when_parent_is_stale_raises_and_keeps_head(
        self, store: SceneStore, tmp_path: Path
    ) -> None:
        base = await store.commit("s", blend(tmp_path, b"base"), "h1", None, epoch=1)
        newer = await store.commit("s", blend(tmp_path, b"newer"), "h2", base, epoch=2)
        with pytest.raises(StaleCommit, match="another executor"):
            await store.commit("s", blend(tmp_path, b"stale"), "h3", base, epoch=1)
        assert await store.head("s") == newer

    async def test_commit_when_head_exists_but_no_parent_given_raises(
        self, store: SceneStore, tmp_path: Path
    ) -> None:
        head = await store.commit("s", blend(tmp_path, b"base"), "h1", None, epoch=1)
        with pytest.raises(StaleCommit):
            await store.commit("s", blend(tmp_path, b"again"), "h4", None, epoch=1)
        assert await store.head("s") == head

    async def test_commit_when_other_scene_exists_starts_its_own_history(
        self, store: SceneStore, tmp_path: Path
    ) -> None:
        a = await store.commit("a", blend(tmp_path, b"a"), "ha", None, epoch=1)
        b = await store.commit("b", blend(tmp_path, b"b"), "hb", None, epoch=1)
        assert (a.revision, b.revision) == (1, 1)
        assert await store.head("a") == a and await store.head("b") == b

    async def test_inspection_when_stored_is_named_after_its_revision_and_reads_back(
        self, store: SceneStore, tmp_path: Path
    ) -> None:
        first = await store.commit("s", blend(tmp_path, b"first"), "h1" * 8, None, epoch=1)
        second = await store.commit("s", blend(tmp_path, b"second"), "h2" * 8, first, epoch=1)
        assert await store.inspection(first) is None
        name = await store.put_inspection(first, b'{"revision":1}')
        assert name.endswith(".inspection.json") and name.startswith(first.object_name)
        assert await store.inspection(first) == name
        assert await store.inspection(second) is None  # each revision has its own
        assert await store.read_inspection(name) == b'{"revision":1}'
        other = await store.put_inspection(second, b'{"revision":2}')
        assert other != name and await store.read_inspection(other) == b'{"revision":2}'

    async def test_read_inspection_when_name_is_unknown_or_a_blend_is_none(
        self, store: SceneStore, tmp_path: Path
    ) -> None:
        head = await store.commit("s", blend(tmp_path, b"scene"), "h1", None, epoch=1)
        assert await store.read_inspection(f"{head.object_name}.inspection.json") is None
        assert await store.read_inspection(head.object_name) is None  # the .blend itself


class TestMemorySceneStore(SceneStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> SceneStore:
        return MemorySceneStore(tmp_path / "store")


@pytest.mark.integration
class TestJetStreamSceneStore(SceneStoreContract):
    @pytest.fixture
    def store(self, executor_bus: Bus) -> SceneStore:
        return JetStreamSceneStore(executor_bus.js, executor_bus.prefix)
