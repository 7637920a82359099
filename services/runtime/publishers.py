"""Publishers: the ports that append events to the log, and their JetStream adapters."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from nats.js import JetStreamContext

from contracts import subjects
from contracts.events import Event
from services.runtime import tracing
from services.runtime.limits import encode_bounded


class EventPublisher(Protocol):
    """Port: append events to the log. Returns the stream sequence of the event."""

    async def publish(self, event: Event) -> int: ...


class PipelinedPublisher(Protocol):
    """Port: send events in order without waiting for each acknowledgement."""

    async def send(self, event: Event) -> None: ...

    async def settle(self) -> None:
        """Wait until every sent event is stored; raise if any was not."""
        ...


class JetStreamPublisher:
    """Publishes with ``Nats-Msg-Id`` = the event id, so re-publishing is idempotent.

    The headers also carry the current trace context, so the consumers' spans join it.
    """

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix)

    async def publish(self, event: Event) -> int:
        ack = await self._js.publish(
            subjects.for_event(self._prefix, event),
            encode_bounded(event),  # raises EventTooLarge before NATS would
            stream=self._stream,
            headers=tracing.inject({"Nats-Msg-Id": event.event_id}),
        )
        return ack.seq


class JetStreamPipeline:
    """Publishes in order and collects the acknowledgements to await together.

    JetStream with ``sync_interval: always`` fsyncs every message; waiting for each ack in
    turn would put one fsync on the path of every operation of a run.
    """

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix)
        self._pending: list[asyncio.Future[Any]] = []

    async def send(self, event: Event) -> None:
        self._pending.append(
            await self._js.publish_async(
                subjects.for_event(self._prefix, event),
                encode_bounded(event),
                stream=self._stream,
                headers=tracing.inject({"Nats-Msg-Id": event.event_id}),
            )
        )

    async def settle(self, timeout: float = 15.0) -> None:
        """Wait for every acknowledgement; an ack lost to a reconnect raises after ``timeout``
        (the handler then fails and its message is delivered again) instead of hanging."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        try:
            await asyncio.wait_for(asyncio.gather(*pending), timeout)
        except TimeoutError:
            for future in pending:
                future.cancel()
            raise TimeoutError(
                f"{sum(not f.done() or f.cancelled() for f in pending)} event(s) were not "
                f"acknowledged within {timeout:g} s"
            ) from None
