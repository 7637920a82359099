"""The rebuild store against the live views: a real nats-server, the real audit service.

The rebuild keeps run views in a bounded cache and writes each batch in one thread hop;
these tests make the cache far smaller than the log so runs are dropped and read back
mid-replay, and check the rebuilt file equals what the live consumer wrote, row for row.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts import subjects
from contracts.events import AnyEvent, RunEvent, decode_event
from services.audit import app as audit_app
from services.audit.client import query_dump
from services.audit.projections import Change
from services.audit.rebuild_store import RebuildStore
from services.audit.replay import ReplayStalled, replay
from services.audit.run_cache import RunCache, RunRows
from services.audit.store import SqliteStore
from services.runtime.service.host import Bus, ConsumerService
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration

HISTORY = Path(__file__).parent.parent / "fixtures" / "run_history_ring.jsonl"
COPIES = 12  # runs of the recorded history, interleaved event by event
CACHE_ROWS = 10  # about one run's rows: every other run is dropped and read back


def history() -> list[AnyEvent]:
    return [decode_event(line.encode()) for line in HISTORY.read_text().splitlines()]


def copy_of(event: AnyEvent, copy: int) -> AnyEvent:
    if not isinstance(event, RunEvent):
        return msgspec.structs.replace(event, event_id=f"{event.event_id}-{copy}")
    run_id, event_id = f"{event.run_id}-{copy}", f"{event.event_id}-{copy}"
    return msgspec.structs.replace(event, run_id=run_id, event_id=event_id)


def interleaved_log() -> list[AnyEvent]:
    """``COPIES`` copies of the history, step by step across the copies, then events of
    the first runs again, long after the cache dropped them."""
    events = history()
    log = [copy_of(event, copy) for event in events for copy in range(COPIES)]
    late = [e for e in events if isinstance(e, RunEvent) and e.run_id == "run-mat"][-3:]
    return log + [
        copy_of(msgspec.structs.replace(e, event_id=f"late-{e.event_id}"), 0) for e in late
    ]


@pytest.fixture
async def audit(settings: Settings, bus: Bus) -> AsyncIterator[ConsumerService]:
    service = await audit_app.start(settings, bus)
    try:
        yield service
    finally:
        await service.stop()


async def live_dump_of(bus: Bus, events: list[AnyEvent]) -> dict[str, list[dict[str, Any]]]:
    for event in events:
        await bus.publisher.publish(event)
    # An undecodable message: the live consumer dead-letters it, the replay skips it.
    await bus.js.publish(subjects.run_events("bmtest", "run-bad", "requested"), b"{bad")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        dump = await query_dump(bus.nc, "bmtest")
        if dump["dead_letters"] and len(dump["dead_letters"]) == COPIES + 1:
            return dump
        assert loop.time() < deadline, "the live consumer never dead-lettered the bad message"
        await asyncio.sleep(0.1)


async def rebuilt_dump(store: RebuildStore) -> dict[str, list[dict[str, Any]]]:
    await store.seal()
    assert self_contained(store.path)
    sealed = await SqliteStore.open(store.path)
    try:
        return await sealed.dump()
    finally:
        await sealed.close()


# Batches of 5: the cache is trimmed after each, so runs are read back all the time;
# batches of 256: runs stay cached within a batch and are built on from memory.
@pytest.mark.parametrize("batch_size", [5, 256])
async def test_rebuild_store_when_log_outgrows_cache_equals_live_views(
    bus: Bus, audit: ConsumerService, tmp_path: Path, batch_size: int
) -> None:
    live = await live_dump_of(bus, interleaved_log())
    upto = live["tracking"][0]["last_seq"]
    assert len(live["runs"]) == 2 * COPIES
    path = tmp_path / "rebuild" / "fresh.db"
    store = await RebuildStore.open(path, cache_rows=CACHE_ROWS)
    try:
        half = upto // 2  # two stretches, as a rebuild and its catch-up replay them
        await replay(bus.js, "bmtest", store, after=0, upto=half, batch_size=batch_size)
        # Overlapping the first stretch: what was applied is skipped.
        await replay(bus.js, "bmtest", store, after=half - 5, upto=upto, batch_size=batch_size)
        assert await rebuilt_dump(store) == live
    finally:
        await store.close()


def self_contained(path: Path) -> bool:
    """One file, in rollback-journal mode, with no journal or WAL beside it."""
    with sqlite3.connect(path) as db:
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    return mode != "wal" and [p.name for p in path.parent.iterdir()] == [path.name]


async def test_replay_when_log_ends_before_upto_raises_stalled(bus: Bus, tmp_path: Path) -> None:
    await bus.publisher.publish(history()[0])
    store = await RebuildStore.open(tmp_path / "rebuild" / "fresh.db")
    try:
        with pytest.raises(ReplayStalled, match=r"after sequence 1, short of 3.*rebuild"):
            await replay(bus.js, "bmtest", store, after=0, upto=3, idle=0.3)
        # What arrived before the stall was applied: the caller discards the whole file.
        assert (await rebuilt_dump(store))["tracking"] == [{"last_seq": 1}]
    finally:
        await store.close()


# -- the store's own guards ------------------------------------------------------------


async def test_rebuild_store_when_open_finds_leftovers_starts_empty(tmp_path: Path) -> None:
    path = leftovers(tmp_path / "rebuild" / "fresh.db")
    store = await RebuildStore.open(path)
    try:
        assert (await rebuilt_dump(store))["tracking"] == [{"last_seq": 0}]
    finally:
        await store.close()


def leftovers(path: Path) -> Path:
    path.parent.mkdir()
    path.write_bytes(b"an interrupted rebuild")
    Path(f"{path}-wal").write_bytes(b"stale")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (Change("nope", {"stream_seq": 2}), "no view named 'nope'"),
        (Change("timeline", {"stream_seq": 2, "colour": "red"}), r"no columns \['colour'\]"),
    ],
)
async def test_rebuild_store_when_change_is_bad_rolls_back_the_batch(
    tmp_path: Path, change: Change, message: str
) -> None:
    store = await RebuildStore.open(tmp_path / "rebuild" / "fresh.db")
    try:
        good = Change("timeline", {"stream_seq": 1, "run_id": "r"})
        with pytest.raises(ValueError, match=message):
            await store.apply_many([(1, "r", lambda _v: [good]), (2, "r", lambda _v: [change])])
        dump = await rebuilt_dump(store)
        assert dump["tracking"] == [{"last_seq": 0}] and dump["timeline"] == []
    finally:
        await store.close()


async def test_rebuild_store_when_append_only_row_repeats_fails_loudly(tmp_path: Path) -> None:
    store = await RebuildStore.open(tmp_path / "rebuild" / "fresh.db")
    try:
        row = Change("timeline", {"stream_seq": 1, "run_id": "r"})
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE constraint failed"):
            await store.apply_many([(1, "r", lambda _v: [row]), (2, "r", lambda _v: [row])])
    finally:
        await store.close()


async def test_rebuild_store_when_sealed_refuses_more_writes(tmp_path: Path) -> None:
    store = await RebuildStore.open(tmp_path / "rebuild" / "fresh.db")
    await store.seal()
    try:
        with pytest.raises(RuntimeError, match=r"rebuild store .* is closed"):
            await store.apply_many([(1, None, lambda _v: [])])
    finally:
        await store.close()


def test_run_cache_when_over_limit_drops_least_recently_used_and_reloads() -> None:
    loads: list[str] = []

    def load(run_id: str) -> RunRows:
        loads.append(run_id)
        return RunRows(run={"run_id": run_id}, actions={"a": {}, "b": {}})  # 3 rows

    cache = RunCache(limit=6, load=load)
    for run_id in ("r1", "r2", "r1", "r3"):
        cache.get(run_id)
    cache.evict()  # 9 rows: r2, least recently used, goes
    assert len(cache) == 2
    cache.get("r1")
    cache.get("r2")
    assert loads == ["r1", "r2", "r3", "r2"]
