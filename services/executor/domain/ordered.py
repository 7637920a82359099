"""A run's events in the order they happened, each sent only once what it reports is durable.

An operation's success may be announced only after its journal entry is stored (spec 000
§Executor Guarantees 2). Waiting for that entry's fsync before calling the next tool
would put one fsync on the path of every operation; instead the next tool runs while the
entry is written, and the announcement waits for it here. Events leave in emission order,
so the log reads exactly as if every write had been awaited in turn.

Nothing that depends on the entries may happen before ``settle``: the runner settles
before it commits a revision or deletes journal entries, so a write that failed fails the
run (its message is delivered again and the run resumes from the journal) before
anything is built on it.

Journal entries given to ``entry`` are grouped: the entries of ``linger`` seconds (or up
to ``settle``) are stored with one ``put_many``, which a KV journal makes one atomic
batch, so a 25-operation run's journal costs a few fsyncs instead of 25 (ADR 0069).
Groups are stored in order, one after the other, and none after one that failed, so the
journal still holds a prefix of the schedule.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from contracts.events import Event
from services.executor.domain.journal import JournalEntry
from services.executor.domain.ports import Journal

Emit = Callable[[Event], Awaitable[None]]
LINGER = 0.25  # seconds an entry may wait for others to share its write
MAX_GROUP = 1000  # entries stored together at most (an atomic batch's limit)


class OrderedEvents:
    """Sends events in order; an event given ``after`` waits for that write first."""

    def __init__(self, emit: Emit, journal: Journal | None = None, linger: float = LINGER) -> None:
        self._emit = emit
        self._journal = journal
        self._linger = linger
        self._tail: asyncio.Future[None] | None = None
        self._writes: list[asyncio.Future[None]] = []
        self._started: list[Coroutine[Any, Any, None]] = []  # to close any never run
        # Journal entries not yet handed to a write, and the future they share.
        self._group: list[tuple[str, JournalEntry]] = []
        self._grouped: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def entry(self, key: str, entry: JournalEntry) -> asyncio.Future[None]:
        """Store a journal entry with the others of its group, after every write started
        before; the future is done once it is stored (events emitted ``after`` it wait)."""
        if self._journal is None:
            raise RuntimeError("OrderedEvents was made without a journal to store entries in")
        loop = asyncio.get_running_loop()
        if self._grouped is None:
            self._grouped = loop.create_future()
            self._timer = loop.call_later(self._linger, self._close_group)
        grouped = self._grouped
        self._group.append((key, entry))
        if len(self._group) >= MAX_GROUP:
            self._close_group()
        return grouped

    def _close_group(self) -> None:
        """Hand the group to one write, in order behind the writes before it."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        grouped, self._grouped = self._grouped, None
        group, self._group = self._group, []
        if grouped is None or self._journal is None:
            return
        write = self.write(self._journal.put_many(group))
        write.add_done_callback(lambda done: _pass_on(done, grouped))

    def write(self, write: Coroutine[Any, Any, None]) -> asyncio.Future[None]:
        """Start a durable write once the one before it is stored; events emitted ``after``
        it wait for it. Writes are stored in the order they were started, and one that
        fails stops every later one: the journal must hold a prefix of the schedule, never
        an operation without the ones before it (a write lost to a reconnect while the next
        one got through would leave exactly that)."""
        previous = self._writes[-1] if self._writes else None
        future = asyncio.ensure_future(self._chained(previous, write))
        self._writes.append(future)
        self._started.append(write)
        return future

    async def _chained(
        self, previous: asyncio.Future[None] | None, write: Coroutine[Any, Any, None]
    ) -> None:
        try:
            if previous is not None:
                await previous
        except BaseException:
            write.close()  # never started: no write, and no warning that it was not awaited
            raise
        await write

    async def emit(self, event: Event, after: asyncio.Future[None] | None = None) -> None:
        """Queue ``event`` behind every event emitted before it (and ``after``)."""
        self._tail = asyncio.ensure_future(self._send(self._tail, after, event))

    async def _send(
        self,
        previous: asyncio.Future[None] | None,
        after: asyncio.Future[None] | None,
        event: Event,
    ) -> None:
        if previous is not None:
            await previous  # the order of the log; a failure before stops the rest
        if after is not None:
            await after
        await self._emit(event)

    async def settle(self) -> None:
        """Wait until every write is stored and every event sent; the first failure raises."""
        self._close_group()  # stored now: nothing waits for the linger any more
        pending = [*self._writes, *([self._tail] if self._tail is not None else [])]
        self._writes, self._tail, self._started = [], None, []
        # Every one awaited, so a failure that stopped the events behind it is retrieved.
        outcomes = await asyncio.gather(*pending, return_exceptions=True)
        failure = next((o for o in outcomes if isinstance(o, BaseException)), None)
        if failure is not None:
            raise failure

    async def abandon(self) -> None:
        """Stop what is still waiting (the run failed outright) and swallow its failures,
        so no task outlives its run or logs an exception nobody retrieved."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._grouped is not None:
            self._grouped.cancel()  # never written: events waiting for it are stopped too
        self._grouped, self._group = None, []
        pending = [*self._writes, *([self._tail] if self._tail is not None else [])]
        for future in pending:
            future.cancel()
        for future in pending:
            with contextlib.suppress(BaseException):
                await future
        for write in self._started:
            write.close()  # a write cancelled before it began never ran: nothing to await
        self._writes, self._tail, self._started = [], None, []


def _pass_on(done: asyncio.Future[None], grouped: asyncio.Future[None]) -> None:
    """Give the group's entries the outcome of the write that stored them."""
    if grouped.done():
        return
    if done.cancelled():
        grouped.cancel()
    elif (exc := done.exception()) is not None:
        grouped.set_exception(exc)
        grouped.exception()  # retrieved here too: the write's own future is awaited
    else:
        grouped.set_result(None)
