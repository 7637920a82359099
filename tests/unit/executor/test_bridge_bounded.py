"""The bridge client's bounded wait: a result, a timeout, and a cancellation that always
reaches its caller, even one that comes as the result arrives (Python 3.11's
``asyncio.wait_for`` returned the result then, and a supervisor closed while its idle loop
closed a bridge waited for that loop for ever)."""

from __future__ import annotations

import asyncio

import pytest

from services.executor.adapters.bridge_client import bounded


async def test_bounded_when_the_awaitable_ends_in_time_returns_its_result() -> None:
    async def answers() -> int:
        await asyncio.sleep(0)
        return 7

    assert await bounded(answers(), 5) == 7


async def test_bounded_when_the_awaitable_is_late_raises_timeout_error() -> None:
    never = asyncio.Event()
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(TimeoutError):
        await bounded(never.wait(), 0.05)
    assert loop.time() - began < 5


async def test_bounded_when_cancelled_as_the_result_arrives_is_cancelled() -> None:
    exited = asyncio.Event()

    async def process_exit() -> int:
        await exited.wait()
        return 0

    waiting = asyncio.create_task(bounded(process_exit(), 5))
    await asyncio.sleep(0)  # it waits for the exit
    exited.set()  # the child has ended: its waiter is woken, not yet run
    waiting.cancel()  # and the closer's canceller comes in the same turn
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert waiting.cancelled()
