"""A run's detail in pages that each fit one message (ADR 0076): which rows a page covers,
how many fit, and that the pages of the SQLite views add up to the whole run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts import events as ev
from contracts.queries import MAX_PAGE_ROWS, RunDetail, RunReply
from services.audit.handlers import apply_event
from services.audit.queries import with_facts
from services.audit.run_pages import cut, fitting, windows
from services.audit.store import SqliteStore

HISTORY = Path(__file__).parents[2] / "fixtures" / "run_history_ring.jsonl"
ROOM = 1024 * 1024 - 16 * 1024  # what the audit service leaves rows of one reply


def history() -> list[ev.AnyEvent]:
    return [ev.decode_event(line.encode()) for line in HISTORY.read_text().splitlines()]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    views = await SqliteStore.open(tmp_path / "audit.db")
    try:
        for seq, event in enumerate(history(), start=1):
            await apply_event(views, event, seq)
        yield views
    finally:
        await views.close()


async def page(
    store: SqliteStore, offset: int, room: int, limit: int = MAX_PAGE_ROWS, upto: int | None = None
) -> RunReply:
    found = await store.run_page("run-ring", offset, limit, upto)
    assert found is not None
    found["timeline"] = [with_facts(entry) for entry in found["timeline"]]
    return cut(found, offset, await store.last_seq(), room)


async def all_pages(store: SqliteStore, room: int, limit: int = MAX_PAGE_ROWS) -> list[RunReply]:
    replies = [await page(store, 0, room, limit)]
    while (at := replies[-1].page) is not None and at.next_offset is not None:
        replies.append(await page(store, at.next_offset, room, limit, at.upto_seq))
        assert len(replies) < 1000
    return replies


def joined(replies: list[RunReply]) -> RunDetail:
    parts = [r.detail for r in replies if r.detail is not None]
    return RunDetail(
        run=parts[0].run,
        actions=[a for p in parts for a in p.actions],
        audit_records=[a for p in parts for a in p.audit_records],
        timeline=[t for p in parts for t in p.timeline],
    )


async def whole(store: SqliteStore) -> RunDetail:
    found = await store.run("run-ring")
    assert found is not None
    found["timeline"] = [with_facts(entry) for entry in found["timeline"]]
    return msgspec.convert(found, RunDetail)


def test_windows_when_a_page_spans_views_splits_it_between_them() -> None:
    counts = {"actions": 3, "audit_records": 2, "timeline": 10}
    assert windows(counts, 0, 4) == {
        "actions": (0, 3),
        "audit_records": (0, 1),
        "timeline": (0, 0),
    }
    assert windows(counts, 4, 3) == {
        "actions": (3, 0),
        "audit_records": (1, 1),
        "timeline": (0, 2),
    }
    assert windows(counts, 50, 10) == {
        "actions": (3, 0),
        "audit_records": (2, 0),
        "timeline": (10, 0),
    }


def test_fitting_when_rows_exceed_room_keeps_those_that_fit_and_at_least_one() -> None:
    assert fitting([10, 10, 10], 22) == 2  # each with its comma
    assert fitting([10, 10, 10], 1000) == 3
    assert fitting([5000, 1], 100) == 1  # too big alone: the reply's size check says so
    assert fitting([], 100) == 0


async def test_pages_when_the_room_is_small_add_up_to_the_whole_run(store: SqliteStore) -> None:
    expected = await whole(store)
    for room, limit in ((ROOM, MAX_PAGE_ROWS), (4000, MAX_PAGE_ROWS), (ROOM, 1), (900, 3)):
        replies = await all_pages(store, room, limit)
        assert joined(replies) == expected, (room, limit)
        if room < ROOM or limit < 5:
            assert len(replies) >= 3, (room, limit)
        for reply in replies:
            detail = reply.detail
            assert detail is not None and reply.page is not None
            held = len(detail.actions) + len(detail.audit_records) + len(detail.timeline)
            assert held <= limit
            # Every page with more than one row fits the room it was cut to.
            if held > 1:
                assert len(msgspec.json.encode(reply)) <= room, (room, limit, reply.page)


async def test_page_when_offset_is_past_the_last_row_answers_none_and_no_next(
    store: SqliteStore,
) -> None:
    reply = await page(store, 10_000, ROOM)
    assert reply.detail is not None and reply.page is not None
    assert (reply.detail.actions, reply.detail.audit_records, reply.detail.timeline) == ([], [], [])
    assert reply.page.next_offset is None and reply.page.rows > 0


async def test_page_when_the_run_moves_on_reads_records_only_up_to_the_first_page(
    tmp_path: Path,
) -> None:
    events = history()
    ring = [seq for seq, e in enumerate(events, 1) if getattr(e, "run_id", None) == "run-ring"]
    views = await SqliteStore.open(tmp_path / "moving.db")
    try:
        half = ring[len(ring) // 2]
        for seq, event in enumerate(events[:half], start=1):
            await apply_event(views, event, seq)
        first = await views.run_page("run-ring", 0, 2, None)
        assert first is not None and first["upto_seq"] == half
        for seq, event in enumerate(events[half:], start=half + 1):
            await apply_event(views, event, seq)
        later = await views.run_page("run-ring", 0, MAX_PAGE_ROWS, first["upto_seq"])
        assert later is not None
        assert later["latest_seq"] == ring[-1] > later["upto_seq"] == half
        assert max(t["stream_seq"] for t in later["timeline"]) == half
        assert all(r["stream_seq"] <= half for r in later["audit_records"])
        assert later["rows"] == first["rows"]  # the same plan: what it read then, no more
        reply = cut(later | {"timeline": [with_facts(t) for t in later["timeline"]]}, 0, 1, ROOM)
        assert reply.page is not None and reply.page.moved
    finally:
        await views.close()


def test_cut_when_a_run_holds_the_most_operations_keeps_each_page_within_a_message() -> None:
    run = {
        "run_id": "run-big", "request_id": "req", "thread_id": "th", "user": "ana",
        "scene_id": "aisle", "prompt": None, "state": "completed", "planner": "plan",
        "model": None, "error_code": None, "message": "done", "blend_path": None,
        "scene_hash": "sha256:" + "a" * 64, "created_at": 1.0, "updated_at": 2.0,
    }  # fmt: skip
    actions = [_action(i) for i in range(500)]
    records = [_record(i) for i in range(500)]
    timeline = [_entry(i) for i in range(1100)]
    found: dict[str, Any] = {"run": run, "rows": 2100, "upto_seq": 5000, "latest_seq": 5000,
                             "actions": actions, "audit_records": records,
                             "timeline": timeline[:1100]}  # fmt: skip
    whole = len(msgspec.json.encode(found))
    assert whole > 1024 * 1024  # one answer could not hold it
    reply = cut(found, 0, 7, ROOM)
    assert reply.page is not None and reply.detail is not None
    assert len(msgspec.json.encode(reply)) <= ROOM
    assert reply.page.next_offset is not None and reply.page.next_offset < 2100
    assert len(reply.detail.actions) == 500  # the actions come whole on the first page


def _action(i: int) -> dict[str, Any]:
    return {
        "run_id": "run-big", "operation_id": f"make_{i:03d}", "tool_name": "object.create",
        "safety_level": "safe_write", "state": "completed", "decision": "allow",
        "mcp_call_id": f"mcp-{i:032x}", "blender_mutation_id": f"mut-{i:032x}",
        "error_code": None, "approval_id": None, "input_hash": "sha256:" + "b" * 64,
        "created_at": 1.0, "updated_at": 2.0,
    }  # fmt: skip


def _record(i: int) -> dict[str, Any]:
    return {
        "stream_seq": 10 + 2 * i, "event_id": f"evt-{i:032x}", "run_id": "run-big",
        "user": "ana", "timestamp": 1.5, "request_id": "req", "operation_id": f"make_{i:03d}",
        "mcp_call_id": f"mcp-{i:032x}", "blender_mutation_id": f"mut-{i:032x}",
        "tool_name": "object.create", "safety_level": "safe_write", "status": "succeeded",
        "scene_hash_before": "sha256:" + "c" * 64, "scene_hash_after": "sha256:" + "d" * 64,
        "scene_id": "aisle", "input_hash": "sha256:" + "b" * 64, "decision": "allow",
        "message": "created Crate " + "x" * 400,
    }  # fmt: skip


def _entry(i: int) -> dict[str, Any]:
    return {
        "stream_seq": 9 + i, "run_id": "run-big", "event_id": f"evt-{i:032x}",
        "type": "run.op_succeeded", "at": 1.5, "detail": f"make_{i:03d} succeeded",
        "facts": {"operation_id": f"make_{i:03d}", "tool": "object.create",
                  "status": "succeeded", "duration_ms": 4.2,
                  "scene_hash_before": "sha256:" + "c" * 64,
                  "scene_hash_after": "sha256:" + "d" * 64, "error_code": None},
    }  # fmt: skip
