"""Publishing the audit records the views hold, one event each, on the audit stream.

Records are the rows the store wrote for the event (read back when it had been applied
before), so the stream carries exactly the rows ``blendmesh audit`` shows. A redelivered
event publishes its record again with the same ``Nats-Msg-Id`` and the server drops the
copy; ``rebuild`` replays into a fresh store and publishes nothing. Records published
together go as one atomic batch where they are enough to pay for it (ADR 0069); a batch
refused whole, as a re-sent one is, goes again one by one under the same message ids.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

import msgspec
from nats.aio.client import Client
from nats.js import JetStreamContext

from contracts import subjects
from contracts.audit import AuditRecorded, message_id
from services.runtime.nats.atomic import (
    ALREADY_STORED,
    ATOMIC_DISABLED,
    MAX_BATCH,
    MIN_BATCH,
    BatchRefused,
    Message,
    publish_atomic,
)
from services.runtime.service import tracing

log = logging.getLogger("blendmesh.audit")


class AuditPublisher(Protocol):
    """Port: put one audit record on the audit stream."""

    async def publish(self, record: AuditRecorded) -> None: ...

    async def publish_many(self, records: Sequence[AuditRecorded]) -> None:
        """Publish ``records`` in order, waiting for the stream once for all of them."""
        ...


def subject_of(prefix: str, record: AuditRecorded) -> str:
    return subjects.audit_records(
        prefix,
        subjects.subject_token(record.user),
        subjects.subject_token(record.scene_id),
        subjects.subject_token(record.run_id),
    )


class JetStreamAuditPublisher:
    def __init__(self, js: JetStreamContext, prefix: str, nc: Client | None = None) -> None:
        self._js = js
        self._nc = nc  # with it, many records go as one atomic batch
        self._prefix = prefix
        self._stream = subjects.audit_stream_name(prefix)

    async def publish(self, record: AuditRecorded) -> None:
        await self.publish_many([record])

    async def publish_many(self, records: Sequence[AuditRecorded], timeout: float = 15.0) -> None:
        messages: list[Message] = [
            (
                subject_of(self._prefix, record),
                # Bounded by its fields: ids, hashes and a message cut to MESSAGE_CHARS.
                msgspec.json.encode(record),
                tracing.inject({"Nats-Msg-Id": message_id(record)}),
            )
            for record in records
        ]
        for start in range(0, len(messages), MAX_BATCH):
            await self._store(messages[start : start + MAX_BATCH], timeout)

    async def _store(self, messages: list[Message], timeout: float) -> None:
        if self._nc is not None and len(messages) >= MIN_BATCH:
            try:
                await publish_atomic(self._nc, self._stream, messages)
                return
            except BatchRefused as refused:
                # Stored before (10201), or no atomic batches here: one by one, where the
                # message ids drop what is stored.
                if refused.code not in (ALREADY_STORED, ATOMIC_DISABLED):
                    log.warning("%s; publishing its %d records one by one", refused, len(messages))
        acks = [
            await self._js.publish_async(subject, data, stream=self._stream, headers=headers)
            for subject, data, headers in messages
        ]
        if acks:
            # A lost ack fails the batch, which is then handled again: the message ids
            # make the stream drop the copies of records it already stored.
            await asyncio.wait_for(asyncio.gather(*acks), timeout)
