"""Reading one run's events back from the log (the source of truth for its state)."""

from __future__ import annotations

import contextlib

from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy

from contracts import subjects
from contracts.events import AnyEvent, decode_event


async def read_run(js: JetStreamContext, prefix: str, run_id: str) -> list[AnyEvent]:
    """All events of ``run_id`` in log order, read through an ephemeral ordered consumer."""
    subject = subjects.run_events(prefix, run_id)
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
            with contextlib.suppress(Exception):
                events.append(decode_event(msg.data))
            if msg.metadata.num_pending == 0:
                break
    except TimeoutError:
        pass
    finally:
        await sub.unsubscribe()
    return events
