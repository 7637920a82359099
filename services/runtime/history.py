"""Reading a run's events, or a thread's messages, back from the log (the source of truth)."""

from __future__ import annotations

import contextlib

from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy

from contracts import subjects
from contracts.events import AnyEvent, ThreadMessage, decode_event


async def read_run(js: JetStreamContext, prefix: str, run_id: str) -> list[AnyEvent]:
    """All events of ``run_id`` in log order, read through an ephemeral ordered consumer."""
    return await _read(js, prefix, subjects.run_events(prefix, run_id))


async def read_thread(
    js: JetStreamContext, prefix: str, thread_id: str, limit: int = 20
) -> list[ThreadMessage]:
    """The last ``limit`` messages of a conversation thread, oldest first."""
    events = await _read(js, prefix, subjects.thread_events(prefix, thread_id, "message"))
    messages = [e for e in events if isinstance(e, ThreadMessage)]
    return messages[-limit:] if limit > 0 else []


async def _read(js: JetStreamContext, prefix: str, subject: str) -> list[AnyEvent]:
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
