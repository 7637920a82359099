"""An idle consumer loop checks its durable consumer every ``check_interval``: its long poll
for the next message never outlasts the interval, so a deleted or changed consumer is not
left unnoticed until a longer fetch ends."""

from __future__ import annotations

import asyncio
from typing import Any

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import ConsumerConfig, ConsumerInfo, SequenceInfo
from nats.js.errors import NotFoundError

from contracts.events import AnyEvent, Event
from services.runtime.service.consumer import FETCH_WAIT, ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery


async def _ignore(event: AnyEvent, delivery: Delivery) -> list[Event]:
    return []


class IdleSubscription:
    """A pull subscription on which no message ever arrives: each fetch waits its timeout."""

    def __init__(self, fetches: int) -> None:
        self.waits: list[float] = []
        self.fetches = fetches
        self.enough = asyncio.Event()  # set once it has been asked ``fetches`` times

    async def fetch(self, batch: int, timeout: float) -> list[Any]:
        self.waits.append(timeout)
        if len(self.waits) >= self.fetches:
            self.enough.set()
        await asyncio.sleep(min(timeout, 0.01))  # the test need not wait the poll out
        raise NatsTimeoutError

    async def unsubscribe(self) -> None:
        pass


class OneConsumer:
    """The JetStream API of a server holding one consumer, as the loop created it."""

    def __init__(self, fetches: int) -> None:
        self.config: ConsumerConfig | None = None
        self.infos = 0
        self.sub = IdleSubscription(fetches)

    async def consumer_info(self, stream: str, name: str, **_: Any) -> ConsumerInfo:
        self.infos += 1
        if self.config is None:
            raise NotFoundError
        return ConsumerInfo(
            name=name,
            stream_name=stream,
            config=self.config,
            created=0,  # type: ignore[arg-type]
            ack_floor=SequenceInfo(consumer_seq=0, stream_seq=0),
        )

    async def add_consumer(self, stream: str, config: ConsumerConfig, **_: Any) -> ConsumerInfo:
        self.config = config
        return await self.consumer_info(stream, config.durable_name or "")

    async def pull_subscribe_bind(self, durable: str, stream: str) -> IdleSubscription:
        return self.sub


async def _idle(spec: ConsumerSpec, fetches: int) -> OneConsumer:
    """Run a loop of ``spec`` on an idle log until it has fetched ``fetches`` times."""
    js = OneConsumer(fetches)
    loop = ConsumerLoop(js, None, "bm", spec)  # type: ignore[arg-type]
    await loop.start(wait=1.0)
    try:
        await asyncio.wait_for(js.sub.enough.wait(), 10)
    finally:
        await loop.stop()
    return js


async def test_idle_loop_when_check_interval_is_short_fetches_no_longer_and_checks() -> None:
    spec = ConsumerSpec(durable="planner", filter_subjects=["bm.run.*.requested"],
                        handler=_ignore, check_interval=0.02)  # fmt: skip
    js = await _idle(spec, fetches=5)
    assert js.sub.waits and all(wait == 0.02 for wait in js.sub.waits), js.sub.waits
    # Once to create it, then checks between fetches: the interval has passed each time.
    assert js.infos >= 3, js.infos


async def test_idle_loop_with_the_default_interval_long_polls_for_five_seconds() -> None:
    spec = ConsumerSpec(durable="planner", filter_subjects=["bm.run.*.requested"],
                        handler=_ignore)  # fmt: skip
    js = await _idle(spec, fetches=2)
    assert spec.check_interval == FETCH_WAIT == 5.0
    assert js.sub.waits[:2] == [5.0, 5.0]
