"""The size check every event passes before it is published.

NATS refuses a message over its ``max_payload`` with a bare "maximum payload exceeded";
checking first lets the error say which event, how large, and what to do about it.
"""

from __future__ import annotations

from contracts.events import Event, RunEvent, encode_event, event_kind
from contracts.limits import MAX_EVENT_BYTES
from services.runtime.service.errors import EventTooLarge


def encode_bounded(event: Event, limit: int = MAX_EVENT_BYTES) -> bytes:
    """The event's encoding, or ``EventTooLarge`` naming its size, the limit and the fix."""
    data = encode_event(event)
    if len(data) <= limit:
        return data
    of_run = f" of run {event.run_id}" if isinstance(event, RunEvent) else ""
    raise EventTooLarge(
        f"event {event_kind(event)}{of_run} is {len(data):,} bytes, over the {limit:,}-byte "
        "limit of one event, so it was not published; send a shorter request or fewer "
        "operations in one plan (BLENDMESH_MAX_OPERATIONS)"
    )
