"""The projects book, kept current by tailing the log's project and lock events.

Like ``owners.py``: ordered consumers apply ``<prefix>.project.>`` and ``<prefix>.lock.>``
to a ``ProjectBook`` (contracts/project_book.py), and a lookup first waits until the book
holds the newest such event in the log, so a member added a moment ago through another
door is a member here too. The doors and the policy service each keep one.
"""

from __future__ import annotations

import logging
import weakref

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.events import decode_event
from contracts.project_book import ProjectBook
from contracts.projects import StudioEvent
from services.runtime.nats.tail import LogTail
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
        self._tail: LogTail | None = None

    async def current(self) -> ProjectBook:
        """The book, once it holds every project and lock event the log has now."""
        if await self._follow().caught_up(self._timeout):
            raise BookBehind("the projects book is behind the log; try again")
        return self._book

    async def close(self) -> None:
        if self._tail is not None:
            await self._tail.close()

    def _follow(self) -> LogTail:
        if self._tail is None:
            prefix = self._bus.prefix
            follows = subjects.studio_events(prefix)
            self._tail = LogTail(self._bus.js, subjects.stream_name(prefix), follows, self._handle)
        return self._tail

    def _handle(self, follows: str, msg: Msg) -> int | None:
        prefix = self._bus.prefix
        try:
            metadata = msg.metadata
        except ValueError:  # not a JetStream delivery at all
            return None
        if metadata.stream != subjects.stream_name(prefix):
            return None
        event = studio_event(prefix, msg.subject, msg.data)
        if event is not None:
            self._book.apply(event)
        return metadata.sequence.stream


# Keyed by the connection: a Bus is a dataclass, compared by value and not hashable.
_SHARED: weakref.WeakKeyDictionary[Client, LogProjects] = weakref.WeakKeyDictionary()


def projects_of(bus: Bus) -> LogProjects:
    """The one book a connection keeps: every door on ``bus`` reads the same, and tails
    the log once."""
    found = _SHARED.get(bus.nc)
    if found is None:
        found = _SHARED[bus.nc] = LogProjects(bus)
    return found
