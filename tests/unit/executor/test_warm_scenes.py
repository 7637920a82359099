"""Warm scenes (ADR 0037): after a run an executor keeps holding the scene its Blender has
loaded, as an idle lease, so the next run on it comes back and skips the reload; others
defer to a live holder for a bounded time, then take the scene over, and the former
holder's stale copy never reaches the store."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from services.executor.adapters.exports import SceneExports
from services.executor.domain.ports import Lease, LeaseHeld, LeaseLost
from services.executor.domain.session import (
    DEFERRALS_KEPT,
    TAKEOVER_AFTER,
    WARM_RETRY,
    Scenes,
    SceneSession,
)
from services.executor.memory import MemoryLeases, MemorySceneStore
from tests.support.fake_bridge import FakeBridge

TTL = 0.3  # renewals every 0.1 s: the keeper's ticks are quick to wait for


class CountingBridge(FakeBridge):
    """The in-memory bridge, counting the scenes loaded into it from files."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    async def load(self, path: str) -> str:
        self.loads += 1
        return await super().load(path)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Mesh:
    """Executors sharing one store and one bucket of leases, each with its own Blender."""

    def __init__(self, tmp_path: Path, ttl: float = TTL) -> None:
        self.tmp_path = tmp_path
        self.ttl = ttl
        self.store = MemorySceneStore(tmp_path / "store")
        self.held: dict[str, Lease] = {}

    def executor(self, name: str, warm_for: float = 30.0, **kwargs: Any) -> Scenes:
        return Scenes(
            store=self.store,
            leases=MemoryLeases(name, ttl=self.ttl, held=self.held),
            files=SceneExports(self.tmp_path / name / "scenes"),
            work_dir=self.tmp_path / name / "work",
            bridge=CountingBridge(),
            warm_for=warm_for,
            **kwargs,
        )


async def run(scenes: Scenes, scene_id: str, obj: str | None = None) -> SceneSession:
    """One run on ``scene_id``: add ``obj`` (if named) and commit, then close."""
    session = await scenes.open(scene_id)
    try:
        if obj is not None:
            await scenes.bridge.call_tool("object.create", {"name": obj}, f"c-{obj}")
            await scenes.commit(session, await scenes.bridge.fingerprint(), "ana")
    finally:
        await scenes.close(session)
    return session


def loads(scenes: Scenes) -> int:
    bridge = scenes.bridge
    assert isinstance(bridge, CountingBridge)
    return bridge.loads


