"""Following the log's tail into a view held in memory, and knowing when it has caught up.

A view folded from the log (the doors' ownership index, the projects book) is kept current
by one ordered consumer per subject filter, from the log's first message on. Before a
view is read, ``caught_up`` asks the log for its newest message on each filter (one direct
get each) and waits until the view has been handed at least that far, so a lookup sees
everything a scan of the log would have seen.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError

from services.runtime.nats.retry import poll

# What a follower does with one delivery: the stream sequence the view now holds on its
# filter, or None when the delivery moves nothing.
Handle = Callable[[str, Msg], int | None]


class LogTail:
    """Ordered consumers on ``follows`` in ``stream``, started on first use."""

    def __init__(
        self, js: JetStreamContext, stream: str, follows: Sequence[str], handle: Handle
    ) -> None:
        self._js = js
        self._stream = stream
        self._follows = list(follows)
        self._handle = handle
        self._seen: dict[str, int] = dict.fromkeys(self._follows, 0)  # newest seq applied
        self._subs: list[Subscription] = []
        self._starting = asyncio.Lock()

    async def caught_up(self, timeout: float) -> list[str]:
        """The filters still behind the log's newest message after ``timeout`` seconds;
        empty once the view holds every message the log has now."""
        await self._start()
        newest: dict[str, int] = {}
        for subject in self._follows:
            try:
                last = await self._js.get_last_msg(self._stream, subject)
            except NotFoundError:
                continue
            newest[subject] = last.seq or 0

        async def behind() -> list[str]:
            return [s for s, seq in newest.items() if self._seen[s] < seq]

        return await poll(behind, lambda lagging: not lagging, timeout, pause=0.01)

    async def close(self) -> None:
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._subs = []

    async def _start(self) -> None:
        async with self._starting:
            if self._subs:
                return
            for subject in self._follows:
                self._subs.append(
                    await self._js.subscribe(
                        subject,
                        stream=self._stream,
                        ordered_consumer=True,
                        deliver_policy=DeliverPolicy.ALL,
                        cb=self._follower(subject),
                    )
                )

    def _follower(self, subject: str) -> Callable[[Msg], Awaitable[None]]:
        async def follow(msg: Msg) -> None:
            seq = self._handle(subject, msg)
            if seq is not None:
                self._seen[subject] = max(self._seen[subject], seq)

        return follow
