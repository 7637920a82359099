"""The executor's Leases port: MemoryLeases and KvLeases held to the same behaviour.

Two executors (owners) share one store of leases and one clock the test moves by hand.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from services.executor.adapters.leases import KvLeases
from services.executor.domain.ports import Lease, LeaseHeld, LeaseLost, Leases
from services.executor.memory import MemoryLeases
from services.runtime.service.host import Bus

TTL = 5.0


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


LeasesFor = Callable[[str, Clock], Leases]


class LeasesContract:
    """Subclass with a ``leases_for`` fixture: one owner's leases on the shared store."""

    @pytest.fixture
    def clock(self) -> Clock:
        return Clock()

    @pytest.fixture
    def one(self, leases_for: LeasesFor, clock: Clock) -> Leases:
        return leases_for("exec-1", clock)

    @pytest.fixture
    def two(self, leases_for: LeasesFor, clock: Clock) -> Leases:
        return leases_for("exec-2", clock)

    async def test_acquire_when_scene_free_gives_first_epoch_for_ttl(
        self, one: Leases, clock: Clock
    ) -> None:
        lease = await one.acquire("s")
        assert (lease.scene_id, lease.owner, lease.epoch) == ("s", "exec-1", 1)
        assert lease.expires_at == pytest.approx(clock.now + TTL)

    async def test_acquire_when_another_owner_holds_raises_lease_held(
        self, one: Leases, two: Leases, clock: Clock
    ) -> None:
        await one.acquire("s")
        clock.now += 2
        with pytest.raises(LeaseHeld, match="exec-1") as info:
            await two.acquire("s")
        assert info.value.retry_in == pytest.approx(TTL - 2)
        assert (await two.acquire("other")).owner == "exec-2"  # scenes are independent

    async def test_acquire_when_holder_stopped_renewing_takes_over_next_epoch(
        self, one: Leases, two: Leases, clock: Clock
    ) -> None:
        held = await one.acquire("s")
        clock.now += TTL + 1  # exec-1 died and stopped renewing
        taken = await two.acquire("s")
        assert (taken.owner, taken.epoch) == ("exec-2", held.epoch + 1)

    async def test_renew_when_lease_taken_over_raises_lease_lost(
        self, one: Leases, two: Leases, clock: Clock
    ) -> None:
        held = await one.acquire("s")
        clock.now += TTL + 1
        await two.acquire("s")
        with pytest.raises(LeaseLost):
            await one.renew(held)

    async def test_renew_when_still_held_extends_expiry(
        self, one: Leases, two: Leases, clock: Clock
    ) -> None:
        held = await one.acquire("s")
        clock.now += TTL - 1
        renewed = await one.renew(held)
        assert renewed.expires_at == pytest.approx(clock.now + TTL)
        assert renewed.epoch == held.epoch
        clock.now += TTL - 1  # past the first expiry, not the renewed one
        with pytest.raises(LeaseHeld):
            await two.acquire("s")
        assert (await one.renew(renewed)).epoch == held.epoch

    async def test_renew_when_lease_is_an_old_copy_raises_lease_lost(self, one: Leases) -> None:
        held = await one.acquire("s")
        await one.renew(held)
        with pytest.raises(LeaseLost):
            await one.renew(held)

    async def test_release_when_held_frees_scene_for_others(self, one: Leases, two: Leases) -> None:
        lease = await one.renew(await one.acquire("s"))
        await one.release(lease)
        taken = await two.acquire("s")
        assert (taken.owner, taken.epoch) == ("exec-2", lease.epoch + 1)
        with pytest.raises(LeaseLost):
            await one.renew(lease)

    async def test_release_when_taken_over_leaves_new_holder_alone(
        self, leases_for: LeasesFor, one: Leases, two: Leases, clock: Clock
    ) -> None:
        held = await one.acquire("s")
        clock.now += TTL + 1
        taken = await two.acquire("s")
        await one.release(held)
        with pytest.raises(LeaseHeld, match="exec-2"):
            await leases_for("exec-3", clock).acquire("s")
        assert (await two.renew(taken)).owner == "exec-2"

    async def test_acquire_when_another_owner_holds_it_warm_says_idle_and_epoch(
        self, one: Leases, two: Leases
    ) -> None:
        held = await one.acquire("s")
        warm = await one.renew(msgspec.structs.replace(held, idle=True))
        assert warm.idle and warm.epoch == held.epoch
        with pytest.raises(LeaseHeld, match="held warm by exec-1") as info:
            await two.acquire("s")
        assert (info.value.idle, info.value.epoch) == (True, held.epoch)
        assert (await one.renew(warm)).idle  # a renewal keeps the hold idle

    async def test_acquire_taking_an_idle_hold_over_fences_the_former_holder(
        self, one: Leases, two: Leases
    ) -> None:
        held = await one.acquire("s")
        warm = await one.renew(msgspec.structs.replace(held, idle=True))
        taken = await two.acquire("s", take_idle=True)
        assert (taken.owner, taken.epoch, taken.idle) == ("exec-2", held.epoch + 1, False)
        with pytest.raises(LeaseLost):
            await one.renew(warm)
        await one.release(warm)  # nothing of exec-1's left to release
        assert (await two.renew(taken)).owner == "exec-2"

    async def test_acquire_taking_idle_never_takes_a_running_lease(
        self, one: Leases, two: Leases
    ) -> None:
        held = await one.acquire("s")
        with pytest.raises(LeaseHeld, match="being written by exec-1") as info:
            await two.acquire("s", take_idle=True)
        assert not info.value.idle
        assert (await one.renew(held)).owner == "exec-1"

    async def test_acquire_by_the_warm_holder_itself_runs_it_at_the_next_epoch(
        self, one: Leases
    ) -> None:
        held = await one.acquire("s")
        warm = await one.renew(msgspec.structs.replace(held, idle=True))
        again = await one.acquire("s")
        assert (again.epoch, again.idle) == (held.epoch + 1, False)
        with pytest.raises(LeaseLost):
            await one.renew(warm)

    async def test_retake_of_its_own_warm_hold_runs_it_at_the_next_epoch(
        self, one: Leases, two: Leases, clock: Clock
    ) -> None:
        held = await one.acquire("s")
        warm = await one.renew(msgspec.structs.replace(held, idle=True))
        again = await one.retake(warm)
        assert (again.owner, again.epoch, again.idle) == ("exec-1", held.epoch + 1, False)
        assert again.expires_at == pytest.approx(clock.now + TTL)
        with pytest.raises(LeaseHeld, match="being written by exec-1"):
            await two.acquire("s", take_idle=True)  # a running lease, not a hold any more
        with pytest.raises(LeaseLost):
            await one.renew(warm)
        assert (await one.renew(again)).epoch == again.epoch

    async def test_retake_when_the_hold_was_taken_over_raises_lease_lost(
        self, one: Leases, two: Leases
    ) -> None:
        held = await one.acquire("s")
        warm = await one.renew(msgspec.structs.replace(held, idle=True))
        taken = await two.acquire("s", take_idle=True)
        with pytest.raises(LeaseLost):
            await one.retake(warm)
        assert (await two.renew(taken)).owner == "exec-2"  # the new holder keeps it

    async def test_retake_of_an_old_copy_of_the_hold_raises_lease_lost(self, one: Leases) -> None:
        held = await one.acquire("s")
        warm = await one.renew(msgspec.structs.replace(held, idle=True))
        renewed = await one.renew(warm)
        with pytest.raises(LeaseLost):
            await one.retake(warm)
        assert (await one.retake(renewed)).epoch == held.epoch + 1

    async def test_retake_of_another_owners_hold_raises_lease_lost_and_changes_nothing(
        self, one: Leases, two: Leases
    ) -> None:
        held = await one.acquire("s")
        warm = await one.renew(msgspec.structs.replace(held, idle=True))
        with pytest.raises(LeaseLost, match="exec-1's, not ours"):
            await two.retake(warm)
        assert (await one.renew(warm)).owner == "exec-1"  # exec-1's hold is untouched


class TestMemoryLeases(LeasesContract):
    @pytest.fixture
    def leases_for(self) -> LeasesFor:
        held: dict[str, Lease] = {}
        return lambda owner, clock: MemoryLeases(owner, ttl=TTL, clock=clock, held=held)


@pytest.mark.integration
class TestKvLeases(LeasesContract):
    @pytest.fixture
    def leases_for(self, executor_bus: Bus) -> LeasesFor:
        return lambda owner, clock: KvLeases(
            executor_bus.js, executor_bus.prefix, owner, ttl=TTL, clock=clock
        )
