"""The buffer between the ordered consumer and a replay: it holds the server back when
full (the consumer's callback waits) and says when nothing came."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from nats.aio.msg import Msg

from services.audit.replay import Arrivals


def msgs(*names: str) -> list[Msg]:
    return [cast(Msg, name) for name in names]  # the buffer only holds and hands them on


async def test_arrivals_when_full_holds_put_until_take_makes_room() -> None:
    one, two, three = msgs("one", "two", "three")
    arrivals = Arrivals(2)
    await arrivals.put(one)
    await arrivals.put(two)
    third = asyncio.create_task(arrivals.put(three))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not third.done()
    assert await arrivals.take(1, idle=1) == [one]
    await asyncio.wait_for(third, 1)
    assert await arrivals.take(5, idle=1) == [two, three]


async def test_arrivals_when_empty_take_waits_for_the_next() -> None:
    arrivals = Arrivals(4)
    taken: asyncio.Task[list[Any]] = asyncio.create_task(arrivals.take(4, idle=1))
    await asyncio.sleep(0)
    [late] = msgs("late")
    await arrivals.put(late)
    assert await asyncio.wait_for(taken, 1) == [late]


async def test_arrivals_when_nothing_comes_take_times_out() -> None:
    with pytest.raises(TimeoutError):
        await Arrivals(2).take(1, idle=0.05)
