"""An in-memory event log with JetStream's consumer semantics, for tests of how the
services' handlers work together (FastStream's TestNatsBroker, for blendmesh).

It takes the services' own ``ConsumerSpec``s and delivers each published event to every
durable whose filter matches, in log order, with what the consumer loop
(services/runtime/service/consumer.py) promises a handler: the events a handler returns are
appended before its message is acknowledged, once; a raised ``Retry`` (or any other
error) delivers the message again later, until ``max_deliver``; ``Reject``, an
undecodable message and an exhausted message become a ``DeadLettered`` event in the log.
Publishing drops an event whose id was published before, as the server's duplicate
window (``Nats-Msg-Id``) does.

Time is virtual: ``clock`` is what the handlers are wired with, and it moves only when
the bus waits out a redelivery. ``run_until_quiet`` delivers until nothing is due within
``horizon`` seconds: short retries are waited out; a longer delay (an approval's expiry
timer) stays pending until ``advance`` moves the clock past it. A bus that never quiets
raises ``NeverQuiet`` naming the deliveries it cycles through.

What is not modelled: concurrency (one handler runs at a time, so every run is the same
interleaving), ack_wait and heartbeats, and the batch consumer's backoff between
attempts (they are retried at once).
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from contracts import subjects
from contracts.events import (
    AnyEvent,
    DeadLettered,
    Event,
    decode_event,
    derive_event_id,
)
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery, backoff
from services.runtime.service.errors import Reject, Retry
from services.runtime.service.limits import encode_bounded

PAYLOAD_EXCERPT = 4096  # as the consumer loop keeps of a dead letter's message
MAX_STEPS = 10_000  # deliveries one call makes at most before the bus is said to cycle
MAX_LOG = 100_000  # messages the log holds at most: a test's runs are far fewer
HORIZON = 15.0  # seconds of redelivery delay waited out; a longer one is a timer
START = 1_800_000_000.0  # the virtual clock's first reading (seconds since the epoch)
CYCLE_WINDOW = 64  # the last deliveries a NeverQuiet looks for a cycle in


class NeverQuiet(AssertionError):
    """The handlers kept delivering past the step limit: a cycle, named in the message."""


def matches(pattern: str, subject: str) -> bool:
    """NATS subject matching: ``*`` is one token, a final ``>`` is one or more."""
    want, have = pattern.split("."), subject.split(".")
    for i, token in enumerate(want):
        if token == ">" and i == len(want) - 1:
            return len(have) > i
        if i >= len(have) or (token != "*" and token != have[i]):
            return False
    return len(want) == len(have)


@dataclass(frozen=True)
class Stored:
    """One message of the log."""

    seq: int
    subject: str
    data: bytes
    msg_id: str


@dataclass(frozen=True)
class Settled:
    """What one delivery came to: ``acked``, ``retry``, ``dead`` (dead-lettered)."""

    durable: str
    seq: int
    subject: str
    num_delivered: int
    outcome: str
    reason: str = ""


@dataclass
class _Durable:
    spec: ConsumerSpec
    index: int
    delivered: dict[int, int] = field(default_factory=dict)  # seq -> deliveries so far
    acked: set[int] = field(default_factory=set)  # seqs settled for good (ack or term)

    def wants(self, subject: str) -> bool:
        return not self.spec.filter_subjects or any(
            matches(f, subject) for f in self.spec.filter_subjects
        )


class MemoryPipeline:
    """``PipelinedPublisher`` on the bus: each event is in the log once sent."""

    def __init__(self, bus: MemoryBus) -> None:
        self._bus = bus

    async def send(self, event: Event) -> None:
        await self._bus.publish(event)

    async def settle(self) -> None:
        """Nothing to wait for: a send is stored when it returns."""

    def flush(self) -> None:
        """Nothing is buffered."""


class MemoryBus:
    """The log, the durables bound to it, and a virtual clock; see the module docstring."""

    def __init__(
        self, prefix: str = "bm", horizon: float = HORIZON, max_steps: int = MAX_STEPS
    ) -> None:
        self.prefix = prefix
        self.horizon = horizon
        self.max_steps = max_steps
        self.now = START
        self.log: list[Stored] = []
        self.settled: list[Settled] = []  # every delivery's outcome, in order
        self._ids: dict[str, int] = {}  # message id -> its seq: the duplicate window
        self._durables: dict[str, _Durable] = {}
        self._due: list[tuple[float, int, int, str]] = []  # (when, seq, durable index, name)
        self._recent: deque[str] = deque(maxlen=CYCLE_WINDOW)
        self._until = self.now  # how far the clock may move in the call under way

    def clock(self) -> float:
        return self.now

    def add(self, spec: ConsumerSpec) -> None:
        """Bind a durable; like ``DeliverPolicy.ALL`` it is delivered the log from its start."""
        if spec.durable in self._durables:
            raise ValueError(f"durable {spec.durable!r} is bound already")
        durable = _Durable(spec, len(self._durables))
        self._durables[spec.durable] = durable
        for stored in self.log:
            self._offer(durable, stored)

    def _offer(self, durable: _Durable, stored: Stored) -> None:
        if durable.wants(stored.subject):
            heapq.heappush(self._due, (self.now, stored.seq, durable.index, durable.spec.durable))

    async def publish(self, event: Event) -> int:
        """``EventPublisher``: append ``event`` (``EventTooLarge`` as the real one raises)."""
        return self.publish_raw(
            subjects.for_event(self.prefix, event), encode_bounded(event), event.event_id
        )

    def publish_raw(self, subject: str, data: bytes, msg_id: str | None = None) -> int:
        """Append bytes as a client of the bus might; a repeated ``msg_id`` is dropped and
        the first copy's seq returned, as JetStream answers a duplicate."""
        if msg_id is not None and msg_id in self._ids:
            return self._ids[msg_id]
        if len(self.log) >= MAX_LOG:
            raise OverflowError(f"the in-memory log is full ({MAX_LOG} messages)")
        stored = Stored(len(self.log) + 1, subject, data, msg_id or f"raw-{len(self.log) + 1}")
        self.log.append(stored)
        self._ids[stored.msg_id] = stored.seq
        for durable in self._durables.values():
            self._offer(durable, stored)
        return stored.seq

    def pipeline(self) -> MemoryPipeline:
        return MemoryPipeline(self)

    def events(self, subject: str = ">") -> list[AnyEvent]:
        """The decodable events on subjects matching ``subject`` (relative to the prefix)."""
        pattern = f"{self.prefix}.{subject}"
        found = []
        for stored in self.log:
            if matches(pattern, stored.subject):
                try:
                    found.append(decode_event(stored.data))
                except (msgspec.ValidationError, msgspec.DecodeError):
                    continue  # as read_subject leaves out what it cannot read
        return found

    async def history(self, run_id: str) -> list[AnyEvent]:
        """``read_run`` on the log: the run's events in log order."""
        subjects.check_token(run_id, "run id")
        return self.events(f"run.{run_id}.*")

    async def last_of(self, run_id: str, kind: str) -> AnyEvent | None:
        """``last_of`` on the log: the run's newest event of ``kind``."""
        found = self.events(f"run.{subjects.check_token(run_id, 'run id')}.{kind}")
        return found[-1] if found else None

    async def kinds(self, run_id: str) -> set[str]:
        """``run_kinds`` on the log: the kinds of event the run has."""
        subjects.check_token(run_id, "run id")
        pattern = subjects.run_events(self.prefix, run_id)
        return {s.subject.rsplit(".", 1)[-1] for s in self.log if matches(pattern, s.subject)}

    def dead_letters(self) -> list[DeadLettered]:
        return [e for e in self.events("deadletter.*") if isinstance(e, DeadLettered)]

    def timers(self) -> list[tuple[float, str, str]]:
        """What waits past the horizon: (seconds from now, durable, subject)."""
        return sorted(
            (when - self.now, name, self.log[seq - 1].subject) for when, seq, _, name in self._due
        )

    async def run_until_quiet(self) -> int:
        """Deliver until nothing is due within ``horizon``; returns the deliveries made."""
        return await self._run(self.now + self.horizon, wait_beyond=True)

    async def advance(self, seconds: float) -> int:
        """Move the clock ``seconds`` on, delivering whatever falls due meanwhile (and what
        that leads to, up to then); the clock stops there. Returns the deliveries made."""
        steps = await self._run(self.now + seconds, wait_beyond=False)
        self.now = max(self.now, self._until)
        return steps

    async def _run(self, until: float, wait_beyond: bool) -> int:
        self._until = until
        steps = 0
        while self._due:
            when = self._due[0][0]
            if when > self._until:
                break
            self.now = max(self.now, when)
            if wait_beyond:  # a wait within the horizon moves the horizon on with it
                self._until = max(self._until, self.now + self.horizon)
            if steps >= self.max_steps:
                raise NeverQuiet(self._cycle())
            _, seq, _, name = heapq.heappop(self._due)
            durable = self._durables[name]
            steps += 1
            if durable.spec.batch_handler is not None:
                await self._batch(durable, seq)
            else:
                await self._deliver(durable, self.log[seq - 1])
        return steps

    def _delivery(self, durable: _Durable, stored: Stored) -> Delivery:
        count = durable.delivered.get(stored.seq, 0) + 1
        durable.delivered[stored.seq] = count
        self._recent.append(f"{durable.spec.durable} <- {_kind(stored.subject)}")
        return Delivery(
            stream_seq=stored.seq,
            num_delivered=count,
            subject=stored.subject,
            data=stored.data,
            headers={"Nats-Msg-Id": stored.msg_id},
        )

    async def _deliver(self, durable: _Durable, stored: Stored) -> None:
        spec = durable.spec
        delivery = self._delivery(durable, stored)
        try:
            event = decode_event(stored.data)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            await self._dead(durable, delivery, f"undecodable message: {exc}")
            return
        try:
            for out in await spec.handler(event, delivery):
                await self.publish(out)
        except Reject as exc:
            await self._dead(durable, delivery, f"rejected: {exc}")
        except Retry as exc:
            await self._retry(durable, delivery, str(exc), exc.delay)
        except Exception as exc:  # noqa: BLE001 - as the loop: transient until max_deliver
            delay = backoff(delivery.num_delivered, spec.backoff_cap)
            await self._retry(durable, delivery, f"{type(exc).__name__}: {exc}", delay)
        else:
            self._settle(durable, delivery, "acked")

    async def _batch(self, durable: _Durable, first: int) -> None:
        """Batch mode: ``first`` and what waits behind it for this durable, up to the batch,
        handled together; a failing batch is retried, then message by message."""
        spec = durable.spec
        waiting = sorted(
            e for e in self._due if e[3] == spec.durable and e[0] <= self.now and e[1] > first
        )
        behind = {e[1]: e for e in sorted(waiting, key=lambda e: e[1])[: spec.batch - 1]}
        if behind:
            self._due = [e for e in self._due if e not in behind.values()]
            heapq.heapify(self._due)
        seqs = [first, *sorted(behind)]
        await self._settle_together(durable, [self.log[s - 1] for s in seqs])

    async def _settle_together(self, durable: _Durable, stored: Sequence[Stored]) -> None:
        spec = durable.spec
        assert spec.batch_handler is not None
        items: list[tuple[AnyEvent, Delivery]] = []
        for message in stored:
            delivery = self._delivery(durable, message)
            try:
                items.append((decode_event(message.data), delivery))
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                await self._dead(durable, delivery, f"undecodable message: {exc}")
        if not items:
            return
        reason = ""
        for _ in range(spec.max_deliver):
            try:
                for out in await spec.batch_handler(items):
                    await self.publish(out)
            except Exception as exc:  # noqa: BLE001 - retried, then dead-lettered
                reason = f"{type(exc).__name__}: {exc}"
                continue
            for _, delivery in items:
                self._settle(durable, delivery, "acked")
            return
        if len(items) > 1:
            for _, delivery in items:
                await self._settle_together(durable, [self.log[delivery.stream_seq - 1]])
            return
        delivery = items[0][1]
        await self._dead(durable, delivery, f"gave up after {spec.max_deliver} attempts: {reason}")

    async def _retry(
        self, durable: _Durable, delivery: Delivery, reason: str, delay: float
    ) -> None:
        if delivery.num_delivered >= durable.spec.max_deliver:
            why = f"gave up after {delivery.num_delivered} deliveries: {reason}"
            await self._dead(durable, delivery, why)
            return
        self.settled.append(
            Settled(
                durable.spec.durable,
                delivery.stream_seq,
                delivery.subject,
                delivery.num_delivered,
                "retry",
                reason,
            )
        )
        entry = (
            self.now + max(delay, 0.0),
            delivery.stream_seq,
            durable.index,
            durable.spec.durable,
        )
        heapq.heappush(self._due, entry)

    async def _dead(self, durable: _Durable, delivery: Delivery, reason: str) -> None:
        name = durable.spec.durable
        letter = DeadLettered(
            event_id=derive_event_id(f"seq:{delivery.stream_seq}", f"dlq:{name}"),
            at=self.now,
            consumer=name,
            subject=delivery.subject,
            stream_seq=delivery.stream_seq,
            deliveries=delivery.num_delivered,
            reason=reason[:2000],
            payload=delivery.data[:PAYLOAD_EXCERPT].decode("utf-8", errors="replace"),
        )
        await self.publish(letter)
        self._settle(durable, delivery, "dead", reason)

    def _settle(
        self, durable: _Durable, delivery: Delivery, outcome: str, reason: str = ""
    ) -> None:
        if delivery.stream_seq in durable.acked:  # the bus's own promise: one ack per message
            raise AssertionError(f"{durable.spec.durable} settled seq {delivery.stream_seq} twice")
        durable.acked.add(delivery.stream_seq)
        self.settled.append(
            Settled(
                durable.spec.durable,
                delivery.stream_seq,
                delivery.subject,
                delivery.num_delivered,
                outcome,
                reason,
            )
        )

    def _cycle(self) -> str:
        recent = list(self._recent)
        for period in range(1, len(recent) // 3 + 1):
            tail = recent[-3 * period :]
            if all(tail[i] == tail[i % period] for i in range(len(tail))):
                cycle = " -> ".join(tail[:period])
                return (
                    f"the bus did not quiet within {self.max_steps} deliveries; "
                    f"it cycles through: {cycle}"
                )
        busiest = ", ".join(f"{k} ({n}x)" for k, n in Counter(recent).most_common(5))
        return (
            f"the bus did not quiet within {self.max_steps} deliveries; "
            f"the most frequent of the last {len(recent)}: {busiest}"
        )


def _kind(subject: str) -> str:
    """``run.requested`` of ``bm.run.<id>.requested``: a delivery's name without its ids."""
    tokens = subject.split(".")
    return f"{tokens[1]}.{tokens[-1]}" if len(tokens) > 2 else subject
