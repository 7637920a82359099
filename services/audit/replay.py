"""Reading a stretch of the log in order: how ``audit rebuild`` catches up, and how the
live views fill a gap the consumer left (``handlers.py``)."""

from __future__ import annotations

import asyncio
import contextlib
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
# the ordered consumer's flow control holds the server back.
BATCH = 256

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
    arrived: asyncio.Queue[Msg] = asyncio.Queue(maxsize=2 * batch_size)

    async def on_msg(msg: Msg) -> None:
        await arrived.put(msg)

    config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=after + 1)
    sub = await js.subscribe(
        ">", stream=subjects.stream_name(prefix), cb=on_msg, ordered_consumer=True, config=config
    )
    try:
        seq = after
        while seq < upto:
            try:
                msgs = [await asyncio.wait_for(arrived.get(), idle)]
            except TimeoutError:
                raise ReplayStalled(
                    f"the event log sent nothing for {idle:g} s after sequence {seq}, short of "
                    f"{upto}; check that nats-server is up and run `blendmesh audit rebuild` again"
                ) from None
            while len(msgs) < batch_size and not arrived.empty():
                msgs.append(arrived.get_nowait())
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
