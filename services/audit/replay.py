"""Reading a stretch of the log in order: how ``audit rebuild`` catches up, and how the
live views fill a gap the consumer left (``handlers.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncGenerator, Sequence

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.events import AnyEvent, decode_event
from services.audit.handlers import projection
from services.audit.rebuild_store import RebuildStore
from services.runtime.service.consumer_spec import Delivery

# Events one transaction applies at most; twice as many are read ahead, and beyond that
# the ordered consumer's flow control holds the server back. 128 rather than 256: every
# message and event in flight lives through several of the garbage collector's passes,
# which took 13-18 ms a rebuild of 2,700 events at 256 and 3-10 ms at 128
# (docs/performance.md).
BATCH = 128

Stretch = Sequence[tuple[AnyEvent, Delivery]]


class ReplayStalled(BlendmeshError, TimeoutError):
    """The log stopped sending before the replay reached the sequence it was asked for."""


async def stretches(
    js: JetStreamContext,
    prefix: str,
    after: int,
    upto: int,
    idle: float = 5.0,
    batch_size: int = BATCH,
) -> AsyncGenerator[Stretch, None]:
    """The log's events ``after < seq <= upto``, in order, a stretch at a time: what
    arrived while the caller applied the last one, up to ``batch_size``.

    Reads through an ephemeral ordered consumer, pushed rather than pulled: a pull costs
    the client two tasks a message, which made reading most of a rebuild's time.
    Undecodable messages are skipped: the live consumer dead-letters them, and their
    dead-letter events, later in the log, are read like any other event. Raises
    ``ReplayStalled`` when nothing arrives for ``idle`` seconds.
    """
    if upto <= after:
        return
    arrived = Arrivals(2 * batch_size)
    config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=after + 1)
    sub = await js.subscribe(
        ">",
        stream=subjects.stream_name(prefix),
        cb=arrived.put,
        ordered_consumer=True,
        config=config,
    )
    try:
        seq = after
        while seq < upto:
            try:
                msgs = await arrived.take(batch_size, idle)
            except TimeoutError:
                raise ReplayStalled(
                    f"the event log sent nothing for {idle:g} s after sequence {seq}, short of "
                    f"{upto}; check that nats-server is up and run `blendmesh audit rebuild` again"
                ) from None
            stretch: list[tuple[AnyEvent, Delivery]] = []
            for msg in msgs:
                seq = msg.metadata.sequence.stream
                if seq > upto:
                    break
                try:
                    event = decode_event(msg.data)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                delivery = Delivery(stream_seq=seq, num_delivered=1, subject=msg.subject)
                stretch.append((event, delivery))
            if stretch:
                yield stretch
    finally:
        await sub.unsubscribe()


class Arrivals:
    """Messages pushed to the replay, held until it takes them, ``limit`` at most.

    A deque and two events rather than an ``asyncio.Queue``: a message that finds room is
    kept without a coroutine or a waiter of its own, which cost a rebuild a few
    microseconds per event; only a full buffer makes the subscription wait, and that wait
    is what holds the server back (the ordered consumer's flow control).
    """

    def __init__(self, limit: int) -> None:
        self._msgs: deque[Msg] = deque()
        self._limit = limit
        self._ready = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()

    async def put(self, msg: Msg) -> None:
        while len(self._msgs) >= self._limit:
            self._room.clear()
            await self._room.wait()
        self._msgs.append(msg)
        self._ready.set()

    async def take(self, most: int, idle: float) -> list[Msg]:
        """Up to ``most`` messages, waiting ``idle`` seconds at most for the first."""
        if not self._msgs:
            self._ready.clear()
            await asyncio.wait_for(self._ready.wait(), idle)
        taken = [self._msgs.popleft() for _ in range(min(most, len(self._msgs)))]
        self._room.set()
        return taken


async def replay(
    js: JetStreamContext,
    prefix: str,
    store: RebuildStore,
    after: int,
    upto: int,
    idle: float = 5.0,
    batch_size: int = BATCH,
) -> None:
    """Apply the log's messages ``after < seq <= upto`` to ``store``, in order, a stretch
    per transaction (see ``stretches``)."""
    read = stretches(js, prefix, after, upto, idle, batch_size)
    async with contextlib.aclosing(read):
        async for stretch in read:
            await store.apply_many(
                [(d.stream_seq, *projection(e, d.stream_seq, d.subject)) for e, d in stretch]
            )


class JetStreamLog:
    """The event log as the live views read it to fill a gap (``handlers.EventLog``)."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix

    def stretches(self, after: int, upto: int) -> AsyncGenerator[Stretch, None]:
        return stretches(self._js, self._prefix, after, upto)
