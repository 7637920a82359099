"""Publishers: the ports that append events to the log, and their JetStream adapters."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from nats.aio.client import Client
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.errors import NoStreamResponseError

from contracts import subjects
from contracts.events import Event
from services.runtime.nats import quorum
from services.runtime.service import tracing
from services.runtime.service.limits import encode_bounded


class EventPublisher(Protocol):
    """Port: append events to the log. Returns the stream sequence of the event."""

    async def publish(self, event: Event) -> int: ...


class PipelinedPublisher(Protocol):
    """Port: send events in order without waiting for each acknowledgement."""

    async def send(self, event: Event) -> None: ...

    async def settle(self) -> None:
        """Wait until every sent event is stored; raise if any was not."""
        ...

    def flush(self) -> None:
        """Start storing what is sent so far, without waiting for it (a pipeline that
        sends at once has nothing to do)."""
        ...


class JetStreamPublisher:
    """Publishes with ``Nats-Msg-Id`` = the event id, so re-publishing is idempotent.

    The headers also carry the current trace context, so the consumers' spans join it.
    """

    def __init__(self, js: JetStreamContext, prefix: str, nc: Client | None = None) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix)
        self._nc = nc  # with it, a timeout says how many servers answer (quorum.py)

    async def publish(self, event: Event) -> int:
        try:
            ack = await self._js.publish(
                subjects.for_event(self._prefix, event),
                encode_bounded(event),  # raises EventTooLarge before NATS would
                stream=self._stream,
                headers=tracing.inject({"Nats-Msg-Id": event.event_id}),
            )
        except (NatsTimeoutError, NoStreamResponseError):
            # With most of a cluster gone, the survivor answers "no responders" as often
            # as the publish times out, depending on when it noticed.
            if self._nc is None:
                raise
            raise await quorum.unavailable(self._nc, self._stream) from None
        return ack.seq


class JetStreamPipeline:
    """Publishes in order and collects the acknowledgements to await together.

    JetStream with ``sync_interval: always`` fsyncs every message; waiting for each ack in
    turn would put one fsync on the path of every operation of a run.

    An ack that was due when the connection was lost never comes: nats-py answers a
    publish on an inbox the old connection held. With ``nc``, ``settle`` sees the reconnect
    and fails at once (the handler's message is delivered again, and the events, sent
    again under their ``Nats-Msg-Id``, are stored once), instead of after its timeout. A
    run stopped by a restarted server, or by a store that refuses writes
    (``store_guard`` restarts the server), goes on that much sooner.
    """

    def __init__(self, js: JetStreamContext, prefix: str, nc: Client | None = None) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix)
        self._nc = nc
        self._pending: list[asyncio.Future[Any]] = []
        self._reconnects = 0  # the connection's count when the first pending event was sent

    def flush(self) -> None:
        """Nothing waits here: every event is sent as it comes."""

    async def send(self, event: Event) -> None:
        await self.send_raw(
            subjects.for_event(self._prefix, event),
            encode_bounded(event),
            tracing.inject({"Nats-Msg-Id": event.event_id}),
        )

    async def send_raw(self, subject: str, data: bytes, headers: dict[str, str]) -> None:
        """Send an encoded event (atomic_batches.py sends a refused batch's this way)."""
        if not self._pending:
            self._reconnects = self._reconnected()
        self._pending.append(
            await self._js.publish_async(subject, data, stream=self._stream, headers=headers)
        )

    async def settle(self, timeout: float = 15.0) -> None:
        """Wait for every acknowledgement; one lost to a reconnect raises as soon as the
        reconnect is seen, or else after ``timeout`` (the handler then fails and its message
        is delivered again) instead of hanging."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        acks = asyncio.gather(*pending)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while (left := deadline - loop.time()) > 0:
                done, _ = await asyncio.wait({acks}, timeout=min(left, LOOK_EVERY))
                if done:
                    acks.result()  # raises what JetStream refused
                    return
                if self._reconnected() != self._reconnects:
                    raise ConnectionError(
                        f"{_unacked(pending)} event(s) were sent before the connection to "
                        "NATS was lost and made again: their acknowledgements will not come"
                    )
            raise TimeoutError(
                f"{_unacked(pending)} event(s) were not acknowledged within {timeout:g} s"
            )
        finally:
            for future in pending:
                future.cancel()
            acks.cancel()
            # Its outcome is retrieved when it settles (no "exception never retrieved"),
            # without awaiting here: a cancel of this task must not be swallowed.
            acks.add_done_callback(_retrieve)

    def _reconnected(self) -> int:
        return 0 if self._nc is None else int(self._nc.stats["reconnects"])


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


LOOK_EVERY = 0.25  # seconds between two looks for a reconnect while acks are awaited


def _unacked(pending: list[asyncio.Future[Any]]) -> int:
    return sum(not f.done() or f.cancelled() for f in pending)
