"""Reading events back from the log, the one source of truth every service shares.

Plumbing only: which subject to read is the caller's business (``read_run`` is here
because every door and service folds runs).
"""

from __future__ import annotations

import logging

import msgspec
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy

from contracts import subjects
from contracts.events import AnyEvent, decode_event

log = logging.getLogger(__name__)


async def read_run(js: JetStreamContext, prefix: str, run_id: str) -> list[AnyEvent]:
    """All events of ``run_id`` in log order, read through an ephemeral ordered consumer."""
    return await read_subject(js, prefix, subjects.run_events(prefix, run_id))


async def run_kinds(js: JetStreamContext, prefix: str, run_id: str) -> set[str]:
    """The kinds of event the log holds for ``run_id`` (``requested``, ``planned``...):
    one request to the server, no consumer, so a handler asks it before reading a run."""
    stream = subjects.stream_name(prefix)
    info = await js.stream_info(stream, subjects_filter=subjects.run_events(prefix, run_id))
    return {subject.rsplit(".", 1)[-1] for subject in info.state.subjects or {}}


async def read_subject(js: JetStreamContext, prefix: str, subject: str) -> list[AnyEvent]:
    """Every event on ``subject`` in log order; an event this version cannot read is logged."""
    stream = subjects.stream_name(prefix)
    info = await js.stream_info(stream, subjects_filter=subject)
    expected = sum((info.state.subjects or {}).values()) if info.state.subjects else 0
    if expected == 0:
        return []
    sub = await js.subscribe(
        subject, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL, stream=stream
    )
    events: list[AnyEvent] = []
    try:
        while True:
            msg = await sub.next_msg(timeout=5)
            try:
                events.append(decode_event(msg.data))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                # Only the roles that own a subject may write it, so this is a newer or
                # older blendmesh's event: the fold goes on without it, and says so.
                log.warning(
                    "event %d on %s cannot be read by this version and is left out: %s",
                    msg.metadata.sequence.stream,
                    msg.subject,
                    exc,
                )
            if msg.metadata.num_pending == 0:
                break
    except TimeoutError:
        pass
    finally:
        await sub.unsubscribe()
    return events