async def until(condition: Any, within: float = 2.0) -> None:
    for _ in range(int(within / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


@pytest.fixture
def mesh(tmp_path: Path) -> Mesh:
    return Mesh(tmp_path)


async def test_close_when_warm_keeps_an_idle_renewed_hold_and_the_next_run_skips_the_reload(
    mesh: Mesh,
) -> None:
    a = mesh.executor("a")
    await run(a, "s", "Box")
    hold = mesh.held["s"]
    assert (hold.owner, hold.idle) == ("a", True)
    assert a.warm is not None and a.warm.lease.scene_id == "s"
    await asyncio.sleep(TTL * 1.5)  # past the run's expiry: the keeper renewed it
    assert mesh.held["s"].expires_at > hold.expires_at and mesh.held["s"].idle
    await run(a, "s", "Ball")
    assert loads(a) == 0  # revision 1 stayed in the Blender, and so did 2
    assert (await mesh.store.head("s")).revision == 2  # type: ignore[union-attr]
    await a.shutdown()


async def test_open_when_holding_own_warm_scene_turns_it_into_a_running_lease(
    mesh: Mesh,
) -> None:
    a = mesh.executor("a")
    first = await run(a, "s", "Box")
    session = await a.open("s")
    assert a.warm is None
    running = mesh.held["s"]
    assert (running.owner, running.idle, running.epoch) == ("a", False, first.lease.epoch + 1)
    await asyncio.sleep(TTL * 1.5)  # no stopped keeper renews the old record meanwhile
    with pytest.raises(LeaseLost):
        await a.leases.renew(first.lease)
    await a.close(session)
    await a.shutdown()


async def test_close_when_warm_holds_are_off_releases_the_lease(mesh: Mesh) -> None:
    a = mesh.executor("a", warm_for=0.0)
    await run(a, "s", "Box")
    assert mesh.held["s"].expires_at == 0.0 and a.warm is None
    assert (await mesh.executor("b").open("s")).lease.owner == "b"


async def test_close_when_the_bridge_holds_another_scene_releases_the_lease(
    mesh: Mesh,
) -> None:
    a = mesh.executor("a")
    await run(a, "s", "Box")
    session = await a.open("s")
    a.loaded = ("t", 1, "h")  # e.g. the run ended on another scene's file
    await a.close(session)
    assert mesh.held["s"].expires_at == 0.0 and a.warm is None


async def test_open_another_scene_releases_the_warm_hold_on_the_first(mesh: Mesh) -> None:
    a = mesh.executor("a")
    await run(a, "s", "Box")
    await run(a, "t", "Cone")
    assert mesh.held["s"].expires_at == 0.0
    assert a.warm is not None and a.warm.lease.scene_id == "t" and mesh.held["t"].idle
    assert (await mesh.executor("b").open("s")).lease.owner == "b"  # free at once
    await a.shutdown()


async def test_open_another_scene_when_it_is_busy_keeps_the_warm_hold(mesh: Mesh) -> None:
    a, b = mesh.executor("a"), mesh.executor("b")
    busy = await b.open("t")
    await run(a, "s", "Box")
    with pytest.raises(LeaseHeld, match="being written by b"):
        await a.open("t")
    assert a.warm is not None and mesh.held["s"].owner == "a" and mesh.held["s"].idle
    await b.close(busy)
    await asyncio.gather(a.shutdown(), b.shutdown())


async def test_keeper_when_the_bridge_is_stopped_for_idling_releases_the_hold(
    mesh: Mesh,
) -> None:
    running = True
    a = mesh.executor("a", holds_scene=lambda: running)
    await run(a, "s", "Box")
    assert mesh.held["s"].idle
    running = False  # the Blender was stopped: it holds no scene
    await until(lambda: mesh.held["s"].expires_at == 0.0)
    assert a.warm is None


async def test_close_when_the_bridge_was_stopped_releases_instead_of_holding(
    mesh: Mesh,
) -> None:
    a = mesh.executor("a", holds_scene=lambda: False)
    await run(a, "s", "Box")
    assert mesh.held["s"].expires_at == 0.0 and a.warm is None


async def test_keeper_when_the_warm_window_ends_releases_the_hold(mesh: Mesh) -> None:
    a = mesh.executor("a", warm_for=0.15)
    await run(a, "s", "Box")
    assert mesh.held["s"].idle and mesh.held["s"].expires_at > 0
    await until(lambda: mesh.held["s"].expires_at == 0.0)
    assert a.warm is None


async def test_shutdown_releases_the_warm_hold_and_holds_no_more(mesh: Mesh) -> None:
    a = mesh.executor("a")
    await run(a, "s", "Box")
    await a.shutdown()
    assert mesh.held["s"].expires_at == 0.0 and a.warm is None
    await run(a, "s", "Ball")  # a run finishing while the executor stops
    assert mesh.held["s"].expires_at == 0.0 and a.warm is None


async def test_open_when_a_live_executor_holds_it_warm_defers_with_a_short_retry(
    mesh: Mesh,
) -> None:
    a, b = mesh.executor("a"), mesh.executor("b")
    await run(a, "s", "Box")
    epoch = mesh.held["s"].epoch
    with pytest.raises(LeaseHeld, match="held warm by a") as info:
        await b.open("s")
    assert (info.value.idle, info.value.retry_in, info.value.epoch) == (True, WARM_RETRY, epoch)
    assert mesh.held["s"].owner == "a" and loads(b) == 0
    await a.shutdown()


async def test_open_after_deferring_past_the_bound_takes_the_warm_hold_over(
    mesh: Mesh,
) -> None:
    clock = Clock()
    a, b = mesh.executor("a"), mesh.executor("b", clock=clock)
    await run(a, "s", "Box")
    held = mesh.held["s"]
    for _ in range(3):
        with pytest.raises(LeaseHeld):
            await b.open("s")
        clock.now += TAKEOVER_AFTER / 3 - 0.01  # not yet
    clock.now += 0.05
    session = await b.open("s")
    assert (session.lease.owner, session.lease.epoch) == ("b", held.epoch + 1)
    assert not session.lease.idle and loads(b) == 1  # b had never loaded it
    await until(lambda: a.warm is None)  # a's keeper found the hold taken
    with pytest.raises(LeaseHeld, match="being written by b"):
        await a.open("s")  # b runs it now: never taken before it expires
    await b.close(session)
    await b.shutdown()


async def test_former_warm_holder_when_taken_over_is_fenced_and_reloads_the_new_head(
    mesh: Mesh,
) -> None:
    clock = Clock()
    a, b = mesh.executor("a"), mesh.executor("b", clock=clock, takeover_after=1.0)
    first = await run(a, "s", "Box")
    stale = mesh.held["s"]
    with pytest.raises(LeaseHeld):
        await b.open("s")
    clock.now += 1.0
    taken = await run(b, "s", "Ball")  # b commits revision 2
    await until(lambda: a.warm is None)
    with pytest.raises(LeaseLost):
        await a.leases.renew(stale)  # a's old epoch writes nothing
    await b.shutdown()  # b's warm hold released: a may run the scene again
    before = loads(a)
    again = await a.open("s")
    assert again.lease.epoch > taken.lease.epoch > first.lease.epoch
    assert again.head is not None and again.head.revision == 2
    assert loads(a) == before + 1  # revision 1 in a's Blender is not the head any more
    assert set(a.bridge.scene) == {"Box", "Ball"}  # type: ignore[attr-defined]
    await a.close(again)
    await a.shutdown()


async def test_open_never_takes_over_a_running_lease_however_long_it_defers(
    mesh: Mesh,
) -> None:
    clock = Clock()
    a, b = mesh.executor("a"), mesh.executor("b", clock=clock)
    session = await a.open("s")
    for _ in range(3):
        with pytest.raises(LeaseHeld) as info:
            await b.open("s")
        assert not info.value.idle
        clock.now += TAKEOVER_AFTER
    assert mesh.held["s"].owner == "a" and not b.deferred
    await a.close(session)
    await a.shutdown()


async def test_open_when_the_warm_holder_died_takes_the_scene_once_its_hold_expires(
    mesh: Mesh,
) -> None:
    a, b = mesh.executor("a"), mesh.executor("b")
    await run(a, "s", "Box")
    assert a.warm is not None and a.warm.keeper is not None
    a.warm.keeper.cancel()  # a died: nobody renews its hold any more
    with pytest.raises(LeaseHeld):
        await b.open("s")
    await asyncio.sleep(TTL + 0.05)
    session = await b.open("s")  # no takeover needed: the hold expired
    assert session.lease.owner == "b" and session.head is not None
    assert set(b.bridge.scene) == {"Box"}  # type: ignore[attr-defined]
    await b.close(session)
    await b.shutdown()


async def test_a_new_warm_hold_by_the_same_holder_restarts_the_deferral_bound(
    mesh: Mesh,
) -> None:
    clock = Clock()
    a, b = mesh.executor("a"), mesh.executor("b", clock=clock)
    await run(a, "s", "Box")
    with pytest.raises(LeaseHeld):
        await b.open("s")  # the run then came to a, which holds the scene warm again
    await run(a, "s", "Ball")
    clock.now += TAKEOVER_AFTER
    with pytest.raises(LeaseHeld):
        await b.open("s")  # a's new hold (a new epoch) is waited for afresh
    assert mesh.held["s"].owner == "a"
    await a.shutdown()


async def test_deferrals_remembered_are_bounded(mesh: Mesh) -> None:
    b = mesh.executor("b")
    for i in range(DEFERRALS_KEPT + 20):
        b._waited_out(LeaseHeld(f"s{i}", "a", 1.0, True, 1))
    assert len(b.deferred) == DEFERRALS_KEPT
    assert ("s0", "a", 1) not in b.deferred  # the oldest went first


class FlakyLeases(MemoryLeases):
    """Renewals fail for a while, as when the connection to NATS is being re-made."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failing = 0
        self.failed = 0

    async def renew(self, lease: Lease) -> Lease:
        if self.failing:
            self.failing -= 1
            self.failed += 1
            raise ConnectionError("reconnecting")
        return await super().renew(lease)


async def test_close_when_marking_the_hold_idle_fails_releases_and_holds_nothing(
    mesh: Mesh,
) -> None:
    a = mesh.executor("a")
    a.leases = leases = FlakyLeases("a", ttl=TTL, held=mesh.held)
    await run(a, "s", "Box")
    session = await a.open("s")
    leases.failing = 1
    await a.close(session)
    assert leases.failed == 1 and a.warm is None
    assert mesh.held["s"].expires_at == 0.0


async def test_keeper_when_a_renewal_fails_keeps_the_hold_and_tries_again(mesh: Mesh) -> None:
    a = mesh.executor("a")
    a.leases = leases = FlakyLeases("a", ttl=TTL, held=mesh.held)
    await run(a, "s", "Box")
    leases.failing = 1
    await until(lambda: leases.failed == 1)
    renewed = mesh.held["s"].kv_revision
    await until(lambda: mesh.held["s"].kv_revision > renewed)
    assert a.warm is not None and mesh.held["s"].idle
    await a.shutdown()


async def test_close_when_taken_over_during_the_run_holds_nothing(mesh: Mesh) -> None:
    a = mesh.executor("a")
    a.leases = MemoryLeases("a", ttl=30.0, held=mesh.held)  # no renewal during the run
    session = await a.open("s")
    await a.bridge.call_tool("object.create", {"name": "Box"}, "c1")
    await a.commit(session, await a.bridge.fingerprint(), "ana")
    mesh.held["s"] = Lease(scene_id="s", owner="c", epoch=9, expires_at=1e12, kv_revision=99)
    await a.close(session)
    assert a.warm is None and mesh.held["s"].owner == "c"


class DownLeases(MemoryLeases):
    """The bucket cannot be reached for acquires or for releases (renewals still work)."""

    acquire_down = False
    release_down = False

    async def acquire(self, scene_id: str, take_idle: bool = False) -> Lease:
        if self.acquire_down:
            raise ConnectionError("no responders")
        return await super().acquire(scene_id, take_idle)

    async def retake(self, lease: Lease) -> Lease:
        if self.acquire_down:
            raise ConnectionError("no responders")
        return await super().retake(lease)

    async def release(self, lease: Lease) -> None:
        if self.release_down:
            raise ConnectionError("no responders")
        await super().release(lease)


async def test_open_own_warm_scene_when_the_bucket_fails_drops_the_hold_to_expire(
    mesh: Mesh,
) -> None:
    a = mesh.executor("a")
    a.leases = leases = DownLeases("a", ttl=TTL, held=mesh.held)
    await run(a, "s", "Box")
    leases.acquire_down = True
    with pytest.raises(ConnectionError):
        await a.open("s")
    assert a.warm is None
    written = mesh.held["s"].kv_revision
    await asyncio.sleep(TTL)  # nobody renews the hold: it expires with the lease ttl
    assert mesh.held["s"].kv_revision == written and mesh.held["s"].idle


async def test_open_another_scene_when_releasing_the_warm_one_fails_still_runs(
    mesh: Mesh,
) -> None:
    a = mesh.executor("a")
    a.leases = leases = DownLeases("a", ttl=TTL, held=mesh.held)
    await run(a, "s", "Box")
    leases.release_down = True
    session = await a.open("t")
    assert session.lease.scene_id == "t" and a.warm is None
    written = mesh.held["s"].kv_revision
    await asyncio.sleep(TTL)
    assert mesh.held["s"].kv_revision == written  # s's keeper stopped: s expires alone
    assert mesh.held["s"].idle and mesh.held["s"].expires_at > 0
    leases.release_down = False
    await a.close(session)
    await a.shutdown()


async def test_shutdown_when_the_release_fails_stops_renewing(mesh: Mesh) -> None:
    a = mesh.executor("a")
    a.leases = leases = DownLeases("a", ttl=TTL, held=mesh.held)
    await run(a, "s", "Box")
    leases.release_down = True
    await a.shutdown()
    assert a.warm is None and a.closing
    written = mesh.held["s"].kv_revision
    await asyncio.sleep(TTL)
    assert mesh.held["s"].kv_revision == written  # it expires on its own


class CountingLeases(MemoryLeases):
    """Leases that count the acquires, each of which reads the bucket before it writes."""

    acquires = 0

    async def acquire(self, scene_id: str, take_idle: bool = False) -> Lease:
        self.acquires += 1
        return await super().acquire(scene_id, take_idle)


async def test_open_own_warm_scene_retakes_the_hold_without_reading_the_bucket(
    mesh: Mesh,
) -> None:
    a = mesh.executor("a")
    a.leases = leases = CountingLeases("a", ttl=TTL, held=mesh.held)
    first = await run(a, "s", "Box")
    assert leases.acquires == 1 and mesh.held["s"].idle
    session = await a.open("s")
    assert leases.acquires == 1  # the hold became the run's lease in one write
    assert session.lease.epoch == first.lease.epoch + 1 and not mesh.held["s"].idle
    assert a.bridge.loads == 0  # still the warm scene
    await a.close(session)
    await a.shutdown()


async def test_open_own_warm_scene_when_the_hold_changed_acquires_as_usual(
    mesh: Mesh,
) -> None:
    a = mesh.executor("a")
    a.leases = leases = CountingLeases("a", ttl=TTL, held=mesh.held)
    await run(a, "s", "Box")
    assert a.warm is not None
    # Written behind the keeper's back, as a renewal that landed while it was stopped.
    mesh.held["s"] = await MemoryLeases("a", ttl=TTL, held=mesh.held).renew(a.warm.lease)
    session = await a.open("s")
    assert leases.acquires == 2  # the retake was refused; the acquire read and took it
    assert session.lease.owner == "a" and not mesh.held["s"].idle
    await a.close(session)
    await a.shutdown()
