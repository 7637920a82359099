"""The planner's hold on model calls under way: a cancel stops its run's call, and
nothing else's."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from contracts.events import Event
from services.planner.cancels import InFlight


async def slow(started: asyncio.Event) -> Sequence[Event]:
    started.set()
    await asyncio.sleep(30)
    raise AssertionError("the call was not stopped")


async def test_stop_when_a_call_is_under_way_drops_what_it_would_publish() -> None:
    calls = InFlight()
    started = asyncio.Event()
    waiting = asyncio.ensure_future(calls.run("run-1", slow(started)))
    await started.wait()
    assert not calls.stop("run-2")  # another run's cancel stops nothing here
    assert calls.stop("run-1")
    assert await asyncio.wait_for(waiting, 1.0) == []
    assert not calls.stop("run-1")  # over: nothing left to stop


async def test_run_when_its_caller_is_cancelled_lets_the_cancellation_through() -> None:
    calls = InFlight()
    started = asyncio.Event()
    waiting = asyncio.ensure_future(calls.run("run-1", slow(started)))
    await started.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not calls.stop("run-1")


async def test_run_when_the_call_fails_raises_its_error() -> None:
    async def broken() -> Sequence[Event]:
        raise ValueError("model unreachable")

    with pytest.raises(ValueError, match="model unreachable"):
        await InFlight().run("run-1", broken())
