"""The consumer loop: the only place that acknowledges messages.

A handler decodes nothing and acks nothing: it gets a typed event and returns the events
it produces. The loop publishes those, then acks; maps ``Retry`` and unexpected errors to
a delayed nak; and turns ``Reject``, undecodable messages and exhausted ``max_deliver``
into a dead-letter event in the log before terminating the message.

A loop keeps consuming through reconnects and failing messages. It ends by itself only
when it cannot go on (its connection was closed for good, or an error escaped it): then
``failed()`` says why, and the service that runs it is dead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from functools import partial

import msgspec
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from opentelemetry.trace import Span, StatusCode

from contracts import subjects
from contracts.events import (
    AnyEvent,
    DeadLettered,
    decode_event,
    derive_event_id,
    event_kind,
)
from services.runtime.nats.durables import DurableConsumer
from services.runtime.nats.ready import READY_WAIT, until_ready
from services.runtime.service import metrics
from services.runtime.service.consumer_spans import failed, handle_span
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery, backoff, delivery_of
from services.runtime.service.errors import Reject, Retry
from services.runtime.service.log_context import correlated, ids_of, shared_ids
from services.runtime.service.publishers import EventPublisher
from services.runtime.service.room import Room

log = logging.getLogger("blendmesh.consumer")

PAYLOAD_EXCERPT = 4096
WAITING_WITHIN = 0.5  # seconds to fetch messages the server says are already waiting
FETCH_WAIT = 5.0  # seconds a fetch waits for a message (a long poll), at most


class ConsumerLoop:
    """Runs one durable consumer until stopped. Several processes may bind the same one."""

    def __init__(
        self,
        js: JetStreamContext,
        publisher: EventPublisher,
        prefix: str,
        spec: ConsumerSpec,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._js = js
        self._publisher = publisher
        self._prefix = prefix
        self._spec = spec
        self._clock = clock
        self._stopping = False
        self._busy = False
        self._task: asyncio.Task[None] | None = None
        stream = subjects.stream_name(prefix)
        self._durable = DurableConsumer(js, stream, spec.config())
        self._next_check = 0.0
        self._ended = asyncio.Event()
        self.error: BaseException | None = None  # why the loop ended by itself
        # A message whose writes storage refuses waits for room in place (ADR 0040).
        self.room = Room(spec.durable, clock, spec.backoff_cap, spec.room_patience)

    async def start(self, wait: float = READY_WAIT) -> None:
        """Create or check the durable consumer and start consuming; waits ``wait``
        seconds at most for JetStream to place it (a cluster that is still starting)."""
        stream = subjects.stream_name(self._prefix)

        async def bind() -> None:
            await self._durable.ensure()
            self._sub = await self._js.pull_subscribe_bind(
                durable=self._spec.durable, stream=stream
            )

        await until_ready(f"consumer {self._spec.durable} of stream {stream}", bind, wait)
        metrics.consumer_started(self._spec.durable)
        self._next_check = asyncio.get_running_loop().time() + self._spec.check_interval
        self._task = asyncio.create_task(self._run(), name=f"consumer:{self._spec.durable}")

    def problem(self) -> str | None:
        """What is wrong with this loop's work now, for its service's STATS; None: nothing."""
        return self.room.problem()

    async def failed(self) -> BaseException:
        """Wait until the loop ends by itself, unable to go on, and return why; a loop
        that is stopped never returns."""
        await self._ended.wait()
        assert self.error is not None
        return self.error

    async def stop(self) -> None:
        """Finish the message in hand, then stop fetching."""
        self._stopping = True
        self.room.stop_asked.set()
        task, self._task = self._task, None
        if task is None:
            return
        if not self._busy:
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except Exception:  # stopping must not fail on a loop that died
            log.exception("%s: the consumer loop had failed", self._spec.durable)
        with contextlib.suppress(Exception):
            await self._sub.unsubscribe()

    async def _check(self) -> None:
        """Now and then, make sure the durable consumer is still there as configured."""
        now = asyncio.get_running_loop().time()
        if now < self._next_check:
            return
        self._next_check = now + self._spec.check_interval
        try:
            await self._durable.ensure()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. reconnecting: try again next time
            log.warning("%s: could not check the durable consumer (%s)", self._spec.durable, exc)

    async def _run(self) -> None:
        try:
            await self._consume()
        except Exception as exc:  # the loop cannot go on: its service is dead, say so
            if self._stopping:
                return
            if isinstance(exc, ConnectionClosedError):
                # Closed for good: by the mesh tearing a half-started service down, or
                # after every reconnect failed. A line says it; a traceback adds nothing.
                log.warning("%s: the consumer loop ended: %s", self._spec.durable, exc)
            else:
                log.exception("%s: the consumer loop ended", self._spec.durable)
            self.error = exc
            self._ended.set()

    async def _consume(self) -> None:
        while not self._stopping:
            await self._check()
            try:
                # No longer than the check interval: an idle loop would otherwise notice
                # a deleted or changed consumer only when its long poll ends.
                wait = min(FETCH_WAIT, self._spec.check_interval)
                msgs = await self._sub.fetch(batch=1, timeout=wait)
                msgs += await self._waiting(msgs)
            except (TimeoutError, NatsTimeoutError):
                continue
            except asyncio.CancelledError:
                raise
            except ConnectionClosedError:
                raise  # closed for good, unlike a reconnect: nothing will come any more
            except Exception as exc:  # noqa: BLE001 - e.g. reconnecting: keep consuming
                log.warning("%s: fetch failed (%s); retrying", self._spec.durable, exc)
                self._next_check = 0.0  # the consumer may be gone: check before the next fetch
                await asyncio.sleep(0.5)
                continue
            if self._spec.batch_handler is not None:
                self._busy = True
                try:
                    await self._process_batch(msgs)
                except asyncio.CancelledError:
                    raise
                except Exception:  # as below: the messages come back after ack_wait
                    log.exception("%s: could not settle a batch", self._spec.durable)
                finally:
                    self._busy = False
                continue
            for msg in msgs:
                self._busy = True
                try:
                    await self.process(msg)
                except asyncio.CancelledError:
                    raise
                except Exception:  # one message must never end the loop
                    # Settling failed (an ack reply lost, a dead letter not stored): the
                    # message comes back after ack_wait and the handler's idempotence
                    # absorbs the repeat.
                    log.exception(
                        "%s: could not settle %s; it will be redelivered",
                        self._spec.durable,
                        msg.subject,
                    )
                finally:
                    self._busy = False

    async def _waiting(self, msgs: list[Msg]) -> list[Msg]:
        """Batch mode: after the one message a long poll brought, what is already waiting
        behind it, up to the batch. Asking for a batch outright would cost an idle
        consumer two requests per poll (nats-py asks without waiting first)."""
        if self._spec.batch_handler is None or not msgs:
            return []
        waiting = min(msgs[-1].metadata.num_pending, self._spec.batch - 1)
        if waiting <= 0:
            return []
        try:
            return await self._sub.fetch(batch=waiting, timeout=WAITING_WITHIN)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - taken by another instance, a reconnect: go on
            return []  # with the message in hand; the rest is fetched next time

    async def process(self, msg: Msg) -> None:
        """Handle one message and settle it: ack, nak with delay, or term."""
        delivery = self._delivered(msg)
        event: AnyEvent | None = None
        undecodable = ""
        try:
            event = decode_event(msg.data)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            undecodable = f"undecodable message: {exc}"
        # The handler's span is a child of the publisher's; what the handler publishes and
        # the dead letters written here carry it on as their parent.
        with (
            handle_span(self._spec.durable, msg, delivery, event) as span,
            correlated(**ids_of(event)),  # what the handler logs names the event's ids
        ):
            if event is None:
                span.set_status(StatusCode.ERROR, undecodable)
                await self._dead_letter(msg, delivery, undecodable, "undecodable")
                return
            started = time.perf_counter()
            try:
                await self._handle(msg, delivery, event, span)
            finally:
                elapsed = time.perf_counter() - started
                metrics.stage_handled(self._spec.durable, event_kind(event), elapsed)

    def _delivered(self, msg: Msg) -> Delivery:
        """The message's place in the log, counted: what waits behind it (the consumer's
        lag, from the metadata every message carries, so no extra request) and whether it
        came before."""
        delivery = delivery_of(msg)
        metrics.consumer_lag(self._spec.durable, msg.metadata.num_pending)
        if delivery.num_delivered > 1:
            metrics.redelivered(self._spec.durable)
        return delivery

    async def _handle(self, msg: Msg, delivery: Delivery, event: AnyEvent, span: Span) -> None:
        heartbeat = asyncio.create_task(self._heartbeat(msg)) if self._spec.heartbeat else None

        async def apply() -> None:
            produced = await self._spec.handler(event, delivery)
            for out in produced:
                await self._publisher.publish(out)

        try:
            hold = None if heartbeat else (lambda: self._heartbeat(msg))  # one is enough
            await self.room.until_room(apply, hold)
        except Reject as exc:
            failed(span, exc)
            await self._dead_letter(msg, delivery, f"rejected: {exc}", "rejected")
            return
        except Retry as exc:
            failed(span, exc)
            await self._retry(msg, delivery, str(exc), exc.delay)
            return
        except Exception as exc:
            failed(span, exc)
            log.exception("%s: handler failed on %s", self._spec.durable, msg.subject)
            delay = backoff(delivery.num_delivered, self._spec.backoff_cap)
            await self._retry(msg, delivery, f"{type(exc).__name__}: {exc}", delay)
            return
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
        await msg.ack_sync(timeout=self._spec.ack_timeout)

    async def _process_batch(self, msgs: Sequence[Msg]) -> None:
        """Batch mode: the decodable messages between undecodable ones are handled together;
        an undecodable one is dead-lettered where it stands, so the order holds."""
        run: list[tuple[Msg, Delivery, AnyEvent]] = []
        for msg in msgs:
            delivery = self._delivered(msg)
            try:
                run.append((msg, delivery, decode_event(msg.data)))
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                await self._settle_together(run)
                run = []
                reason = f"undecodable message: {exc}"
                await self._dead_letter(msg, delivery, reason, "undecodable")
        await self._settle_together(run)

    async def _settle_together(self, items: Sequence[tuple[Msg, Delivery, AnyEvent]]) -> None:
        """Handle ``items`` in one call and ack them all, retrying in place; when they keep
        failing, one by one, and dead-letter the one that still fails."""
        if not items:
            return
        assert self._spec.batch_handler is not None
        # Slow retries must not let ack_wait expire: the server would deliver them again.
        in_hand = [msg for msg, _, _ in items]
        beating = asyncio.create_task(self._heartbeat(*in_hand))
        try:
            reason = ""
            for attempt in range(1, self._spec.max_deliver + 1):
                with contextlib.ExitStack() as spans:
                    spans.enter_context(correlated(**shared_ids([e for _, _, e in items])))
                    opened = [
                        spans.enter_context(handle_span(self._spec.durable, m, d, e))
                        for m, d, e in items
                    ]
                    try:
                        await self.room.until_room(partial(self._apply_batch, items))
                    except Exception as exc:  # noqa: BLE001 - retried, then dead-lettered
                        for span in opened:
                            failed(span, exc)
                        reason = f"{type(exc).__name__}: {exc}"
                        log.warning(
                            "%s: a batch of %d failed (attempt %d): %s",
                            self._spec.durable, len(items), attempt, reason,
                        )  # fmt: skip
                        if attempt < self._spec.max_deliver:
                            await asyncio.sleep(backoff(attempt, self._spec.backoff_cap))
                        continue
                for msg, _, _ in items[:-1]:
                    await msg.ack()
                await items[-1][0].ack_sync(timeout=self._spec.ack_timeout)
                return
        finally:
            beating.cancel()
        if len(items) > 1:
            for item in items:  # find the one that fails; the others still apply, in order
                await self._settle_together([item])
            return
        msg, delivery, _ = items[0]
        await self._dead_letter(
            msg, delivery, f"gave up after {self._spec.max_deliver} attempts: {reason}", "exhausted"
        )

    async def _apply_batch(self, items: Sequence[tuple[Msg, Delivery, AnyEvent]]) -> None:
        assert self._spec.batch_handler is not None
        produced = await self._spec.batch_handler([(e, d) for _, d, e in items])
        for out in produced:
            await self._publisher.publish(out)

    async def _retry(self, msg: Msg, delivery: Delivery, reason: str, delay: float) -> None:
        if delivery.num_delivered >= self._spec.max_deliver:
            await self._dead_letter(
                msg,
                delivery,
                f"gave up after {delivery.num_delivered} deliveries: {reason}",
                "exhausted",
            )
            return
        log.info("%s: retry %s in %.2fs: %s", self._spec.durable, msg.subject, delay, reason)
        await msg.nak(delay=delay)

    async def _dead_letter(
        self, msg: Msg, delivery: Delivery, reason: str, why: metrics.DeadLetterReason
    ) -> None:
        log.error("%s: dead-lettering %s: %s", self._spec.durable, msg.subject, reason)
        letter = DeadLettered(
            event_id=derive_event_id(f"seq:{delivery.stream_seq}", f"dlq:{self._spec.durable}"),
            at=self._clock(),
            consumer=self._spec.durable,
            subject=msg.subject,
            stream_seq=delivery.stream_seq,
            deliveries=delivery.num_delivered,
            reason=reason[:2000],
            payload=msg.data[:PAYLOAD_EXCERPT].decode("utf-8", errors="replace"),
        )
        await self._publisher.publish(letter)
        await msg.term()
        metrics.dead_lettered(self._spec.durable, why)

    async def _heartbeat(self, *msgs: Msg) -> None:
        interval = max(self._spec.ack_wait / 3, 0.1)
        while True:
            await asyncio.sleep(interval)
            for msg in msgs:
                with contextlib.suppress(Exception):
                    await msg.in_progress()
