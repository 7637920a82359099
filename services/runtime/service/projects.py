"""The projects book, kept current by tailing the log's project and lock events.

Like ``owners.py``: ordered consumers apply ``<prefix>.project.>`` and ``<prefix>.lock.>``
to a ``ProjectBook`` (contracts/project_book.py), and a lookup first waits until the book
holds the newest such event in the log, so a member added a moment ago through another
door is a member here too. The doors and the policy service each keep one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.events import decode_event
from contracts.project_book import ProjectBook
from contracts.projects import StudioEvent
from services.runtime.nats.retry import poll
from services.runtime.service.host import Bus

log = logging.getLogger("blendmesh.security")


class BookBehind(BlendmeshError, RuntimeError):
    """The book did not reach the log's newest project or lock event in time."""


def studio_event(prefix: str, subject: str, data: bytes) -> StudioEvent | None:
    """The project or lock event ``data`` holds when it arrived on its own subject; None
    otherwise, with a warning, so a forged delivery changes nothing."""
    try:
        event = decode_event(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        log.warning("ignored a malformed event on %s", subject[:200])
        return None
    if not isinstance(event, StudioEvent) or subjects.for_event(prefix, event) != subject:
        log.warning("ignored an event on %s that is not that subject's", subject[:200])
        return None
    return event


class LogProjects:
    """A ``ProjectBook`` kept current by tailing the log; started on first use."""

    def __init__(self, bus: Bus, catch_up_timeout: float = 5.0) -> None:
        self._bus = bus  # read when first used: the app may be built before it connects
        self._timeout = catch_up_timeout
        self._book = ProjectBook()
        self._filters = subjects.studio_events(bus.prefix)
        self._seen: dict[str, int] = dict.fromkeys(self._filters, 0)
        self._subs: list[Subscription] = []
        self._starting = asyncio.Lock()

    async def current(self) -> ProjectBook:
        """The book, once it holds every project and lock event the log has now."""
        await self._start()
        stream = subjects.stream_name(self._bus.prefix)

        async def last_seq(subject: str) -> int:
            try:
                return (await self._bus.js.get_last_msg(stream, subject)).seq or 0
            except NotFoundError:
                return 0

        # Asked together: the policy and the executor ask this on every run's path.
        found = await asyncio.gather(*(last_seq(s) for s in self._filters))
        newest = {s: seq for s, seq in zip(self._filters, found, strict=True) if seq}

        async def behind() -> list[str]:
            return [s for s, seq in newest.items() if self._seen[s] < seq]

        if await poll(behind, lambda lagging: not lagging, self._timeout, pause=0.01):
            raise BookBehind("the projects book is behind the log; try again")
        return self._book

    async def close(self) -> None:
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._subs = []

    async def _start(self) -> None:
        async with self._starting:
            if self._subs:
                return
            stream = subjects.stream_name(self._bus.prefix)
            for subject in self._filters:
                self._subs.append(
                    await self._bus.js.subscribe(
                        subject,
                        stream=stream,
                        ordered_consumer=True,
                        deliver_policy=DeliverPolicy.ALL,
                        cb=self._applier(subject),
                    )
                )

    def _applier(self, subject: str) -> Callable[[Msg], Awaitable[None]]:
        prefix = self._bus.prefix
        stream = subjects.stream_name(prefix)

        async def apply(msg: Msg) -> None:
            try:
                metadata = msg.metadata
            except ValueError:  # not a JetStream delivery at all
                return
            if metadata.stream != stream:
                return
            event = studio_event(prefix, msg.subject, msg.data)
            if event is not None:
                self._book.apply(event)
            self._seen[subject] = max(self._seen[subject], metadata.sequence.stream)

        return apply


# Keyed by the connection: a Bus is a dataclass, compared by value and not hashable.
_SHARED: weakref.WeakKeyDictionary[Client, LogProjects] = weakref.WeakKeyDictionary()


def projects_of(bus: Bus) -> LogProjects:
    """The one book a connection keeps: every door on ``bus`` reads the same, and tails
    the log once."""
    found = _SHARED.get(bus.nc)
    if found is None:
        found = _SHARED[bus.nc] = LogProjects(bus)
    return found
