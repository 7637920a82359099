"""A consumer loop whose handler's writes the store refuses says so in its service's STATS
(``ConsumerLoop.problem``), for as long as it does: a followed run that stops on a full
store is explained, not just slow (services/runtime/service/consumer.py)."""

from __future__ import annotations

import asyncio
import errno
import sqlite3
import time
from typing import Any

import msgspec
from nats.aio.msg import Msg
from nats.js.errors import ServiceUnavailableError

from contracts.events import AnyEvent, Event
from services.runtime.nats.retry import poll
from services.runtime.service.consumer import ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery
from services.runtime.service.host import ConsumerService
from tests.unit.test_handlers import requested

FULL = ServiceUnavailableError(code=503, err_code=10023, description="insufficient resources")


class Client:
    """Where a message's ack and nak go: remembered, never sent."""

    def __init__(self) -> None:
        self.settled: list[tuple[str, bytes]] = []

    async def publish(self, subject: str, payload: bytes = b"", **_: Any) -> None:
        self.settled.append((subject, payload))

    async def request(self, subject: str, payload: bytes = b"", **_: Any) -> Msg:
        self.settled.append((subject, b"+ACK"))
        return Msg(self)  # type: ignore[arg-type]


def delivered(client: Client, seq: int) -> Msg:
    reply = f"$JS.ACK.S.executor.1.{seq}.{seq}.1700000000000000000.0"
    event = requested()
    return Msg(client, "bm.run.r.requested", reply, msgspec.json.encode(event))  # type: ignore[arg-type]


class Handler:
    """Fails with each of ``outcomes`` in turn, then succeeds; notes what its loop says of
    itself at each call."""

    def __init__(self, *outcomes: BaseException) -> None:
        self.outcomes = list(outcomes)
        self.loop: ConsumerLoop | None = None
        self.said: list[str | None] = []

    async def __call__(self, event: AnyEvent, delivery: Delivery) -> list[Event]:
        assert self.loop is not None
        self.said.append(self.loop.problem())
        if self.outcomes:
            raise self.outcomes.pop(0)
        return []


def loop_of(handler: Handler, now: list[float]) -> ConsumerLoop:
    spec = ConsumerSpec(durable="executor", filter_subjects=["bm.run.*.requested"],
                        handler=handler, backoff_cap=0.01)  # fmt: skip
    loop = ConsumerLoop(None, None, "bm", spec, clock=lambda: now[0])  # type: ignore[arg-type]
    handler.loop = loop
    return loop


async def test_loop_when_storage_refuses_writes_tries_again_in_place_saying_so() -> None:
    """No delivery is spent waiting for room: a disk full for longer than max_deliver
    deliveries must not dead-letter work that only waits for space."""
    raised_from = RuntimeError("the run could not record its step")
    raised_from.__cause__ = FULL  # refused deep in the handler, raised as something else
    disk_full = sqlite3.OperationalError("database or disk is full")
    no_space = OSError(errno.ENOSPC, "No space left on device")
    now, client = [100.0], Client()
    handler = Handler(FULL, raised_from, disk_full, no_space, FULL, FULL, FULL)
    loop = loop_of(handler, now)
    service = ConsumerService("executor", loops=[loop])
    assert loop.problem() is None
    await loop.process(delivered(client, 1))
    assert len(handler.said) == 8 and handler.said[0] is None
    for said in handler.said[1:]:
        assert said is not None and said.startswith("its writes are refused for 0 s"), said
        assert "store or the disk is full" in said and "Free disk space" in said, said
    assert client.settled == [("$JS.ACK.S.executor.1.1.1.1700000000000000000.0", b"+ACK")]
    assert loop.problem() is None and service.problems() == []  # handled: room again


async def test_loop_when_refused_for_a_while_says_for_how_long() -> None:
    now, client = [100.0], Client()

    class Slow(Handler):
        async def __call__(self, event: AnyEvent, delivery: Delivery) -> list[Event]:
            now[0] += 4.0  # each attempt takes 4 s
            return await super().__call__(event, delivery)

    handler = Slow(FULL, FULL)
    loop = loop_of(handler, now)
    await loop.process(delivered(client, 1))
    assert [said and said.split(":")[0] for said in handler.said] == [
        None,
        "its writes are refused for 4 s",  # refused first at 104, asked again at 108
        "its writes are refused for 8 s",
    ]
    assert loop.problem() is None


async def test_loop_when_stopping_while_refused_gives_the_message_back() -> None:
    now, client = [0.0], Client()
    handler = Handler(FULL)
    loop = loop_of(handler, now)
    await loop.stop()  # stop() waits for the message in hand: it must not wait for room
    await loop.process(delivered(client, 1))
    assert [payload[:4] for _, payload in client.settled] == [b"-NAK"]
    assert loop.problem() is not None


