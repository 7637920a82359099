"""What a reader checks before it believes a message it was delivered (docs/adr/0015).

A push consumer delivers wherever its creator pointed it, and nats-server does not check
that subject against the creator's permissions, so a delivery in a reader's inbox is not
proof of anything. A reader applies only what arrives with the subject it asked for,
carrying the run that subject names; a responder answers only requests, never a stream's
deliveries (which come with a ``$JS.ACK`` reply or a stream's headers).

Pure: no I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import msgspec

from contracts import subjects
from contracts.events import AnyEvent, RunEvent, decode_event, event_kind

log = logging.getLogger("blendmesh.security")

_STREAM_HEADERS = ("Nats-Stream", "Nats-Sequence")


def from_stream(reply: str | None, headers: Mapping[str, str] | None) -> bool:
    """Whether a message was delivered by a stream (a push consumer, a republish) rather
    than published by a client: a responder must not act on it."""
    if reply and reply.startswith("$JS."):
        return True
    return any(name in (headers or {}) for name in _STREAM_HEADERS)


def answerable(reply: str | None, headers: Mapping[str, str] | None) -> bool:
    """Whether a responder may answer: a client's request with an inbox to answer into.
    Never a stream's delivery, never a reply subject elsewhere: with ``allow_responses``
    the answer would land wherever the asker named (the log, the JetStream API)."""
    return reply is not None and reply.startswith("_INBOX.") and not from_stream(reply, headers)


def run_event(prefix: str, subject: str, data: bytes, run_id: str | None = None) -> AnyEvent | None:
    """The run event ``data`` holds when it arrived on a run event's own subject (of
    ``run_id``, or of any run), names that subject's run and is the kind the subject
    says; None otherwise, with a warning, so a forged delivery changes nothing."""
    found = subjects.run_id_in(subject) if subject.startswith(f"{prefix}.run.") else None
    if found is None or (run_id is not None and found != run_id):
        log.warning("ignored a delivery on %s: not a run event's subject", subject[:200])
        return None
    try:
        event = decode_event(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        log.warning("ignored a malformed event on %s", subject[:200])
        return None
    if not isinstance(event, RunEvent):
        log.warning("ignored an event on %s that is not a run's", subject[:200])
        return None
    kind = event_kind(event).removeprefix("run.")
    if event.run_id != found or subject.rsplit(".", 1)[1] != kind:
        log.warning("ignored an event on %s that names another run or kind", subject[:200])
        return None
    return event
