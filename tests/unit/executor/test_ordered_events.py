"""The executor's ordered event sender: order kept, successes held behind their writes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.executor.domain.ordered import OrderedEvents


class Sent:
    def __init__(self) -> None:
        self.events: list[Any] = []

    async def __call__(self, event: Any) -> None:
        self.events.append(event)


async def slow(seconds: float, fail: bool = False) -> None:
    await asyncio.sleep(seconds)
    if fail:
        raise OSError("write refused")


async def test_emit_when_an_earlier_event_waits_for_a_write_keeps_the_order() -> None:
    sent = Sent()
    events = OrderedEvents(sent)
    stored = events.write(slow(0.03))
    await events.emit("first", after=stored)  # type: ignore[arg-type]
    await events.emit("second")  # type: ignore[arg-type]
    await asyncio.sleep(0.005)
    assert sent.events == []  # "second" may not overtake "first"
    await events.settle()
    assert sent.events == ["first", "second"]


async def test_settle_when_a_write_fails_raises_and_sends_nothing_after_it() -> None:
    sent = Sent()
    events = OrderedEvents(sent)
    await events.emit("before")  # type: ignore[arg-type]
    stored = events.write(slow(0.01, fail=True))
    await events.emit("held", after=stored)  # type: ignore[arg-type]
    await events.emit("later")  # type: ignore[arg-type]
    with pytest.raises(OSError, match="write refused"):
        await events.settle()
    assert sent.events == ["before"]


async def test_abandon_when_writes_are_pending_cancels_them_and_raises_nothing() -> None:
    sent = Sent()
    events = OrderedEvents(sent)
    stored = events.write(slow(10))
    await events.emit("held", after=stored)  # type: ignore[arg-type]
    await events.abandon()
    assert stored.cancelled() and sent.events == []
    await events.settle()  # nothing left to wait for


async def test_write_when_an_earlier_write_fails_is_never_started() -> None:
    """The journal must hold a prefix of the schedule: a write after a failed one would
    leave an operation stored without the one before it."""
    events = OrderedEvents(Sent())
    started: list[str] = []

    async def put(name: str, fail: bool = False) -> None:
        started.append(name)
        await slow(0.01, fail)

    events.write(put("first", fail=True))
    later = events.write(put("second"))
    with pytest.raises(OSError, match="write refused"):
        await events.settle()
    assert started == ["first"] and later.done()


async def test_write_when_started_in_turn_is_stored_in_turn() -> None:
    events = OrderedEvents(Sent())
    stored: list[int] = []

    async def put(n: int, seconds: float) -> None:
        await asyncio.sleep(seconds)
        stored.append(n)

    for n, seconds in enumerate((0.03, 0.0, 0.01)):
        events.write(put(n, seconds))
    await events.settle()
    assert stored == [0, 1, 2]