async def test_loop_when_stopped_while_waiting_for_room_gives_the_message_back_at_once() -> None:
    now, client = [0.0], Client()
    handler = Handler(*[FULL] * 50)
    spec = ConsumerSpec(durable="audit", filter_subjects=["bm.run.>"], handler=handler,
                        backoff_cap=60.0)  # fmt: skip
    loop = ConsumerLoop(None, None, "bm", spec, clock=lambda: now[0])  # type: ignore[arg-type]
    handler.loop = loop
    processing = asyncio.ensure_future(loop.process(delivered(client, 1)))

    async def calls() -> int:
        return len(handler.said)

    await poll(calls, lambda n: n >= 4, 5.0, pause=0.05)  # then it waits 2 s for room
    started = time.monotonic()
    await loop.stop()
    await asyncio.wait_for(processing, 1.0)
    assert time.monotonic() - started < 0.5
    assert len(handler.said) == 4 and [p[:4] for _, p in client.settled] == [b"-NAK"]


async def test_loop_when_room_does_not_come_within_its_patience_naks_as_any_failure() -> None:
    """A write too big for what is left never fits: after ``room_patience`` it fails as
    before, and its deliveries run out."""
    now, client = [0.0], Client()
    handler = Handler(*[FULL] * 50)
    spec = ConsumerSpec(durable="audit", filter_subjects=["bm.run.>"], handler=handler,
                        backoff_cap=0.01, room_patience=0.1)  # fmt: skip
    loop = ConsumerLoop(None, None, "bm", spec, clock=lambda: now[0])  # type: ignore[arg-type]
    handler.loop = loop
    await asyncio.wait_for(loop.process(delivered(client, 1)), 5.0)
    assert 2 <= len(handler.said) < 50
    assert [p[:4] for _, p in client.settled] == [b"-NAK"]


async def test_loop_when_waiting_for_room_keeps_its_message_in_progress() -> None:
    """JetStream must not deliver it elsewhere meanwhile: past ``ack_wait`` it would."""
    now, client = [0.0], Client()
    handler = Handler(*[FULL] * 6)  # 0.25 + 0.25 + ... s of waiting, past ack_wait
    spec = ConsumerSpec(durable="audit", filter_subjects=["bm.run.>"], handler=handler,
                        backoff_cap=0.25, ack_wait=0.3)  # fmt: skip
    loop = ConsumerLoop(None, None, "bm", spec, clock=lambda: now[0])  # type: ignore[arg-type]
    handler.loop = loop
    await asyncio.wait_for(loop.process(delivered(client, 1)), 5.0)
    payloads = [p[:4] for _, p in client.settled]
    assert b"+WPI" in payloads and payloads[-1] == b"+ACK", payloads


async def test_loop_when_a_handler_fails_otherwise_naks_and_reports_no_room_problem() -> None:
    now, client = [0.0], Client()
    loop = loop_of(Handler(TimeoutError("slow")), now)
    await loop.process(delivered(client, 1))
    assert [payload[:4] for _, payload in client.settled] == [b"-NAK"]
    assert loop.problem() is None


async def test_loop_when_the_log_has_no_leader_waits_in_place_saying_so() -> None:
    """A server died and its streams elect new leaders: the handler's publishes fail for
    seconds. Spending a delivery on each would dead-letter the run's next step (the dead
    letter refused too, and the server stops delivering at max_deliver): the run would
    never end."""
    from nats.errors import NoRespondersError

    from services.runtime.nats.atomic import BatchUnanswered
    from services.runtime.nats.quorum import JetStreamUnavailable

    unstored = JetStreamUnavailable("JetStream did not store the event in BM_EVENTS in time")
    wrapped = RuntimeError("could not announce the step")
    wrapped.__context__ = NoRespondersError()
    no_leader = ServiceUnavailableError(code=503, description="no responders")
    now, client = [100.0], Client()
    handler = Handler(unstored, wrapped, BatchUnanswered("no stream took it"), no_leader, unstored)
    loop = loop_of(handler, now)
    await loop.process(delivered(client, 1))
    assert len(handler.said) == 6 and handler.said[0] is None
    for said in handler.said[1:]:
        assert said is not None and said.startswith("JetStream has stored none"), said
        assert "no leader" in said and "blendmesh status" in said, said
    assert client.settled == [("$JS.ACK.S.executor.1.1.1.1700000000000000000.0", b"+ACK")]
    assert loop.problem() is None


async def test_loop_when_full_after_leaderless_says_the_store_is_full() -> None:
    from services.runtime.nats.quorum import JetStreamUnavailable

    now, client = [0.0], Client()
    handler = Handler(JetStreamUnavailable("not stored in time"), FULL)
    loop = loop_of(handler, now)
    await loop.process(delivered(client, 1))
    assert handler.said[1] is not None and handler.said[1].startswith("JetStream has stored")
    assert handler.said[2] is not None and handler.said[2].startswith("its writes are refused")
