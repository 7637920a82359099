"""What every event is: its id, when it happened, and a run's correlation ids (spec 000).

Event ids are derived deterministically from the cause, so a handler that runs again
after a crash publishes the same ids and JetStream's duplicate window drops the copies.
"""

from __future__ import annotations

import uuid

import msgspec

_NAMESPACE = uuid.UUID("5b0f1c2e-8a4d-4a7e-9d1e-6c3b2a1f0e9d")


def derive_event_id(cause: str, kind: str, index: int = 0) -> str:
    """A stable id for the ``index``-th event of ``kind`` that ``cause`` produced."""
    return str(uuid.uuid5(_NAMESPACE, f"{cause}/{kind}/{index}"))


class Event(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="type"
):
    """Fields every event has; the ``type`` tag names the concrete event."""

    event_id: str
    at: float  # seconds since the epoch, UTC


class RunEvent(Event, frozen=True, kw_only=True):
    """An event of one run, with the correlation ids every service propagates."""

    run_id: str
    request_id: str
    thread_id: str
    user: str
    causation_id: str | None = None
