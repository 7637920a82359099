"""The projects book, kept current by tailing the log's project and lock events.

Like ``owners.py``: a tail of the log (``services/runtime/nats/tail.py``) applies
``<prefix>.project.>`` and ``<prefix>.lock.>`` to a ``ProjectBook``
(contracts/project_book.py), and a lookup first waits until the book holds the newest such
event in the log, so a member added a moment ago through another door is a member here
too. The doors and the policy service each keep one.
"""

from __future__ import annotations

import logging
import weakref
from functools import partial

import msgspec
from nats.aio.client import Client

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.events import decode_event
from contracts.project_book import ProjectBook
from contracts.projects import StudioEvent
from services.runtime.nats.tail import LogTail, TailError
from services.runtime.service.host import Bus

log = logging.getLogger("blendmesh.security")


class BookBehind(BlendmeshError, RuntimeError):
    """The book cannot answer as the log stands now: it did not catch up in time, could
    not follow the log, or was closed; the message says which."""


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
        self._tail: LogTail[StudioEvent] | None = None

    @property
    def tail(self) -> LogTail[StudioEvent]:
        """What follows the log into the book: wait on it (``caught_up``), or ``stop`` it."""
        if self._tail is None:
            prefix = self._bus.prefix
            self._tail = LogTail(
                "the projects book",
                self._bus.js,
                subjects.stream_name(prefix),
                subjects.studio_events(prefix),
                partial(studio_event, prefix),
                self._book.apply,
                self._timeout,
            )
        return self._tail

    async def current(self) -> ProjectBook:
        """The book, once it holds every project and lock event the log has now; else
        ``BookBehind`` saying why."""
        try:
            await self.tail.caught_up()
        except TailError as exc:
            raise BookBehind(str(exc)) from exc
        return self._book

    async def close(self) -> None:
        await self.tail.stop()


# Keyed by the connection: a Bus is a dataclass, compared by value and not hashable.
_SHARED: weakref.WeakKeyDictionary[Client, LogProjects] = weakref.WeakKeyDictionary()


def projects_of(bus: Bus) -> LogProjects:
    """The one book a connection keeps: every door on ``bus`` reads the same, and tails
    the log once."""
    found = _SHARED.get(bus.nc)
    if found is None:
        found = _SHARED[bus.nc] = LogProjects(bus)
    return found
