"""The runtime against a real nats-server: immutable log, dedup, the consumer loop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import StorageType
from nats.js.errors import APIError

from contracts import subjects
from contracts.events import AnyEvent, DeadLettered, Event, RunFailed, RunRequested
from contracts.failures import failure
from services.runtime.nats.bus import connect
from services.runtime.nats.history import read_run
from services.runtime.service.consumer import ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery, Handler
from services.runtime.service.errors import Reject, Retry
from services.runtime.service.host import Bus
from tests.support.clusters import free_ports

pytestmark = pytest.mark.integration


def requested(run_id: str = "run1", event_id: str = "e1") -> RunRequested:
    return RunRequested(
        event_id=event_id,
        at=1.0,
        run_id=run_id,
        request_id="req",
        thread_id="t",
        user="u",
        scene_id="s",
        prompt="add a cube",
    )


async def test_event_log_when_created_is_immutable_file_storage(bus: Bus) -> None:
    info = await bus.js.stream_info(subjects.stream_name("bmtest"))
    assert info.config.deny_delete and info.config.deny_purge
    assert info.config.storage in ("file", StorageType.FILE)
    assert info.config.duplicate_window == 120.0
    with pytest.raises(APIError):
        await bus.js.purge_stream(subjects.stream_name("bmtest"))


async def test_publish_when_same_event_twice_stores_it_once(bus: Bus) -> None:
    first = await bus.publisher.publish(requested())
    second = await bus.publisher.publish(requested())
    assert first == second
    events = await read_run(bus.js, "bmtest", "run1")
    assert [e.event_id for e in events] == ["e1"]


async def test_read_run_when_no_events_returns_empty(bus: Bus) -> None:
    assert await read_run(bus.js, "bmtest", "nothing") == []


async def _loop(bus: Bus, handler: Handler, **kw: Any) -> ConsumerLoop:
    spec = ConsumerSpec(
        durable=kw.pop("durable", "t1"),
        filter_subjects=[subjects.any_run("bmtest", "requested")],
        handler=handler,
        ack_wait=2,
        **kw,
    )
    loop = ConsumerLoop(bus.js, bus.publisher, "bmtest", spec)
    await loop.start()
    return loop


async def _wait_for(bus: Bus, run_id: str, kind: str, timeout: float = 10) -> list[AnyEvent]:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        events = await read_run(bus.js, "bmtest", run_id)
        if any(
            getattr(e, "type", None) == kind or type(e).__struct_config__.tag == kind
            for e in events
        ):
            return events
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {kind} event for {run_id}")


async def _dead_letters(bus: Bus) -> list[DeadLettered]:
    sub = await bus.js.subscribe("bmtest.deadletter.>", ordered_consumer=True)
    out: list[DeadLettered] = []
    try:
        while True:
            msg = await sub.next_msg(timeout=3)
            from contracts.events import decode_event

            ev = decode_event(msg.data)
            assert isinstance(ev, DeadLettered)
            out.append(ev)
            if msg.metadata.num_pending == 0:
                return out
    finally:
        await sub.unsubscribe()


async def test_consumer_when_handler_returns_events_publishes_then_acks(bus: Bus) -> None:
    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        assert isinstance(event, RunRequested)
        return [
            RunFailed(
                event_id="f1",
                at=2.0,
                run_id=event.run_id,
                request_id="req",
                thread_id="t",
                user="u",
                causation_id=event.event_id,
                failure=failure("INTERNAL_ERROR", "x"),
                message="m",
            )
        ]

    loop = await _loop(bus, handler)
    await bus.publisher.publish(requested())
    events = await _wait_for(bus, "run1", "run.failed")
    await loop.stop()
    assert [type(e).__name__ for e in events] == ["RunRequested", "RunFailed"]
    info = await bus.js.consumer_info(subjects.stream_name("bmtest"), "t1")
    assert info.num_ack_pending == 0 and info.num_pending == 0


async def test_consumer_when_retry_then_success_redelivers(bus: Bus) -> None:
    calls: list[int] = []

    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        calls.append(delivery.num_delivered)
        if delivery.num_delivered < 3:
            raise Retry("not yet", delay=0.05)
        return []

    loop = await _loop(bus, handler)
    await bus.publisher.publish(requested())
    for _ in range(100):
        if len(calls) >= 3:
            break
        await asyncio.sleep(0.05)
    await loop.stop()
    assert calls == [1, 2, 3]


async def test_consumer_when_max_deliver_exhausted_dead_letters(bus: Bus) -> None:
    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        raise RuntimeError("boom")

    loop = await _loop(bus, handler, max_deliver=2, backoff_cap=0.05)
    await bus.publisher.publish(requested())
    letters: list[DeadLettered] = []
    for _ in range(60):
        await asyncio.sleep(0.1)
        info = await bus.js.stream_info(subjects.stream_name("bmtest"))
        if info.state.messages >= 2:
            letters = await _dead_letters(bus)
            break
    await loop.stop()
    assert len(letters) == 1
    assert letters[0].deliveries == 2 and "boom" in letters[0].reason
    assert letters[0].subject == "bmtest.run.run1.requested"


async def test_consumer_when_message_malformed_dead_letters_and_continues(bus: Bus) -> None:
    seen: list[str] = []

    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        seen.append(event.event_id)
        return []

    loop = await _loop(bus, handler)
    await bus.js.publish("bmtest.run.bad.requested", b"{not json")
    await bus.publisher.publish(requested("run2", "e2"))
    for _ in range(60):
        if seen:
            break
        await asyncio.sleep(0.05)
    letters = await _dead_letters(bus)
    await loop.stop()
    assert seen == ["e2"]
    assert len(letters) == 1 and letters[0].reason.startswith("undecodable")
    assert letters[0].payload == "{not json"


async def test_consumer_when_reject_dead_letters_without_retry(bus: Bus) -> None:
    calls: list[int] = []

    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        calls.append(1)
        raise Reject("impossible")

    loop = await _loop(bus, handler)
    await bus.publisher.publish(requested())
    letters: list[DeadLettered] = []
    for _ in range(60):
        await asyncio.sleep(0.05)
        info = await bus.js.stream_info(subjects.stream_name("bmtest"))
        if info.state.messages >= 2:
            letters = await _dead_letters(bus)
            break
    await loop.stop()
    assert calls == [1]
    assert letters and letters[0].reason == "rejected: impossible"


async def test_consumer_when_ack_reply_is_lost_keeps_consuming_and_redelivers(
    bus: Bus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lost ack confirmation must not end the loop: the message returns after ack_wait."""
    real_ack_sync = Msg.ack_sync
    lost: list[int] = []

    async def flaky_ack_sync(msg: Msg, timeout: float = 1.0) -> Msg:
        if not lost:
            lost.append(msg.metadata.sequence.stream)
            raise NatsTimeoutError
        return await real_ack_sync(msg, timeout=timeout)

    monkeypatch.setattr(Msg, "ack_sync", flaky_ack_sync)
    seen: list[tuple[str, int]] = []

    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        seen.append((event.event_id, delivery.num_delivered))
        return []

    loop = await _loop(bus, handler)
    await bus.publisher.publish(requested("run1", "e1"))
    await bus.publisher.publish(requested("run2", "e2"))
    for _ in range(100):
        if ("e1", 2) in seen:
            break
        await asyncio.sleep(0.1)
    await loop.stop()
    assert seen == [("e1", 1), ("e2", 1), ("e1", 2)]
    info = await bus.js.consumer_info(subjects.stream_name("bmtest"), "t1")
    assert info.num_ack_pending == 0 and info.num_pending == 0


