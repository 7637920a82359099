"""Publishing the audit records the views hold, one event each, on the audit stream.

Records are the rows the store wrote for the event (read back when it had been applied
before), so the stream carries exactly the rows ``blendmesh audit`` shows. A redelivered
event publishes its record again with the same ``Nats-Msg-Id`` and the server drops the
copy; ``rebuild`` replays into a fresh store and publishes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

import msgspec
from nats.js import JetStreamContext

from contracts import subjects
from contracts.audit import AuditRecorded, message_id
from services.runtime.service import tracing


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
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.audit_stream_name(prefix)

    async def publish(self, record: AuditRecorded) -> None:
        await self.publish_many([record])

    async def publish_many(self, records: Sequence[AuditRecorded], timeout: float = 15.0) -> None:
        acks = [
            await self._js.publish_async(
                subject_of(self._prefix, record),
                # Bounded by its fields: ids, hashes and a message cut to MESSAGE_CHARS.
                msgspec.json.encode(record),
                stream=self._stream,
                headers=tracing.inject({"Nats-Msg-Id": message_id(record)}),
            )
            for record in records
        ]
        if acks:
            # A lost ack fails the batch, which is then handled again: the message ids
            # make the stream drop the copies of records it already stored.
            await asyncio.wait_for(asyncio.gather(*acks), timeout)
