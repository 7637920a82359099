"""A run's events stored as atomic batches on a real nats-server: in order, once, and
nothing lost when a batch is sent again or refused (services/runtime/service/atomic_batches.py,
ADR 0069)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from contracts import subjects
from contracts.events import RunRequested, decode_event
from services.runtime.service.atomic_batches import AtomicPipeline, BatchRefused, check_commit
from services.runtime.service.errors import EventTooLarge
from services.runtime.service.host import Bus
from tests.unit.test_handlers import requested


def events(first: int, count: int) -> list[RunRequested]:
    base = requested()
    ids = range(first, first + count)
    return [msgspec.structs.replace(base, event_id=f"e{i:04d}") for i in ids]


async def stored(bus: Bus) -> list[tuple[str, dict[str, str]]]:
    """Every event of the log, in order: its id and its headers."""
    stream = subjects.stream_name(bus.prefix)
    last = (await bus.js.stream_info(stream)).state.last_seq
    out = []
    for seq in range(1, last + 1):
        msg = await bus.js.get_msg(stream, seq)
        out.append((decode_event(msg.data).event_id, dict(msg.headers or {})))
    return out


async def send_all(pipeline: AtomicPipeline, batch: list[RunRequested]) -> None:
    for event in batch:
        await pipeline.send(event)
    await pipeline.settle()


async def test_settle_when_a_run_sent_many_events_stores_them_in_order_as_one_batch(
    bus: Bus,
) -> None:
    await send_all(AtomicPipeline(bus.js, bus.nc, bus.prefix), events(0, 30))
    log = await stored(bus)
    assert [event_id for event_id, _ in log] == [f"e{i:04d}" for i in range(30)]
    assert len({headers.get("Nats-Batch-Id") for _, headers in log}) == 1
    assert log[-1][1].get("Nats-Batch-Commit") == "1"


async def test_settle_when_few_events_stores_them_one_by_one(bus: Bus) -> None:
    await send_all(AtomicPipeline(bus.js, bus.nc, bus.prefix), events(0, 3))
    log = await stored(bus)
    assert [event_id for event_id, _ in log] == ["e0000", "e0001", "e0002"]
    assert all("Nats-Batch-Id" not in headers for _, headers in log)


async def test_settle_when_the_same_batch_is_sent_again_stores_nothing_twice(bus: Bus) -> None:
    await send_all(AtomicPipeline(bus.js, bus.nc, bus.prefix), events(0, 10))
    # The handler's message delivered again: the same events, the same ids, and more.
    await send_all(AtomicPipeline(bus.js, bus.nc, bus.prefix), events(0, 10))
    await send_all(AtomicPipeline(bus.js, bus.nc, bus.prefix), events(0, 14))
    log = await stored(bus)
    assert [event_id for event_id, _ in log] == [f"e{i:04d}" for i in range(14)]


async def test_settle_when_the_log_takes_no_atomic_batches_stores_each_event_once(
    bus: Bus,
) -> None:
    stream = subjects.stream_name(bus.prefix)
    config = (await bus.js.stream_info(stream)).config
    await bus.js.update_stream(config.evolve(allow_atomic=False))  # an older mesh's log
    await send_all(AtomicPipeline(bus.js, bus.nc, bus.prefix), events(0, 8))
    log = await stored(bus)
    assert [event_id for event_id, _ in log] == [f"e{i:04d}" for i in range(8)]


async def test_send_when_events_wait_longer_than_the_linger_stores_them_before_settle(
    bus: Bus,
) -> None:
    pipeline = AtomicPipeline(bus.js, bus.nc, bus.prefix, linger=0.05)
    for event in events(0, 6):
        await pipeline.send(event)
    for _ in range(100):  # a long operation's progress shows while it runs
        if len(await stored(bus)) == 6:
            break
        await asyncio.sleep(0.05)
    assert len(await stored(bus)) == 6
    await pipeline.settle()
    assert len(await stored(bus)) == 6


async def test_send_when_more_than_a_batch_holds_splits_them_in_order(bus: Bus) -> None:
    await send_all(AtomicPipeline(bus.js, bus.nc, bus.prefix), events(0, 1005))
    log = await stored(bus)
    assert [event_id for event_id, _ in log] == [f"e{i:04d}" for i in range(1005)]
    assert len({headers.get("Nats-Batch-Id") for _, headers in log}) == 2


async def test_send_when_an_event_is_too_large_refuses_it_before_nats(bus: Bus) -> None:
    pipeline = AtomicPipeline(bus.js, bus.nc, bus.prefix)
    with pytest.raises(EventTooLarge):
        await pipeline.send(requested(prompt="x" * 2_000_000))
    await pipeline.settle()
    assert await stored(bus) == []


def test_check_commit_when_the_server_refused_the_batch_names_its_code() -> None:
    reply = b'{"error":{"code":400,"err_code":10201,"description":"duplicate"},"stream":"S"}'
    with pytest.raises(BatchRefused) as refused:
        check_commit(reply, 3, "S")
    assert refused.value.code == 10201
    with pytest.raises(BatchRefused, match="expected 3 messages"):
        check_commit(b'{"stream":"S","seq":9,"count":2}', 3, "S")
    with pytest.raises(BatchRefused, match="unreadable"):
        check_commit(b"<html>", 3, "S")
