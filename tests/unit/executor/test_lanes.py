"""The executor's lane pool: which Blender a run gets, and who waits for whom."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from contracts.limits import MAX_BRIDGES
from services.executor.domain.lanes import (
    BRIDGE_BYTES,
    Lane,
    LanePool,
    PoolSizeError,
    pool_size,
)
from services.runtime.service.settings import Settings, SettingsError


@dataclass
class FakeBlender:
    """What the pool asks of a lane's bridge: whether it runs, and what it holds."""

    running: bool = True
    holds: str | None = None


def pool_of(*blenders: FakeBlender) -> LanePool[int]:
    return LanePool(
        [
            Lane(i, i, holds=lambda b=b: b.holds, running=lambda b=b: b.running)
            for i, b in enumerate(blenders)
        ]
    )


async def test_lane_when_a_lane_holds_the_scene_takes_that_lane() -> None:
    pool = pool_of(FakeBlender(holds="a"), FakeBlender(holds="b"))
    async with pool.lane("b") as runner:
        assert runner == 1


async def test_lane_when_none_holds_the_scene_prefers_a_running_empty_one() -> None:
    pool = pool_of(FakeBlender(holds="a"), FakeBlender(running=False), FakeBlender())
    async with pool.lane("c") as runner:
        assert runner == 2


async def test_lane_when_only_warm_lanes_run_starts_a_stopped_one_before_evicting() -> None:
    pool = pool_of(FakeBlender(holds="a"), FakeBlender(running=False))
    async with pool.lane("c") as runner:
        assert runner == 1


async def test_lane_when_every_lane_is_warm_evicts_the_least_recently_used() -> None:
    clock = iter(range(100))
    blenders = [FakeBlender(holds="a"), FakeBlender(holds="b")]
    pool = LanePool(
        [
            Lane(i, i, holds=lambda b=b: b.holds, running=lambda: True)
            for i, b in enumerate(blenders)
        ],
        clock=lambda: float(next(clock)),
    )
    async with pool.lane("b"):
        pass
    async with pool.lane("a"):
        pass  # lane 0 is now the more recently used
    async with pool.lane("c") as runner:
        assert runner == 1


async def test_lane_when_two_scenes_run_at_once_gives_them_different_lanes() -> None:
    pool = pool_of(FakeBlender(), FakeBlender())
    both = asyncio.Event()
    taken: list[int] = []

    async def run(scene: str) -> None:
        async with pool.lane(scene) as runner:
            taken.append(runner)
            if len(taken) == 2:
                both.set()
            await asyncio.wait_for(both.wait(), 2.0)  # both must be inside at once

    await asyncio.gather(run("a"), run("b"))
    assert sorted(taken) == [0, 1]
    assert pool.busy == 0


async def test_lane_when_its_scene_runs_already_waits_for_that_run() -> None:
    pool = pool_of(FakeBlender(), FakeBlender())
    order: list[str] = []
    first_in = asyncio.Event()
    release = asyncio.Event()

    async def first() -> None:
        async with pool.lane("a"):
            order.append("first in")
            first_in.set()
            await release.wait()
            order.append("first out")

    async def second() -> None:
        await first_in.wait()
        async with pool.lane("a"):
            order.append("second in")

    task = asyncio.gather(first(), second())
    await first_in.wait()
    await asyncio.sleep(0.05)
    assert order == ["first in"]  # a free lane did not let the same scene in twice
    release.set()
    await task
    assert order == ["first in", "first out", "second in"]


async def test_lane_when_every_lane_is_busy_waits_for_one_to_free() -> None:
    pool = pool_of(FakeBlender())
    release = asyncio.Event()

    async def hold() -> None:
        async with pool.lane("a"):
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiting = asyncio.create_task(pool.lane("b").__aenter__())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    release.set()
    await holder
    assert await asyncio.wait_for(waiting, 1.0) == 0


async def test_lane_when_the_run_fails_frees_the_lane() -> None:
    pool = pool_of(FakeBlender())
    with pytest.raises(RuntimeError):
        async with pool.lane("a"):
            raise RuntimeError("the run failed")
    assert pool.busy == 0
    async with pool.lane("a") as runner:
        assert runner == 0


def test_pool_when_empty_is_refused() -> None:
    with pytest.raises(PoolSizeError, match="at least one lane"):
        LanePool[int]([])


def test_pool_size_when_unset_is_bounded_by_memory_and_the_limit_not_by_cores() -> None:
    # A lane keeps a scene warm; cores do not bound it (ADR 0078).
    assert pool_size(None, available_bytes=64 * BRIDGE_BYTES) == MAX_BRIDGES
    assert pool_size(None, available_bytes=3 * BRIDGE_BYTES) == 3
    assert pool_size(None, available_bytes=3 * BRIDGE_BYTES - 1) == 2
    assert pool_size(None, available_bytes=None) == MAX_BRIDGES
    assert pool_size(None, available_bytes=0) == 1  # one Blender, whatever is left


def test_pool_size_when_asked_takes_it_within_the_limit() -> None:
    assert pool_size(3, available_bytes=0) == 3
    with pytest.raises(PoolSizeError, match=f"use 1 to {MAX_BRIDGES}"):
        pool_size(MAX_BRIDGES + 1, available_bytes=None)
    with pytest.raises(PoolSizeError, match="out of range"):
        pool_size(0, available_bytes=None)


@pytest.mark.parametrize("raw", ["9", "1000000", "0", "-1", "two", "2.5"])
def test_settings_when_bridges_is_out_of_range_or_not_a_number_says_what_to_set(raw: str) -> None:
    with pytest.raises(SettingsError, match="BLENDMESH_BRIDGES"):
        Settings.from_env({"BLENDMESH_BRIDGES": raw})


def test_settings_when_bridges_is_unset_sizes_the_pool_itself() -> None:
    assert Settings.from_env({}).bridges is None
    assert Settings.from_env({"BLENDMESH_BRIDGES": "3"}).bridges == 3
