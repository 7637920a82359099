"""Opening and committing scenes across the change of the scene hash (ADR 0012).

Revisions committed before the hash combined per-datablock digests record the
whole-snapshot hash; they must still load, and a save whose full hash disagrees with the
run's must not be committed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.bridge import SavedScene
from services.bridge.registry import REGISTRY, Outcome, Touches, tool
from services.executor.adapters.exports import SceneExports
from services.executor.domain.session import RevisionCorrupt, Scenes
from services.executor.memory import MemoryLeases, MemorySceneStore
from tests.support.fake_bridge import FakeBridge


class UpgradedBridge(FakeBridge):
    """A bridge whose old, whole-snapshot hash of a scene differs from its current one."""

    stale_save = False  # a digest cache that disagrees with the full hash at save

    async def fingerprint_full(self, scheme: str = "digests") -> str:
        current = await super().fingerprint_full(scheme)
        return f"old-{current}" if scheme == "whole_snapshot" else current

    async def save(self, path: str, compress: bool = False, checked: bool = True) -> SavedScene:
        saved = await super().save(path, compress, checked)
        if self.stale_save:
            # The cache's hash is the one the run saw; only the full one (checked at save,
            # or by ``verify`` after an unchecked save) sees the change.
            self.scene["__changed_behind_the_cache__"] = {}
            if checked:
                saved = SavedScene(path=saved.path, bytes=saved.bytes, hash=self._hash())
        return saved


async def stored_scene(tmp_path: Path, bridge: UpgradedBridge, recorded: str) -> Scenes:
    """A store holding one revision of scene ``s`` (one object) whose head records
    ``recorded`` as its hash ("old" and "new": that scene's hash in either scheme)."""
    bridge.scene = {"Box": {"location": [0, 0, 0], "mods": {}}}
    blend = tmp_path / "r1.blend"
    await bridge.save(str(blend))
    hashes = {"old": await bridge.fingerprint_full("whole_snapshot"), "new": bridge._hash()}
    store = MemorySceneStore(tmp_path / "store")
    await store.commit("s", blend, hashes.get(recorded, recorded), None, epoch=1)
    await bridge.reset()
    return Scenes(store, MemoryLeases(), SceneExports(tmp_path / "scenes"), tmp_path, bridge)


async def test_open_when_head_records_the_whole_snapshot_hash_loads_it(tmp_path: Path) -> None:
    bridge = UpgradedBridge()
    scenes = await stored_scene(tmp_path, bridge, "old")
    session = await scenes.open("s")
    assert session.start_hash == session.head_hash == bridge._hash()
    assert session.head is not None and session.head.scene_hash.startswith("old-")
    await scenes.close(session)


async def test_commit_when_old_head_and_scene_unchanged_stores_no_revision(
    tmp_path: Path,
) -> None:
    bridge = UpgradedBridge()
    scenes = await stored_scene(tmp_path, bridge, "old")
    session = await scenes.open("s")
    await scenes.commit(session, session.start_hash, owner="ana")
    head = await scenes.store.head("s")
    assert head is not None and head.revision == 1
    await scenes.close(session)


async def test_open_when_head_hash_matches_neither_scheme_is_corrupt(tmp_path: Path) -> None:
    bridge = UpgradedBridge()
    scenes = await stored_scene(tmp_path, bridge, "0" * 64)
    with pytest.raises(RevisionCorrupt, match="revision 1 of scene s hashes to"):
        await scenes.open("s")


async def test_commit_when_full_hash_at_save_differs_stores_nothing(tmp_path: Path) -> None:
    bridge = UpgradedBridge()
    scenes = await stored_scene(tmp_path, bridge, "new")
    session = await scenes.open("s")
    await bridge.call_tool("object.create", {"name": "Ball"}, "c1")
    ran = await bridge.fingerprint()
    bridge.stale_save = True
    with pytest.raises(RevisionCorrupt, match=f"hashes to (?!{ran})[0-9a-f]{{64}}, not {ran}"):
        await scenes.commit(session, ran, owner="ana")
    head = await scenes.store.head("s")
    assert head is not None and head.revision == 1
    assert scenes.files.changed("s") is None  # the user's copy was not replaced either
    await scenes.close(session)


@pytest.mark.clause("001-§core-concepts.1")
def test_tool_when_it_writes_without_touches_is_refused_at_registration() -> None:
    spec = {
        "name": "test.undeclared",
        "description": "writes without saying what",
        "input_schema": {"type": "object"},
        "safety_level": "safe_write",
        "idempotence_class": "idempotent",
        "compensation": "checkpoint",
    }
    with pytest.raises(ValueError, match="does not declare what it touches"):
        tool(**spec)(lambda args: Outcome(data=None, mutated=True))
    assert "test.undeclared" not in REGISTRY


def test_touches_when_values_are_names_or_lists_reads_both() -> None:
    touches = Touches(("name", "objects"))
    named = touches.named({"name": "A", "objects": ["B", 3], "other": "X"}, {"name": "C"}, None)
    assert named == {"A", "B", "C"}
