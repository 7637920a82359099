"""Scene revisions (Object Store + compare-and-set head) and leases on a real nats-server."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.executor.leases import KvLeases
from services.executor.ports import LeaseHeld, LeaseLost, StaleCommit
from services.executor.scene_store import JetStreamSceneStore
from services.runtime.host import Bus

pytestmark = pytest.mark.integration


async def test_scene_store_when_committed_twice_keeps_both_revisions(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    assert await store.head("s") is None
    (tmp_path / "a.blend").write_bytes(b"first")
    first = await store.commit("s", tmp_path / "a.blend", "h1", None, epoch=1)
    (tmp_path / "b.blend").write_bytes(b"second")
    second = await store.commit("s", tmp_path / "b.blend", "h2", first, epoch=1)
    head = await store.head("s")
    assert head is not None and (head.revision, head.scene_hash) == (2, "h2")
    await store.fetch(first, tmp_path / "old.blend")
    assert (tmp_path / "old.blend").read_bytes() == b"first"
    await store.fetch(second, tmp_path / "new.blend")
    assert (tmp_path / "new.blend").read_bytes() == b"second"


async def test_scene_store_when_parent_is_stale_refuses_commit(bus: Bus, tmp_path: Path) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    (tmp_path / "a.blend").write_bytes(b"x")
    base = await store.commit("s", tmp_path / "a.blend", "h1", None, epoch=1)
    await store.commit("s", tmp_path / "a.blend", "h2", base, epoch=2)
    with pytest.raises(StaleCommit, match="another executor"):
        await store.commit("s", tmp_path / "a.blend", "h3", base, epoch=1)
    with pytest.raises(StaleCommit):
        await store.commit("s", tmp_path / "a.blend", "h4", None, epoch=1)
    head = await store.head("s")
    assert head is not None and head.scene_hash == "h2"


async def test_lease_when_held_by_another_is_refused_until_expiry(bus: Bus) -> None:
    now = [100.0]
    one = KvLeases(bus.js, bus.prefix, "exec-1", ttl=5, clock=lambda: now[0])
    two = KvLeases(bus.js, bus.prefix, "exec-2", ttl=5, clock=lambda: now[0])
    held = await one.acquire("s")
    with pytest.raises(LeaseHeld) as info:
        await two.acquire("s")
    assert info.value.retry_in == pytest.approx(5)
    now[0] = 106.0  # exec-1 died and stopped renewing
    taken = await two.acquire("s")
    assert taken.epoch == held.epoch + 1
    with pytest.raises(LeaseLost):
        await one.renew(held)


async def test_lease_when_released_is_free_for_others(bus: Bus) -> None:
    one = KvLeases(bus.js, bus.prefix, "exec-1", ttl=30)
    two = KvLeases(bus.js, bus.prefix, "exec-2", ttl=30)
    lease = await one.renew(await one.acquire("s"))
    await one.release(lease)
    assert (await two.acquire("s")).owner == "exec-2"
