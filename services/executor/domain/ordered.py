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
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from contracts.events import Event

Emit = Callable[[Event], Awaitable[None]]


class OrderedEvents:
    """Sends events in order; an event given ``after`` waits for that write first."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._tail: asyncio.Future[None] | None = None
        self._writes: list[asyncio.Future[None]] = []
        self._started: list[Coroutine[Any, Any, None]] = []  # to close any never run

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
        pending = [*self._writes, *([self._tail] if self._tail is not None else [])]
        for future in pending:
            future.cancel()
        for future in pending:
            with contextlib.suppress(BaseException):
                await future
        for write in self._started:
            write.close()  # a write cancelled before it began never ran: nothing to await
        self._writes, self._tail, self._started = [], None, []
