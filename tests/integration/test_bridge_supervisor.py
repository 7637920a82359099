"""The executor's bridge supervisor on a real bpy bridge: a Blender that exits by itself is
replaced at once, and one that keeps dying is given up, which ends the executor."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import pytest

from services.executor.adapters.supervisor import BridgeGone, SupervisedBridge
from tests.support.bridges import bridge_pids

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
async def bridge() -> AsyncIterator[SupervisedBridge]:
    supervised = SupervisedBridge(call_timeout=30, restart_limit=2, restart_window=60)
    await supervised.start()
    try:
        yield supervised
    finally:
        await supervised.close()


async def _one_bridge(other_than: int | None = None, within: float = 30) -> int:
    """The pid of this process's one bridge, once it is not ``other_than``."""
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        pids = bridge_pids(os.getpid())
        if len(pids) == 1 and pids[0] != other_than:
            return pids[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no new bridge within {within} s: {bridge_pids(os.getpid())}")


async def _started_again(bridge: SupervisedBridge, restarts: int, within: float = 30) -> None:
    for _ in range(int(within / 0.05)):
        if bridge.restarts == restarts and bridge.alive:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{bridge.restarts} restarts, alive: {bridge.alive}")


async def test_bridge_when_blender_is_killed_is_replaced_before_any_call(
    bridge: SupervisedBridge,
) -> None:
    first = await _one_bridge()
    os.kill(first, signal.SIGKILL)
    await _started_again(bridge, restarts=1)  # no call asked for it
    assert await _one_bridge(other_than=first) != first
    assert len(await bridge.fingerprint()) == 64  # the new Blender answers
    assert bridge.restarts == 1


async def test_bridge_restart_when_the_watcher_already_replaced_it_keeps_the_fresh_one(
    bridge: SupervisedBridge,
) -> None:
    os.kill(await _one_bridge(), signal.SIGKILL)
    await _started_again(bridge, restarts=1)
    fresh = await _one_bridge()
    await bridge.restart()  # what the runner does after the call that lost the bridge
    assert bridge.restarts == 1 and bridge_pids(os.getpid()) == [fresh]


async def test_bridge_when_blender_keeps_dying_is_given_up_and_refuses_calls(
    bridge: SupervisedBridge,
) -> None:
    gone = asyncio.ensure_future(bridge.gone())
    killed: set[int] = set()
    async with asyncio.timeout(60):
        while not gone.done():
            for pid in set(bridge_pids(os.getpid())) - killed:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            await asyncio.sleep(0.02)
    error = gone.result()
    assert isinstance(error, BridgeGone)
    assert str(error).startswith("the Blender bridge kept dying: 2 starts within 60 s")
    assert len(killed) == 3  # the first bridge and both restarts
    assert bridge_pids(os.getpid()) == []
    with pytest.raises(BridgeGone, match="the Blender bridge kept dying"):
        await bridge.fingerprint()
    with pytest.raises(BridgeGone, match="the Blender bridge kept dying"):
        await bridge.restart()
