"""The audit record as the bus carries it: one event per projected action (docs/bus.md).

The audit service publishes each audit record it projects on
``<prefix>.audit.<user>.<scene_id>.<run_id>`` (``subjects.audit_records``), in a stream of
its own that keeps every record, so a consumer can filter by user, scene or run and
replay from the start. The record is the row ``blendmesh audit`` shows, tagged.
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.queries import AuditRecord


class AuditRecorded(AuditRecord, frozen=True, kw_only=True, tag_field="type", tag="audit.recorded"):
    """One audit record. ``event_id`` (the log event it records) identifies it: the same
    record published twice carries the same ``Nats-Msg-Id``, ``audit-<event_id>``."""


_decoder = msgspec.json.Decoder(AuditRecorded)


def from_row(row: dict[str, Any]) -> AuditRecorded:
    """The event of one ``audit_records`` row."""
    return msgspec.convert(row, AuditRecorded)


def decode_audit(data: bytes) -> AuditRecorded:
    return _decoder.decode(data)


def message_id(record: AuditRecord) -> str:
    return f"audit-{record.event_id}"
