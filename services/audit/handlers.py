"""The audit consumer's handler: apply each event of the log to the views, exactly once.

Audit only reads, so it never produces events. The live consumer and ``replay`` (which
``rebuild`` uses) both go through ``apply_event``, which is why a rebuilt database equals
the live one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import msgspec
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts import subjects
from contracts.events import AnyEvent, Event, RunEvent, decode_event
from services.audit.projections import project
from services.audit.store import ViewStore
from services.runtime.consumer import Delivery, Handler


async def apply_event(store: ViewStore, event: AnyEvent, seq: int) -> bool:
    """Project ``event`` (stream sequence ``seq``); False when it was applied before."""
    run_id = event.run_id if isinstance(event, RunEvent) else None
    return await store.apply(seq, run_id, partial(project, event, seq))


async def replay(
    js: JetStreamContext, prefix: str, store: ViewStore, after: int, upto: int
) -> None:
    """Apply the log's messages ``after < seq <= upto`` to ``store``, in order.

    Reads through an ephemeral, unacknowledged consumer that the server forgets when it
    is idle. Undecodable messages are skipped: the live consumer dead-lettered them, and
    their dead-letter events, later in the log, are applied like any other event.
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
            for msg in await sub.fetch(batch=min(256, upto - seq), timeout=5):
                seq = msg.metadata.sequence.stream
                if seq > upto:
                    break
                try:
                    event = decode_event(msg.data)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                await apply_event(store, event, seq)
    finally:
        await sub.unsubscribe()
        with contextlib.suppress(Exception):
            await js.delete_consumer(stream, info.name)


@dataclass
class AuditHandlers:
    store: ViewStore

    async def on_event(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        await apply_event(self.store, event, delivery.stream_seq)
        return []


def subject_table(prefix: str, handlers: AuditHandlers) -> dict[str, Handler]:
    """Subject -> handler: every subject of the event log goes to ``on_event``, so the
    durable consumer needs no filter and sees events in log order."""
    return {subject: handlers.on_event for subject in subjects.stream_subjects(prefix)}
