"""The inspection artifact is built while the revision uploads, for the head the commit
should make; a commit that made another head gets an artifact of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

from contracts import inspection
from contracts.scenes import Head
from services.executor.domain.revision_notes import RevisionNotes
from services.executor.memory import MemorySceneStore
from tests.support.fake_bridge import FakeBridge


def _head(revision: int, scene_hash: str) -> Head:
    return Head(
        scene_id="s1",
        revision=revision,
        scene_hash=scene_hash,
        object_name=f"s1/{revision:08d}-{scene_hash}",
        epoch=1,
    )


async def _written(tmp_path: Path, expected_revision: int, head: Head) -> inspection.Inspection:
    store = MemorySceneStore(tmp_path / "store")
    (tmp_path / "store" / "s1").mkdir(parents=True)  # as the commit of the .blend leaves it
    notes = RevisionNotes(FakeBridge(), store, None, lambda: "id")
    saved = asyncio.Event()
    described = notes.describe("s1", saved, (expected_revision, "a" * 64, None))
    saved.set()
    about = await described
    assert about.built is not None and about.built[0] == expected_revision
    name = await notes.write(head, None, described)  # type: ignore[arg-type]
    assert name is not None
    data = await store.read_inspection(name)
    assert data is not None
    return inspection.decode(data)


async def test_write_when_the_commit_made_the_expected_head_uses_the_artifact_built(
    tmp_path: Path,
) -> None:
    artifact = await _written(tmp_path, 2, _head(2, "a" * 64))
    assert (artifact.revision, artifact.scene_hash) == (2, "a" * 64)


async def test_write_when_the_commit_made_another_head_builds_the_artifact_again(
    tmp_path: Path,
) -> None:
    artifact = await _written(tmp_path, 2, _head(3, "b" * 64))
    assert (artifact.revision, artifact.scene_hash) == (3, "b" * 64)
