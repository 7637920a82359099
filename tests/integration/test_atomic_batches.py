"""A run's events stored as atomic batches on a real nats-server: in order, once, and
nothing lost when a batch is sent again or refused (services/runtime/service/atomic_batches.py,
ADR 0069)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import msgspec
import pytest

from contracts import subjects
from contracts.events import RunRequested, decode_event
from services.runtime.nats.atomic import BatchRefused, BatchUnanswered, check_commit
from services.runtime.nats.kv import KvKeyInvalid, TypedKv
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.server.nats_setup import prepare_streams
from services.runtime.service.atomic_batches import AtomicPipeline
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


async def test_flush_when_the_operations_are_over_stores_the_events_without_waiting(
    bus: Bus,
) -> None:
    pipeline = AtomicPipeline(bus.js, bus.nc, bus.prefix, linger=60.0)
    for event in events(0, 3):
        await pipeline.send(event)
    pipeline.flush()  # no settle and no linger: they go now
    for _ in range(100):
        if len(await stored(bus)) == 3:
            break
        await asyncio.sleep(0.02)
    assert [event_id for event_id, _ in await stored(bus)] == ["e0000", "e0001", "e0002"]
    await send_all(pipeline, events(3, 1))  # the result, after them
    assert [event_id for event_id, _ in await stored(bus)][-1] == "e0003"


def test_check_commit_when_the_server_refused_the_batch_names_its_code() -> None:
    reply = b'{"error":{"code":400,"err_code":10201,"description":"duplicate"},"stream":"S"}'
    with pytest.raises(BatchRefused) as refused:
        check_commit(reply, 3, "S")
    assert refused.value.code == 10201
    with pytest.raises(BatchRefused, match="expected 3 messages"):
        check_commit(b'{"stream":"S","seq":9,"count":2}', 3, "S")
    with pytest.raises(BatchRefused, match="unreadable"):
        check_commit(b"<html>", 3, "S")


async def kv_log(bus: Bus, bucket: str) -> list[tuple[str, dict[str, str]]]:
    stream = f"KV_{bucket}"
    state = (await bus.js.stream_info(stream)).state
    out = []
    for seq in range(state.first_seq, state.last_seq + 1):  # a key's last value only
        msg = await bus.js.get_msg(stream, seq)
        out.append((msg.subject, dict(msg.headers or {})))
    return out


@pytest.mark.parametrize("atomic", [True, False])
async def test_put_many_when_the_bucket_does_or_does_not_take_batches_writes_each_key_in_order(
    bus: Bus, atomic: bool
) -> None:
    table = TypedKv(bus.js, bus.prefix, "journal", dict[str, int])
    await table.put("k00", {"n": -1})  # makes the bucket, as a first use does
    stream = f"KV_{table.bucket}"
    config = (await bus.js.stream_info(stream)).config
    await bus.js.update_stream(config.evolve(allow_atomic=atomic))
    await table.put_many([(f"k{i:02d}", {"n": i}) for i in range(12)], bus.nc)
    for i in range(12):
        found = await table.get(f"k{i:02d}")
        assert found is not None and found.value == {"n": i}
    written = await kv_log(bus, table.bucket)
    assert [subject.rsplit(".", 1)[-1] for subject, _ in written] == [
        f"k{i:02d}" for i in range(12)
    ]
    batches = {headers.get("Nats-Batch-Id") for _, headers in written}
    assert (len(batches) == 1 and None not in batches) if atomic else batches == {None}


async def test_put_many_when_a_key_is_invalid_writes_none_of_them(bus: Bus) -> None:
    table = TypedKv(bus.js, bus.prefix, "journal", dict[str, int])
    with pytest.raises(KvKeyInvalid, match="not valid"):
        await table.put_many([("k1", {"n": 1}), ("../etc", {"n": 2}), ("k3", {"n": 3})], bus.nc)
    assert await table.get("k1") is None


async def killed_and_restarted(server: EmbeddedNats, folder: Path, port: int) -> EmbeddedNats:
    """SIGKILL nats-server (no flush, no goodbye) and start it again on the same store."""
    assert server.pid is not None
    os.kill(server.pid, signal.SIGKILL)
    await server.stop()
    again = EmbeddedNats(folder, port=port)
    await again.start()
    return again


async def until_connected(bus: Bus) -> None:
    for _ in range(200):
        if bus.nc.is_connected:
            try:
                await bus.js.stream_info(subjects.stream_name(bus.prefix))
                return
            except Exception:  # noqa: BLE001 - JetStream still recovering its streams
                pass
        await asyncio.sleep(0.05)
    raise AssertionError("the client did not reconnect to the restarted server")


async def test_batch_when_nats_server_is_killed_mid_batch_stores_none_of_it_then_all_once(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "nats"
    server = EmbeddedNats(folder)
    url = await server.start()
    bus = await Bus.open(url, "bmtest", "test")
    try:
        batch = events(0, 12)
        # The first half of a batch reaches the server; it dies before the commit.
        for seq, event in enumerate(batch[:6], start=1):
            headers = {
                "Nats-Msg-Id": event.event_id,
                "Nats-Batch-Id": "cut",
                "Nats-Batch-Sequence": str(seq),
            }
            await bus.nc.publish(
                subjects.for_event(bus.prefix, event), msgspec.json.encode(event), headers=headers
            )
        await bus.nc.flush()
        server = await killed_and_restarted(server, folder, int(url.rsplit(":", 1)[1]))
        await until_connected(bus)
        assert await stored(bus) == []  # nothing of an uncommitted batch
        await send_all(AtomicPipeline(bus.js, bus.nc, bus.prefix), batch)  # the retry
        # Acknowledged, then the server dies at once: the whole batch is on disk.
        server = await killed_and_restarted(server, folder, int(url.rsplit(":", 1)[1]))
        await until_connected(bus)
        await send_all(AtomicPipeline(bus.js, bus.nc, bus.prefix), batch)  # sent once more
        assert [event_id for event_id, _ in await stored(bus)] == [e.event_id for e in batch]
    finally:
        await bus.close()
        await server.stop()


async def test_prepare_streams_when_an_older_mesh_made_the_logs_turns_atomic_batches_on(
    nats_url: str,
) -> None:
    bus = await Bus.open(nats_url, "bmold", "test")
    try:
        await prepare_streams(nats_url, "bmold", None)
        logs = [
            subjects.stream_name("bmold"),
            subjects.audit_stream_name("bmold"),
            "KV_bmold_journal",
        ]
        for name in logs:  # as an older blendmesh left them
            config = (await bus.js.stream_info(name)).config
            await bus.js.update_stream(config.evolve(allow_atomic=False))
        await bus.publisher.publish(events(0, 1)[0])
        await prepare_streams(nats_url, "bmold", None)  # the admin, at the next start
        for name in logs:
            assert (await bus.js.stream_info(name)).config.allow_atomic, name
        assert [event_id for event_id, _ in await stored(bus)] == ["e0000"]  # kept
    finally:
        await bus.close()


async def test_settle_when_no_stream_takes_the_batch_says_so_and_sends_nothing_after(
    bus: Bus,
) -> None:
    pipeline = AtomicPipeline(bus.js, bus.nc, "bmnolog", linger=0.01)  # no such log
    for event in events(0, 6):
        await pipeline.send(event)
    await asyncio.sleep(0.1)  # that flush fails on its own; the next waits behind it
    for event in events(6, 6):
        await pipeline.send(event)
    with pytest.raises(BatchUnanswered, match="nothing of it was stored"):
        await pipeline.settle()
    assert await stored(bus) == []