async def test_event_log_when_older_subject_set_is_widened_in_place(nats_url: str) -> None:
    from nats.js.api import StreamConfig

    from services.runtime.nats.bus import connect
    from services.runtime.nats.streams import ensure_event_log

    nc = await connect(nats_url, "old")
    js = nc.jetstream()
    name = subjects.stream_name("bmold")
    await js.add_stream(
        StreamConfig(name=name, subjects=["bmold.run.>"], deny_delete=True, deny_purge=True)
    )
    await js.publish("bmold.run.x.requested", b"{}")
    await ensure_event_log(js, "bmold")
    info = await js.stream_info(name)
    assert sorted(info.config.subjects or []) == sorted(subjects.stream_subjects("bmold"))
    assert info.state.messages == 1
    await nc.close()


async def test_connect_when_nothing_listens_gives_up_within_its_wait_saying_so() -> None:
    [port] = free_ports(1)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ConnectionError, match=f"cannot reach NATS at nats://127.0.0.1:{port}"):
        await connect(f"nats://127.0.0.1:{port}", "test-nobody", None, wait=1.0)
    assert loop.time() - started < 5  # nats-py alone would try for two minutes


@pytest.mark.parametrize("which", ["event log", "audit stream"])
async def test_log_when_found_allowing_deletes_is_refused_naming_it(
    nats_url: str, which: str
) -> None:
    from nats.js.api import StreamConfig

    from services.runtime.nats.audit_log import ensure_audit_log
    from services.runtime.nats.bus import connect
    from services.runtime.nats.streams import ensure_event_log

    nc = await connect(nats_url, "old")
    js = nc.jetstream()
    prefix = "bmmut"
    if which == "event log":
        name, filters, ensure = (
            subjects.stream_name(prefix),
            subjects.stream_subjects(prefix),
            ensure_event_log,
        )
    else:
        name, filters = subjects.audit_stream_name(prefix), subjects.audit_stream_subjects(prefix)
        ensure = ensure_audit_log
    # Someone made the stream first, and made it mutable: blendmesh must not log into it.
    await js.add_stream(StreamConfig(name=name, subjects=filters, deny_delete=False))
    try:
        with pytest.raises(RuntimeError, match=f"stream {name} exists but allows delete or purge"):
            await ensure(js, prefix)
    finally:
        await nc.close()
