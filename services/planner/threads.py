"""A conversation thread's messages, read back from the log for the model's prompt."""

from __future__ import annotations

from nats.js import JetStreamContext

from contracts import subjects
from contracts.events import ThreadMessage
from services.runtime.nats.history import read_subject


async def read_thread(
    js: JetStreamContext, prefix: str, thread_id: str, limit: int = 20
) -> list[ThreadMessage]:
    """The last ``limit`` messages of a conversation thread, oldest first."""
    events = await read_subject(js, prefix, subjects.thread_events(prefix, thread_id, "message"))
    messages = [e for e in events if isinstance(e, ThreadMessage)]
    return messages[-limit:] if limit > 0 else []
