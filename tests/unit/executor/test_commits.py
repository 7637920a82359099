"""A run's commit of its scene. Its lease is renewed on a timer and once more during the
commit; over a network a renewal takes time, and two renewals of one lease revision must
never overlap: the loser of that compare-and-set would read as the scene taken over by
another executor, failing the commit or leaving the lease unreleased. The user's copy of
the file is written while the store takes the revision, and only a stored one reaches it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from contracts.bridge import SavedScene
from contracts.scenes import Head
from services.executor.adapters.exports import SceneExports
from services.executor.domain.ports import Lease
from services.executor.domain.session import Scenes
from services.executor.memory import MemoryLeases, MemorySceneStore
from tests.support.fake_bridge import FakeBridge


class SlowLeases(MemoryLeases):
    """Leases whose renewal reads the record, waits as a network round trip does, then
    compares and sets: overlapping renewals of one revision collide as they do in KV."""

    async def renew(self, lease: Lease) -> Lease:
        await asyncio.sleep(0.03)
        return await super().renew(lease)


class SlowSaves(FakeBridge):
    async def save(self, path: str, compress: bool = False, checked: bool = True) -> SavedScene:
        await asyncio.sleep(0.2)  # a big scene: the timer renews while Blender writes
        return await super().save(path, compress, checked)


async def test_commit_when_the_timer_renews_meanwhile_keeps_the_lease(tmp_path: Path) -> None:
    leases = SlowLeases("me", ttl=0.15)  # the timer renews every 0.05 s
    scenes = Scenes(
        store=MemorySceneStore(tmp_path / "store"),
        leases=leases,
        files=SceneExports(tmp_path / "scenes"),
        work_dir=tmp_path / "work",
        bridge=SlowSaves(),
        warm_for=0.0,
    )
    for i in range(3):
        session = await scenes.open("s1")
        await scenes.bridge.call_tool("object.create", {"name": f"Box{i}"}, f"c{i}")
        await scenes.commit(session, await scenes.bridge.fingerprint(), "ana")
        await asyncio.sleep(0.12)  # more timer renewals before the run ends
        await scenes.close(session)
        assert not session.lost
        # Released, not left to expire: the next run takes it at once.
        assert leases.held["s1"].expires_at == 0.0
    head = await scenes.store.head("s1")
    assert head is not None and head.revision == 3


class FailingStore(MemorySceneStore):
    """A store that refuses the second commit, as when its disk is full."""

    async def commit(self, *args: Any, **kwargs: Any) -> Head:
        if self.heads:
            raise OSError("no space left on device")
        return await super().commit(*args, **kwargs)


async def test_commit_when_the_store_refuses_leaves_the_users_file_as_it_was(
    tmp_path: Path,
) -> None:
    # The user's copy is written while the store takes the revision: a refused revision
    # must not reach it, nor leave the half-made copy behind.
    scenes = Scenes(
        store=FailingStore(tmp_path / "store"),
        leases=MemoryLeases("me"),
        files=SceneExports(tmp_path / "scenes"),
        work_dir=tmp_path / "work",
        bridge=FakeBridge(),
        warm_for=0.0,
    )
    session = await scenes.open("s1")
    await scenes.bridge.call_tool("object.create", {"name": "A"}, "c1")
    exported = await scenes.commit(session, await scenes.bridge.fingerprint(), "ana")
    first = exported.read_bytes()
    await scenes.bridge.call_tool("object.create", {"name": "B"}, "c2")
    with pytest.raises(OSError, match="no space left"):
        await scenes.commit(session, await scenes.bridge.fingerprint(), "ana")
    await scenes.close(session)
    assert exported.read_bytes() == first
    assert scenes.files.changed("s1") is None  # its record still names these bytes
    assert sorted(p.name for p in exported.parent.iterdir()) == [".s1.blend.written", "s1.blend"]
