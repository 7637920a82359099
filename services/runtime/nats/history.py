"""Reading events back from the log, the one source of truth every service shares.

Plumbing only: which subject to read is the caller's business (``read_run`` is here
because every door and service folds runs).
"""

from __future__ import annotations

import logging

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.events import AnyEvent, decode_event
from services.runtime.nats import direct

log = logging.getLogger(__name__)

# Events one read returns at most. A run's plan is bounded (contracts.limits), and so are
# its events; a subject holding more is read in parts by whoever needs it.
MAX_EVENTS = 100_000


async def read_run(js: JetStreamContext, prefix: str, run_id: str) -> list[AnyEvent]:
    """All events of ``run_id`` in log order, read by batched direct gets (no consumer).
    Raises ValueError for an id that is not one subject token: ``*`` would read every
    run's events, and a door that forgot to check an id must not hand them out."""
    subjects.check_token(run_id, "run id")
    return await read_subject(js, prefix, subjects.run_events(prefix, run_id))


async def run_kinds(js: JetStreamContext, prefix: str, run_id: str) -> set[str]:
    """The kinds of event the log holds for ``run_id`` (``requested``, ``planned``...):
    one request to the server, no consumer, so a handler asks it before reading a run."""
    stream = subjects.stream_name(prefix)
    info = await js.stream_info(stream, subjects_filter=subjects.run_events(prefix, run_id))
    return {subject.rsplit(".", 1)[-1] for subject in info.state.subjects or {}}


async def last_of(js: JetStreamContext, prefix: str, run_id: str, kind: str) -> AnyEvent | None:
    """The newest event of ``kind`` (``cancel_requested``...) in ``run_id``, by one direct
    get; None when the run has none."""
    subjects.check_token(run_id, "run id")
    subject = subjects.run_events(prefix, run_id, kind)
    try:
        msg = await js.get_last_msg(subjects.stream_name(prefix), subject, direct=True)
    except NotFoundError:
        return None
    return decode_event(msg.data or b"")


async def read_subject(
    js: JetStreamContext, prefix: str, subject: str, limit: int = MAX_EVENTS
) -> list[AnyEvent]:
    """Every event on ``subject`` in log order; an event this version cannot read is logged.
    Raises ``DirectGetError`` when the log does not answer or holds more than ``limit``."""
    events: list[AnyEvent] = []
    for stored in await direct.read(js, subjects.stream_name(prefix), subject, limit=limit):
        try:
            events.append(decode_event(stored.data))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            # Only the roles that own a subject may write it, so this is a newer or
            # older blendmesh's event: the fold goes on without it, and says so.
            log.warning(
                "event %d on %s cannot be read by this version and is left out: %s",
                stored.seq,
                stored.subject,
                exc,
            )
    return events


async def count_of(js: JetStreamContext, prefix: str, run_id: str, kind: str) -> int:
    """How many events of ``kind`` the log holds for ``run_id``: one request, no reads."""
    subjects.check_token(run_id, "run id")
    subject = subjects.run_events(prefix, run_id, kind)
    info = await js.stream_info(subjects.stream_name(prefix), subjects_filter=subject)
    return sum((info.state.subjects or {}).values())
