"""A pipelined publisher that stores what a run sends together as one atomic batch.

nats-server under ``sync_interval: always`` fsyncs once per stored message and never
group-commits concurrent publishes; an atomic batch (ADR-50, the stream's ``allow_atomic``)
costs four fsyncs however many messages it holds (ADR 0069 has the counts). Below
``MIN_BATCH`` messages a batch costs more than the messages one by one, so a short flush
goes out one by one, through ``JetStreamPipeline``.

Crash safety is the one-by-one path's: every message keeps its ``Nats-Msg-Id``, and a batch
is stored whole or not at all. A batch the server refuses (a re-sent one holds an id it
already stored: error 10201, refused whole even when some of its messages are new) is sent
again one by one, where the duplicate window drops what is stored and keeps what is not;
so a retried batch neither duplicates nor loses. A stream without ``allow_atomic`` (10174,
an older mesh's log) gets the same.

Events wait ``linger`` seconds at most before they are sent, so a long operation's
progress still shows while it runs; ``flush`` (the run's operations are over) and ``settle``
send what is left at once.
"""

from __future__ import annotations

import asyncio
import logging

from nats.aio.client import Client
from nats.js import JetStreamContext

from contracts import subjects
from contracts.events import Event
from services.runtime.nats.atomic import (
    ALREADY_STORED,
    ATOMIC_DISABLED,
    MAX_BATCH,
    MIN_BATCH,
    BatchRefused,
    Message,
    publish_atomic,
)
from services.runtime.service import tracing
from services.runtime.service.limits import encode_bounded
from services.runtime.service.publishers import JetStreamPipeline

log = logging.getLogger("blendmesh.publish")

MAX_BATCH_BYTES = 4 * 1024 * 1024  # a batch is staged whole on the server: keep it bounded
LINGER = 0.25  # seconds an event may wait for others to share its batch


class AtomicPipeline:
    """``PipelinedPublisher`` for one run's events: sends are buffered and stored in order,
    in atomic batches where they are enough, one by one otherwise."""

    def __init__(
        self,
        js: JetStreamContext,
        nc: Client,
        prefix: str,
        linger: float = LINGER,
        min_batch: int = MIN_BATCH,
    ) -> None:
        self._js = js
        self._nc = nc
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix)
        self._linger = linger
        self._min_batch = max(2, min(min_batch, MAX_BATCH))
        self._buffer: list[Message] = []
        self._bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._flushed: asyncio.Future[None] | None = None  # the last flush, in order

    async def send(self, event: Event) -> None:
        data = encode_bounded(event)  # raises EventTooLarge before NATS would
        headers = tracing.inject({"Nats-Msg-Id": event.event_id})
        if self._buffer and (
            len(self._buffer) >= MAX_BATCH or self._bytes + len(data) > MAX_BATCH_BYTES
        ):
            self._flush()
        self._buffer.append((subjects.for_event(self._prefix, event), data, headers))
        self._bytes += len(data)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._linger, self._flush)

    def flush(self) -> None:
        """Start storing what is buffered now, without waiting for the linger: the run's
        operations are over, and its events are stored while the revision is committed
        instead of after it."""
        self._flush()

    async def settle(self) -> None:
        """Send what is buffered now and wait until everything sent is stored; raise the
        first failure (the handler's message is then delivered again)."""
        self._flush()
        flushed, self._flushed = self._flushed, None
        if flushed is not None:
            await flushed

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._buffer:
            return
        messages, self._buffer, self._bytes = self._buffer, [], 0
        self._flushed = asyncio.ensure_future(self._store(self._flushed, messages))

    async def _store(self, previous: asyncio.Future[None] | None, messages: list[Message]) -> None:
        if previous is not None:
            await previous  # in order; a failure before stops the rest
        if len(messages) >= self._min_batch:
            try:
                await publish_atomic(self._nc, self._stream, messages)
                return
            except BatchRefused as refused:
                if refused.code not in (ALREADY_STORED, ATOMIC_DISABLED):
                    log.warning("%s; sending its %d events one by one", refused, len(messages))
        await self._one_by_one(messages)

    async def _one_by_one(self, messages: list[Message]) -> None:
        # Pipelined as before: stored in the order sent, and settled before anything that
        # builds on them (the run's result) is sent.
        pipeline = JetStreamPipeline(self._js, self._prefix, self._nc)
        for subject, data, headers in messages:
            await pipeline.send_raw(subject, data, headers)
        await pipeline.settle()
