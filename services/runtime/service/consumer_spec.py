"""What a consumer is: the durable it binds (``ConsumerSpec``), the handler it feeds, and
the ``Delivery`` each message arrives with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts.events import AnyEvent, Event


@dataclass(frozen=True)
class Delivery:
    """Where a message sits in the log and how often it has been delivered."""

    stream_seq: int
    num_delivered: int
    subject: str
    # The message as published: a signed request is checked against these exact bytes.
    data: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


Handler = Callable[[AnyEvent, Delivery], Awaitable[Sequence[Event]]]
# Several messages at once, in log order; all of them succeed or none does.
BatchHandler = Callable[[Sequence[tuple[AnyEvent, Delivery]]], Awaitable[Sequence[Event]]]


@dataclass(frozen=True)
class ConsumerSpec:
    """A durable pull consumer and the handler it feeds."""

    durable: str
    filter_subjects: list[str]
    handler: Handler
    ack_wait: float = 30.0
    max_deliver: int = 5
    max_ack_pending: int = 1000
    heartbeat: bool = False  # send in_progress() while the handler runs (long work)
    backoff_cap: float = 10.0
    # Seconds a message waits in place while storage refuses its writes (ADR 0040); then
    # it is retried and dead-lettered like any failure (a write too big for what is left).
    room_patience: float = 900.0
    ack_timeout: float = 10.0  # how long to wait for the server to confirm an ack
    check_interval: float = 5.0  # seconds between checks that the consumer is as configured
    extra: dict[str, object] = field(default_factory=dict)
    # Batch mode (``batch_handler``): up to ``batch`` messages that are waiting are handled
    # in one call and acknowledged together. Nothing is ever nak'd; a failing batch is
    # retried in place, then message by message, and a message that fails ``max_deliver``
    # times is dead-lettered. A delivery lost on the way still comes back after later
    # ones: a handler that needs the log's order checks it (audit, ADR 0041).
    batch: int = 1
    batch_handler: BatchHandler | None = None

    def config(self) -> ConsumerConfig:
        return ConsumerConfig(
            durable_name=self.durable,
            filter_subjects=self.filter_subjects or None,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=self.ack_wait,
            max_deliver=self.max_deliver,
            max_ack_pending=self.max_ack_pending,
        )


def backoff(num_delivered: int, cap: float) -> float:
    return min(0.25 * 2 ** max(num_delivered - 1, 0), cap)


def delivery_of(msg: Msg) -> Delivery:
    meta = msg.metadata
    return Delivery(
        stream_seq=meta.sequence.stream,
        num_delivered=meta.num_delivered,
        subject=msg.subject,
        data=msg.data,
        headers=dict(msg.headers or {}),
    )
