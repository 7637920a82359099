"""One event must fit in one NATS message, and no message may crash its decoder (A, E).

An event over the limit is refused before it is published, with a message that names its
size, the limit and what to do; a handler that produces one is dead-lettered at once
instead of being retried. JSON nested thousands deep is a decode error, never a
RecursionError that would leave its message redelivered for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec
import pytest

from contracts import subjects
from contracts.events import AnyEvent, DeadLettered, Event, RunRequested, decode_event
from contracts.limits import MAX_EVENT_BYTES, LimitExceeded
from contracts.operations import decode_operation_set
from services.doors.core.client import MeshClient
from services.runtime.nats.history import read_run
from services.runtime.service.consumer import ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery
from services.runtime.service.errors import EventTooLarge, Reject
from services.runtime.service.host import Bus
from services.runtime.service.limits import encode_bounded

DEEP = b"[" * 5000 + b"]" * 5000
DEEP_EVENT = b'{"type": "run.requested", "plan": ' + DEEP + b"}"


def requested(run_id: str = "run-big", prompt: str = "add a cube") -> RunRequested:
    return RunRequested(
        event_id=f"e-{run_id}",
        at=1.0,
        run_id=run_id,
        request_id="req",
        thread_id="t",
        user="u",
        scene_id="s",
        prompt=prompt,
    )


def test_encode_bounded_when_under_limit_returns_the_encoding() -> None:
    event = requested()
    assert decode_event(encode_bounded(event)) == event


def test_encode_bounded_when_over_limit_raises_naming_size_and_limit() -> None:
    with pytest.raises(EventTooLarge) as info:
        encode_bounded(requested(prompt="x" * 2000), limit=1000)
    message = str(info.value)
    assert "run.requested" in message and "run-big" in message
    assert "1,000-byte limit" in message and "not published" in message
    assert "BLENDMESH_MAX_OPERATIONS" in message


def test_event_too_large_is_permanent_and_a_limit() -> None:
    assert issubclass(EventTooLarge, Reject) and issubclass(EventTooLarge, LimitExceeded)


def test_decode_event_when_nested_5000_deep_raises_decode_error() -> None:
    with pytest.raises(msgspec.DecodeError, match="nested"):
        decode_event(DEEP_EVENT)


def test_decode_operation_set_when_nested_5000_deep_raises_decode_error() -> None:
    with pytest.raises(msgspec.DecodeError, match="nested"):
        decode_operation_set(
            b'{"request_id": "r", "operations": [{"operation_id": "a", "tool_name": "t", '
            b'"args": {"x": ' + DEEP + b'}, "depends_on": [], "safety_level": "read_only"}]}'
        )


# What a refused publish says: which event, how big, and the limit it is over.
OVER_LIMIT = (
    rf"event run\.requested of run run-big is [\d,]+ bytes, over the {MAX_EVENT_BYTES:,}-byte"
)


@pytest.mark.integration
async def test_publish_when_event_over_limit_refuses_before_publishing(bus: Bus) -> None:
    with pytest.raises(EventTooLarge, match=OVER_LIMIT):
        await bus.publisher.publish(requested(prompt="x" * (MAX_EVENT_BYTES + 1)))
    assert await read_run(bus.js, "bmtest", "run-big") == []


@pytest.mark.integration
async def test_client_run_when_the_request_is_over_limit_leaves_no_follower(bus: Bus) -> None:
    """The client sets up its follower while it publishes: a refused request must not
    leave it listening (the server then drops the ephemeral consumer on its own)."""
    stream = subjects.stream_name("bmtest")
    with pytest.raises(EventTooLarge, match=OVER_LIMIT):
        await MeshClient(bus).run(requested(prompt="x" * (MAX_EVENT_BYTES + 1)), timeout=5)
    for _ in range(50):
        if not any(c.push_bound for c in await bus.js.consumers_info(stream)):
            break
        await asyncio.sleep(0.05)
    assert not any(c.push_bound for c in await bus.js.consumers_info(stream))


async def _dead_letter(bus: Bus) -> DeadLettered:
    sub = await bus.js.subscribe("bmtest.deadletter.>", ordered_consumer=True)
    try:
        msg = await sub.next_msg(timeout=10)
    finally:
        await sub.unsubscribe()
    letter = decode_event(msg.data)
    assert isinstance(letter, DeadLettered)
    return letter


@pytest.mark.integration
async def test_consumer_when_handler_output_too_large_dead_letters_at_once(bus: Bus) -> None:
    calls: list[int] = []

    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        calls.append(delivery.num_delivered)
        return [requested("run-out", prompt="x" * (MAX_EVENT_BYTES + 1))]

    spec = ConsumerSpec(
        durable="big",
        filter_subjects=[subjects.any_run("bmtest", "requested")],
        handler=handler,
        ack_wait=2,
    )
    loop = ConsumerLoop(bus.js, bus.publisher, "bmtest", spec)
    await loop.start()
    try:
        await bus.publisher.publish(requested("run-in"))
        letter = await _dead_letter(bus)
    finally:
        await loop.stop()
    assert calls == [1] and letter.deliveries == 1
    assert "byte limit" in letter.reason


@pytest.mark.integration
async def test_consumer_when_message_nested_5000_deep_dead_letters_it(bus: Bus) -> None:
    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        return []

    spec = ConsumerSpec(
        durable="deep",
        filter_subjects=[subjects.any_run("bmtest", "requested")],
        handler=handler,
        ack_wait=2,
    )
    loop = ConsumerLoop(bus.js, bus.publisher, "bmtest", spec)
    await loop.start()
    try:
        await bus.js.publish("bmtest.run.deep.requested", DEEP_EVENT)
        letter = await asyncio.wait_for(_dead_letter(bus), 15)
    finally:
        await loop.stop()
    assert letter.reason.startswith("undecodable") and "nested" in letter.reason
