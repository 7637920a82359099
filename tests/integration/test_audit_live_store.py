"""The live audit store's own guards: one thread hop an event, run views in memory.

Each event is projected, written and committed in one call on the store's worker thread,
building on run views it keeps in a cache. These tests check that the cache never makes
the views differ from reading every run back, that a failed write leaves nothing behind
and is applied once when redelivered (also through a real consumer on a real
nats-server), and that a broken connection says what to do.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts import subjects
from contracts.audit import AuditRecorded
from contracts.events import AnyEvent, RunEvent, decode_event
from services.audit import app as audit_app
from services.audit.client import query_dump
from services.audit.handlers import AuditHandlers, apply_event, projection
from services.audit.projections import Change, RunView
from services.audit.rebuild_store import RebuildStore
from services.audit.store import SqliteStore
from services.runtime.service.consumer_spec import Delivery
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration

HISTORY = Path(__file__).parent.parent / "fixtures" / "run_history_ring.jsonl"
RECORDS = 7  # audit records of the recorded history (tests/unit/audit/test_audit_projections.py)


def history() -> list[AnyEvent]:
    return [decode_event(line.encode()) for line in HISTORY.read_text().splitlines()]


def interleaved(copies: int) -> list[AnyEvent]:
    """``copies`` copies of the history, step by step across the copies."""

    def copy_of(event: AnyEvent, copy: int) -> AnyEvent:
        run_id = f"{event.run_id}-{copy}" if isinstance(event, RunEvent) else None
        changes: dict[str, Any] = {"event_id": f"{event.event_id}-{copy}"}
        return msgspec.structs.replace(event, **changes, **({"run_id": run_id} if run_id else {}))

    return [copy_of(event, copy) for event in history() for copy in range(copies)]


async def dump_after(path: Path, events: list[AnyEvent], cache_rows: int) -> dict[str, Any]:
    store = await SqliteStore.open(path, cache_rows=cache_rows)
    try:
        for seq, event in enumerate(events, start=1):
            await apply_event(store, event, seq)
        return await store.dump()
    finally:
        await store.close()


async def test_live_store_when_runs_outgrow_the_cache_equals_reading_every_run_back(
    tmp_path: Path,
) -> None:
    events = interleaved(6)
    # No cache: every event reads its run back, as the store did before it had one.
    uncached = await dump_after(tmp_path / "none.db", events, cache_rows=0)
    assert uncached == await dump_after(tmp_path / "small.db", events, cache_rows=10)
    assert uncached == await dump_after(tmp_path / "all.db", events, cache_rows=10_000)
    assert len(uncached["runs"]) == 12 and len(uncached["audit_records"]) == 6 * RECORDS


async def test_live_store_when_a_write_fails_rolls_back_and_applies_once_when_redelivered(
    tmp_path: Path,
) -> None:
    events = history()[:4]
    store = await SqliteStore.open(tmp_path / "a.db")
    try:
        for seq, event in enumerate(events[:3], start=1):
            await apply_event(store, event, seq)
        before = await store.dump()
        run_id, good = projection(events[3], 4)

        def bad(view: RunView) -> list[Change]:
            # The run's row is written and cached before the bad row fails.
            run = {**(view.run or {}), "prompt": "never committed"}
            return [*good(view), Change("runs", run, replace=True), Change("timeline", {"x": 1})]

        with pytest.raises(ValueError, match=r"the timeline view has no columns \['x'\]"):
            await store.apply(4, run_id, bad)
        assert await store.dump() == before
        applied = await apply_event(store, events[3], 4)  # the redelivery
        assert applied.new
        assert not (await apply_event(store, events[3], 4)).new
        expected = await dump_after(tmp_path / "clean.db", events, cache_rows=0)
        assert await store.dump() == expected
    finally:
        await store.close()


async def test_live_store_when_another_connection_holds_the_lock_fails_then_applies_once(
    tmp_path: Path,
) -> None:
    path, event = tmp_path / "a.db", history()[0]
    store = await SqliteStore.open(path, busy_timeout=0.1)
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            await apply_event(store, event, 1)
        blocker.execute("ROLLBACK")
        assert (await apply_event(store, event, 1)).new
        assert not (await apply_event(store, event, 1)).new
        assert (await store.dump())["tracking"] == [{"last_seq": 1}]
    finally:
        blocker.close()
        await store.close()


async def test_live_store_when_another_connection_wrote_the_file_reads_runs_back(
    tmp_path: Path,
) -> None:
    path, events = tmp_path / "a.db", history()
    store = await SqliteStore.open(path)
    try:
        await apply_event(store, events[0], 1)  # the run is cached now
        with sqlite3.connect(path) as other:
            other.execute("UPDATE runs SET prompt = 'changed by hand'")
        seen: list[RunView] = []
        await store.apply(2, events[0].run_id, lambda view: seen.append(view) or [])
        assert seen[0].run is not None and seen[0].run["prompt"] == "changed by hand"
    finally:
        await store.close()


async def test_swap_in_when_the_new_file_differs_builds_on_its_rows_not_the_cache(
    tmp_path: Path,
) -> None:
    row = {"run_id": "r", "prompt": "live"}
    live = await SqliteStore.open(tmp_path / "live.db")
    fresh = await RebuildStore.open(tmp_path / "live.db.rebuild")
    try:
        await live.apply(1, "r", lambda _view: [Change("runs", row, replace=True)])
        rebuilt = {**row, "prompt": "rebuilt"}
        await fresh.apply_many([(1, "r", lambda _view: [Change("runs", rebuilt, replace=True)])])

        async def caught_up(store: RebuildStore, seq: int) -> None:
            assert seq == 1

        await live.swap_in(fresh, caught_up)
        seen: list[RunView] = []
        await live.apply(2, "r", lambda view: seen.append(view) or [])
        assert seen[0].run is not None and seen[0].run["prompt"] == "rebuilt"
    finally:
        await fresh.close()
        await live.close()


class Unreadable:
    """A rebuild whose sealed file is not a database at all."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def seal(self) -> None:
        self.path.write_bytes(b"not a database, " * 512)


