"""Waiting for room: a consumer's message whose writes storage refuses, or that JetStream
cannot store while a stream has no leader, is tried again in place, not nak'd, and the
loop says since when (ADR 0040, ADR 0073).

A nak would count a delivery each time. A disk full, or a leader election after a server
died, that lasts longer than ``max_deliver`` deliveries would dead-letter work that only
waits for the log; and the dead letter, refused too, leaves the message undelivered for
good (the server stops at ``max_deliver``): the run it belongs to never ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from services.runtime.service.consumer_spec import backoff

log = logging.getLogger("blendmesh.consumer")

Work = Callable[[], Awaitable[None]]
Hold = Callable[[], Coroutine[Any, Any, None]]  # keeps the messages in hand in progress


class Room:
    """One consumer loop's waits for room, and what it says of them. ``stop_asked`` ends a
    wait at once (the loop is stopping: the message goes back)."""

    def __init__(
        self,
        durable: str,
        clock: Callable[[], float],
        backoff_cap: float,
        patience: float,
    ) -> None:
        self._durable = durable
        self._clock = clock
        self._backoff_cap = backoff_cap
        self._patience = patience
        self.stop_asked = asyncio.Event()
        # When a message last failed because storage refused a write, or the log stored
        # nothing; None once one is handled again. The service's STATS say so
        # (``problem``), and a follower reads it.
        self.refused_at: float | None = None
        self._unstored = False  # the last refusal was the log's, not a full store's

    def problem(self) -> str | None:
        """What is wrong with the loop's work now, for its service's STATS; None: nothing."""
        if self.refused_at is None:
            return None
        # Imported once refused only: the CLI's run loads the consumer and nothing of this.
        from services.runtime.service.store_limits import refusing, unstored

        waited = max(0.0, self._clock() - self.refused_at)
        return unstored(waited) if self._unstored else refusing(waited)

    def _refused(self, error: BaseException) -> bool:
        """Whether storage refused ``error``'s write or the log could not store it,
        remembering since when."""
        from services.runtime.nats.quorum import log_unavailable  # as above
        from services.runtime.service.store_limits import out_of_room

        full = out_of_room(error)
        unstored = not full and log_unavailable(error)
        if (full or unstored) and self.refused_at is None:
            self.refused_at = self._clock()
        if full or unstored:
            self._unstored = unstored
        return full or unstored

    async def until_room(self, work: Work, hold: Hold | None = None) -> None:
        """Do ``work``; while storage refuses its writes or the log stores nothing, do it
        again in place for ``patience`` seconds at most, with ``hold`` keeping its messages
        in progress."""
        tries = 0
        holding: asyncio.Task[None] | None = None
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self._patience
        try:
            while True:
                try:
                    await work()
                    self.refused_at = None  # its writes went through
                    return
                except Exception as exc:
                    refused = self._refused(exc)
                    if not refused or self.stop_asked.is_set() or loop.time() >= give_up:
                        raise
                    tries += 1
                    if holding is None and hold is not None:
                        holding = asyncio.create_task(hold())
                    delay = backoff(tries, self._backoff_cap)
                    log.warning(
                        "%s: %s (%s); trying again in %.2fs",
                        self._durable,
                        "the log stored nothing" if self._unstored else "storage refuses writes",
                        exc,
                        delay,
                    )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.stop_asked.wait(), delay)
                    if self.stop_asked.is_set():  # asked to stop meanwhile: give it back
                        raise
        finally:
            if holding is not None:
                holding.cancel()
