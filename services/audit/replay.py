"""Replaying a stretch of the log into a view store: how ``audit rebuild`` catches up."""

from __future__ import annotations

import asyncio

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.events import decode_event
from services.audit.handlers import projection
from services.audit.rebuild_store import RebuildStore
from services.audit.store import Project

# Events one transaction applies at most; twice as many are read ahead, and beyond that
# the ordered consumer's flow control holds the server back.
BATCH = 256


class ReplayStalled(BlendmeshError, TimeoutError):
    """The log stopped sending before the replay reached the sequence it was asked for."""


async def replay(
    js: JetStreamContext,
    prefix: str,
    store: RebuildStore,
    after: int,
    upto: int,
    idle: float = 5.0,
    batch_size: int = BATCH,
) -> None:
    """Apply the log's messages ``after < seq <= upto`` to ``store``, in order.

    Reads through an ephemeral ordered consumer, pushed rather than pulled: a pull costs
    the client two tasks a message, which made reading most of a rebuild's time. What
    arrived while a batch was applied is the next batch, in one transaction. Undecodable
    messages are skipped: the live consumer dead-lettered them, and their dead-letter
    events, later in the log, are applied like any other event. Raises ``ReplayStalled``
    when nothing arrives for ``idle`` seconds.
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
            batch: list[tuple[int, str | None, Project]] = []
            for msg in msgs:
                seq = msg.metadata.sequence.stream
                if seq > upto:
                    break
                try:
                    event = decode_event(msg.data)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                batch.append((seq, *projection(event, seq, msg.subject)))
            await store.apply_many(batch)
    finally:
        await sub.unsubscribe()