async def test_swap_in_when_the_new_file_cannot_be_opened_refuses_calls_saying_restart(
    tmp_path: Path,
) -> None:
    live = await SqliteStore.open(tmp_path / "live.db")

    async def nothing(store: Unreadable, seq: int) -> None:
        pass

    try:
        with pytest.raises(sqlite3.DatabaseError, match="not a database"):
            await live.swap_in(Unreadable(tmp_path / "bad.db"), nothing)
        with pytest.raises(RuntimeError, match=r"audit store .* not connected; restart"):
            await live.last_seq()
    finally:
        await live.close()
    with pytest.raises(RuntimeError, match=r"audit store .* is closed"):
        await live.runs(10)


async def test_live_store_when_file_is_not_a_database_fails_to_open_and_leaves_no_thread(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.db"
    path.write_bytes(b"not a database, " * 512)
    before = _sqlite_threads()
    with pytest.raises(sqlite3.DatabaseError, match="not a database"):
        await SqliteStore.open(path)
    for _ in range(50):
        if _sqlite_threads() <= before:
            break
        await asyncio.sleep(0.02)
    assert _sqlite_threads() <= before


def _sqlite_threads() -> int:
    """aiosqlite's worker threads alive now (each connection has one)."""
    return sum("_connection_worker_thread" in t.name for t in threading.enumerate())


class FlakyPublisher:
    """Fails its first publish, as a crash between the commit and the publish would."""

    def __init__(self) -> None:
        self.published: list[AuditRecorded] = []
        self.failed = False

    async def publish(self, record: AuditRecorded) -> None:
        if not self.failed:
            self.failed = True
            raise ConnectionError("the server went away")
        self.published.append(record)

    async def publish_many(self, records: Sequence[AuditRecorded]) -> None:
        for record in records:
            await self.publish(record)


async def test_audit_handler_when_publish_fails_after_commit_republishes_on_redelivery(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(tmp_path / "a.db")
    records = FlakyPublisher()
    handlers = AuditHandlers(store, records)
    try:
        events = history()
        seq = next(i for i, e in enumerate(events, 1) if type(e).__name__ == "OperationSucceeded")
        for earlier in range(1, seq):
            await apply_event(store, events[earlier - 1], earlier)
        delivery = Delivery(stream_seq=seq, num_delivered=1, subject="")
        with pytest.raises(ConnectionError, match="the server went away"):
            await handlers.on_event(events[seq - 1], delivery)
        before = await store.dump()
        await handlers.on_event(events[seq - 1], delivery)  # the redelivery
        assert await store.dump() == before  # applied once
        assert [r.operation_id for r in records.published] == ["drop_cube"]
        assert records.published[0].event_id == events[seq - 1].event_id
    finally:
        await store.close()


def _delivered(events: list[AnyEvent]) -> list[tuple[AnyEvent, Delivery]]:
    """``events`` as the consumer's batch mode hands them over: stream sequence 1, 2..."""
    return [
        (e, Delivery(stream_seq=i, num_delivered=1, subject="")) for i, e in enumerate(events, 1)
    ]


async def test_audit_batch_when_publish_fails_after_commit_republishes_on_redelivery(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(tmp_path / "a.db")
    records = FlakyPublisher()
    handlers = AuditHandlers(store, records)
    try:
        events = history()
        items = _delivered(events)
        with pytest.raises(ConnectionError, match="the server went away"):
            await handlers.on_events(items)
        before = await store.dump()
        await handlers.on_events(items)  # the redelivery: applied once, records again
        assert await store.dump() == before
        assert [r.stream_seq for r in records.published] == [
            row["stream_seq"] for row in before["audit_records"]
        ]
    finally:
        await store.close()


async def test_audit_batch_when_it_is_one_transaction_equals_event_by_event(
    tmp_path: Path,
) -> None:
    one = await SqliteStore.open(tmp_path / "one.db")
    many = await SqliteStore.open(tmp_path / "many.db")
    try:
        events = history()
        for seq, event in enumerate(events, 1):
            await apply_event(one, event, seq)
        await AuditHandlers(many).on_events(_delivered(events))
        assert await many.dump() == await one.dump()
    finally:
        await one.close()
        await many.close()


class ListLog:
    """The event log as a list, read as ``handlers.EventLog`` reads it: the ranges asked."""

    def __init__(self, events: list[AnyEvent]) -> None:
        self._items = _delivered(events)
        self.asked: list[tuple[int, int]] = []

    async def stretches(
        self, after: int, upto: int
    ) -> AsyncGenerator[Sequence[tuple[AnyEvent, Delivery]], None]:
        self.asked.append((after, upto))
        yield self._items[after:upto]


@pytest.mark.parametrize(
    "delivered",
    [[8, 7], [7, 9], [9]],  # out of order; a gap inside; a gap before (8 makes a record)
    ids=["swapped", "hole", "ahead"],
)
async def test_audit_batch_when_deliveries_skip_ahead_reads_the_log_and_applies_in_order(
    tmp_path: Path, delivered: list[int]
) -> None:
    events = history()
    upto = max(delivered)
    expected = await dump_after(tmp_path / "in-order.db", events[:upto], cache_rows=0)
    store = await SqliteStore.open(tmp_path / "a.db")
    log = ListLog(events)
    records = FlakyPublisher()
    records.failed = True  # publishes every time
    handlers = AuditHandlers(store, records, event_log=log)
    try:
        await handlers.on_events(_delivered(events)[:4])
        assert log.asked == []  # in order: the log is not read
        items = _delivered(events)
        await handlers.on_events([items[seq - 1] for seq in delivered])
        assert log.asked == [(4, upto)]
        assert await store.dump() == expected
        stored = [row["stream_seq"] for row in expected["audit_records"]]
        assert stored == [8]
        assert sorted({r.stream_seq for r in records.published}) == stored
    finally:
        await store.close()


# -- through a real consumer on a real nats-server ----------------------------------------


async def test_audit_service_when_the_file_is_locked_retries_and_applies_once(
    bus: Bus, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    store = await SqliteStore.open(settings.audit_db, busy_timeout=0.1)
    service = await audit_app.serve(store, settings, bus)
    blocker = sqlite3.connect(settings.audit_db, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        for event in history():
            await bus.publisher.publish(event)
        for _ in range(100):  # until a first attempt failed, to be retried in place
            if "failed (attempt 1): OperationalError: database is locked" in caplog.text:
                break
            await asyncio.sleep(0.05)
        assert "database is locked" in caplog.text
        blocker.execute("ROLLBACK")
        dump = await query_dump(bus.nc, "bmtest")
        assert len(dump["audit_records"]) == RECORDS
        # No dead letter of its own, nothing twice: as if the lock had never been held.
        expected = await dump_after(settings.home / "clean.db", history(), cache_rows=0)
        assert dump == expected
        audit_stream = subjects.audit_stream_name("bmtest")
        for _ in range(100):
            if (await bus.js.stream_info(audit_stream)).state.messages >= RECORDS:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        assert (await bus.js.stream_info(audit_stream)).state.messages == RECORDS
    finally:
        blocker.close()
        await service.stop()
