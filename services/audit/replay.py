"""Replaying a stretch of the log into a view store: how ``audit rebuild`` catches up."""

from __future__ import annotations

import contextlib

import msgspec
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts import subjects
from contracts.events import decode_event
from services.audit.handlers import projection
from services.audit.store import Project, SqliteStore


async def replay(
    js: JetStreamContext, prefix: str, store: SqliteStore, after: int, upto: int
) -> None:
    """Apply the log's messages ``after < seq <= upto`` to ``store``, in order.

    Reads through an ephemeral, unacknowledged consumer that the server forgets when it
    is idle, and applies each fetched batch in one transaction. Undecodable messages are
    skipped: the live consumer dead-lettered them, and their dead-letter events, later in
    the log, are applied like any other event.
    """
    if upto <= after:
        return
    stream = subjects.stream_name(prefix)
    config = ConsumerConfig(
        ack_policy=AckPolicy.NONE,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=after + 1,
        inactive_threshold=60.0,
        mem_storage=True,
    )
    info = await js.add_consumer(stream, config)
    sub = await js.pull_subscribe_bind(consumer=info.name, stream=stream)
    try:
        seq = after
        while seq < upto:
            batch: list[tuple[int, str | None, Project]] = []
            for msg in await sub.fetch(batch=min(256, upto - seq), timeout=5):
                seq = msg.metadata.sequence.stream
                if seq > upto:
                    break
                try:
                    event = decode_event(msg.data)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                batch.append((seq, *projection(event, seq, msg.subject)))
            # One transaction a fetched batch: the store is fresh and swapped in whole.
            await store.apply_many(batch)
    finally:
        await sub.unsubscribe()
        with contextlib.suppress(Exception):
            await js.delete_consumer(stream, info.name)
