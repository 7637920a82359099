"""The executor's ordered event sender: order kept, successes held behind their writes."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from contracts.receipts import Receipt
from services.executor.domain.journal import JournalEntry
from services.executor.domain.ordered import OrderedEvents
from services.executor.memory import MemoryJournal


class Sent:
    def __init__(self) -> None:
        self.events: list[Any] = []

    async def __call__(self, event: Any) -> None:
        self.events.append(event)


async def slow(seconds: float, fail: bool = False) -> None:
    await asyncio.sleep(seconds)
    if fail:
        raise OSError("write refused")


async def test_emit_when_an_earlier_event_waits_for_a_write_keeps_the_order() -> None:
    sent = Sent()
    events = OrderedEvents(sent)
    stored = events.write(slow(0.03))
    await events.emit("first", after=stored)  # type: ignore[arg-type]
    await events.emit("second")  # type: ignore[arg-type]
    await asyncio.sleep(0.005)
    assert sent.events == []  # "second" may not overtake "first"
    await events.settle()
    assert sent.events == ["first", "second"]


async def test_settle_when_a_write_fails_raises_and_sends_nothing_after_it() -> None:
    sent = Sent()
    events = OrderedEvents(sent)
    await events.emit("before")  # type: ignore[arg-type]
    stored = events.write(slow(0.01, fail=True))
    await events.emit("held", after=stored)  # type: ignore[arg-type]
    await events.emit("later")  # type: ignore[arg-type]
    with pytest.raises(OSError, match="write refused"):
        await events.settle()
    assert sent.events == ["before"]


async def test_abandon_when_writes_are_pending_cancels_them_and_raises_nothing() -> None:
    sent = Sent()
    events = OrderedEvents(sent)
    stored = events.write(slow(10))
    await events.emit("held", after=stored)  # type: ignore[arg-type]
    await events.abandon()
    assert stored.cancelled() and sent.events == []
    await events.settle()  # nothing left to wait for


async def test_write_when_an_earlier_write_fails_is_never_started() -> None:
    """The journal must hold a prefix of the schedule: a write after a failed one would
    leave an operation stored without the one before it."""
    events = OrderedEvents(Sent())
    started: list[str] = []

    async def put(name: str, fail: bool = False) -> None:
        started.append(name)
        await slow(0.01, fail)

    events.write(put("first", fail=True))
    later = events.write(put("second"))
    with pytest.raises(OSError, match="write refused"):
        await events.settle()
    assert started == ["first"] and later.done()


async def test_write_when_started_in_turn_is_stored_in_turn() -> None:
    events = OrderedEvents(Sent())
    stored: list[int] = []

    async def put(n: int, seconds: float) -> None:
        await asyncio.sleep(seconds)
        stored.append(n)

    for n, seconds in enumerate((0.03, 0.0, 0.01)):
        events.write(put(n, seconds))
    await events.settle()
    assert stored == [0, 1, 2]


def entry(operation_id: str) -> JournalEntry:
    receipt = Receipt(
        operation_id=operation_id,
        tool_name="object.create",
        safety_level="safe_write",
        status="succeeded",
        scene_hash_before="h0",
        scene_hash_after="h1",
    )
    return JournalEntry(
        request_id="q1",
        operation_id=operation_id,
        args_digest="d",
        run_id="r1",
        receipt=receipt,
    )


class Grouping(MemoryJournal):
    """Records each ``put_many`` as one group; fails the group holding ``fail_on``."""

    def __init__(self, fail_on: str | None = None) -> None:
        super().__init__()
        self.groups: list[list[str]] = []
        self._fail_on = fail_on

    async def put_many(self, entries: Sequence[tuple[str, JournalEntry]]) -> None:
        names = [e.operation_id for _, e in entries]
        self.groups.append(names)
        await asyncio.sleep(0.01)
        if self._fail_on in names:
            raise OSError("journal unavailable")
        await super().put_many(entries)


async def test_entry_when_several_come_within_the_linger_stores_them_as_one_group() -> None:
    sent, journal = Sent(), Grouping()
    events = OrderedEvents(sent, journal, linger=10)
    for name in ("op01", "op02", "op03"):
        stored = events.entry(name, entry(name))
        await events.emit(f"{name} succeeded", after=stored)  # type: ignore[arg-type]
    await asyncio.sleep(0.02)
    assert journal.groups == [] and sent.events == []  # held until the group is stored
    await events.settle()  # stores the group at once: no waiting for the linger
    assert journal.groups == [["op01", "op02", "op03"]]
    assert sent.events == ["op01 succeeded", "op02 succeeded", "op03 succeeded"]


async def test_entry_when_the_linger_passes_stores_the_group_before_settle() -> None:
    sent, journal = Sent(), Grouping()
    events = OrderedEvents(sent, journal, linger=0.01)
    stored = events.entry("op01", entry("op01"))
    await events.emit("op01 succeeded", after=stored)  # type: ignore[arg-type]
    await asyncio.sleep(0.1)  # a long operation runs: its predecessor's success shows
    assert sent.events == ["op01 succeeded"]
    events.entry("op02", entry("op02"))
    await events.settle()
    assert journal.groups == [["op01"], ["op02"]]


async def test_entry_when_a_group_fails_announces_none_of_it_and_stores_nothing_after() -> None:
    sent, journal = Sent(), Grouping(fail_on="op02")
    events = OrderedEvents(sent, journal, linger=0.01)
    first = events.entry("op02", entry("op02"))
    await events.emit("op02 succeeded", after=first)  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    later = events.entry("op03", entry("op03"))
    await events.emit("op03 succeeded", after=later)  # type: ignore[arg-type]
    with pytest.raises(OSError, match="journal unavailable"):
        await events.settle()
    assert sent.events == [] and journal.groups == [["op02"]]
    assert journal.entries == {}


async def test_entry_when_made_without_a_journal_says_so() -> None:
    with pytest.raises(RuntimeError, match="without a journal"):
        OrderedEvents(Sent()).entry("op01", entry("op01"))


async def test_abandon_when_a_group_waits_stores_nothing_and_raises_nothing() -> None:
    sent, journal = Sent(), Grouping()
    events = OrderedEvents(sent, journal, linger=10)
    stored = events.entry("op01", entry("op01"))
    await events.emit("op01 succeeded", after=stored)  # type: ignore[arg-type]
    await events.abandon()
    await asyncio.sleep(0.02)
    assert journal.groups == [] and sent.events == [] and stored.cancelled()
