"""A Blender bridge unused for its idle period is stopped on purpose (ADR 0033), on a real
bpy bridge: no Blender process is left, the next call starts one again and succeeds, a
stop on purpose is neither a restart nor a crash, and a crash after the wake is still
replaced."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import pytest

from services.executor.adapters.supervisor import SupervisedBridge
from tests.support.bridges import bridge_pids

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

IDLE = 1.0  # seconds; long enough that a call's own gaps never park it


@pytest.fixture
async def bridge() -> AsyncIterator[SupervisedBridge]:
    supervised = SupervisedBridge(call_timeout=60, idle=IDLE)
    await supervised.start()
    try:
        yield supervised
    finally:
        await supervised.close()


async def _parked(bridge: SupervisedBridge, within: float = 30) -> None:
    for _ in range(int(within / 0.05)):
        if bridge.parked and not bridge_pids(os.getpid()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not stopped within {within} s: {bridge_pids(os.getpid())}")


async def test_bridge_when_unused_for_its_idle_period_stops_and_keeps_no_blender(
    bridge: SupervisedBridge,
) -> None:
    assert len(bridge_pids(os.getpid())) == 1 and not bridge.parked
    await _parked(bridge)
    assert not bridge.alive and bridge.restarts == 0  # on purpose: not a crash
    assert bridge.profile.version.startswith("5.")  # still known to health and the catalog


async def test_bridge_when_called_after_idling_starts_again_and_answers(
    bridge: SupervisedBridge,
) -> None:
    await _parked(bridge)
    loop = asyncio.get_running_loop()
    began = loop.time()
    scene_hash = await bridge.reset()
    woke = loop.time() - began
    assert len(scene_hash) == 64 and bridge.alive and not bridge.parked
    assert len(bridge_pids(os.getpid())) == 1
    assert bridge.restarts == 0, "a wanted start is not a restart"
    assert woke < 60, woke
    # Used again, it idles again: the timer counts from the last call.
    await _parked(bridge)


async def test_bridge_when_used_more_often_than_its_idle_period_is_never_stopped(
    bridge: SupervisedBridge,
) -> None:
    first = bridge_pids(os.getpid())
    for _ in range(6):
        await bridge.fingerprint()
        await asyncio.sleep(IDLE / 3)
    assert bridge.alive and bridge_pids(os.getpid()) == first


async def test_bridge_when_killed_after_waking_from_idle_is_still_replaced(
    bridge: SupervisedBridge,
) -> None:
    await _parked(bridge)
    await bridge.fingerprint()
    [pid] = bridge_pids(os.getpid())
    os.kill(pid, signal.SIGKILL)
    for _ in range(1200):
        if bridge.restarts:
            break
        await asyncio.sleep(0.05)
    assert bridge.alive  # replaced with a full idle period of its own
    assert len(await bridge.fingerprint()) == 64
    assert bridge.restarts == 1


async def test_bridge_restart_asked_while_parked_starts_nothing(
    bridge: SupervisedBridge,
) -> None:
    await _parked(bridge)
    await bridge.restart()  # what a caller does after a call that timed out meanwhile
    assert bridge.parked and bridge_pids(os.getpid()) == [] and bridge.restarts == 0


async def test_bridge_when_kept_by_an_open_run_is_not_stopped_however_long_it_waits(
    bridge: SupervisedBridge,
) -> None:
    holding = [True]  # a run holds its unsaved scene in the bridge between calls
    bridge.keep_while(lambda: holding[0])
    first = bridge_pids(os.getpid())
    await asyncio.sleep(IDLE * 3)
    assert bridge.alive and not bridge.parked and bridge_pids(os.getpid()) == first
    holding[0] = False  # the run ended: the bridge idles out after its idle period
    await _parked(bridge)
