"""How a run's follower explains a run that does not move: which service it waits for,
and whether any instance of it answers (``services/doors/core/waiting.py`` words it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nats.errors import Error as NatsError

from contracts.events import AnyEvent, event_kind
from services.doors.core import waiting

# How many instances of a role answer a ping now (``services/runtime/service/health.py``).
Presence = Callable[[str], Awaitable[int]]
# What the instances of a role say is wrong with their work now (their STATS' problems).
Problems = Callable[[str], Awaitable[list[str]]]


@dataclass
class Watch:
    """How a follower explains a run that does not move: after ``stall_after`` seconds
    without an event it asks how many instances of the service the run waits for answer
    (``presence``) and says so through ``notice`` when none does, or what they say is
    wrong (``problems``: a store that refuses their writes) when they do (``waiting.py``
    beside this)."""

    presence: Presence
    notice: Callable[[str], None]
    problems: Problems | None = None
    stall_after: float = 3.0
    slow_after: float = 30.0


class Waiting:
    """What one follower found out about the service its run waits for."""

    def __init__(self, run_id: str, watch: Watch | None) -> None:
        self.run_id = run_id
        self.watch = watch
        self.moved = time.monotonic()
        self.told: set[tuple[str, int, str]] = set()
        self.absent: str | None = None  # the role found missing, until the run moves
        self.trouble: str | None = None  # what a role it waits for said is wrong, until then

    def timed_out(self, events: list[AnyEvent], timeout: float) -> str:
        """Why a follower gave up: the time, and the missing service when one is."""
        text = f"no result within {timeout:g} s for run {self.run_id}"
        if self.absent is not None:
            after = event_kind(events[-1]) if events else "its request"
            text += "; " + waiting.missing(self.run_id, self.absent, after)
        elif self.trouble is not None:
            text += "; " + self.trouble
        return text + f"; check it later with `blendmesh audit {self.run_id}`"

    def moved_now(self) -> None:
        self.moved, self.absent, self.trouble = time.monotonic(), None, None

    async def check(self, events: list[AnyEvent]) -> None:
        watch, idle = self.watch, time.monotonic() - self.moved
        roles = waiting.needs(events)
        if watch is None or not roles or idle < watch.stall_after:
            return
        after = event_kind(events[-1]) if events else "its request"
        try:
            counts, said = await asyncio.gather(
                asyncio.gather(*(watch.presence(role) for role in roles)), self._problems(roles)
            )
        except (NatsError, TimeoutError, OSError):  # a failed ping says nothing of the run
            return
        absent = [role for role, count in zip(roles, counts, strict=True) if count == 0]
        self.absent = absent[0] if absent else None
        self.trouble = None
        if absent:
            text = waiting.missing(self.run_id, absent[0], after)
            self._tell((absent[0], len(events), "missing"), text)
        elif said is not None:
            self.trouble = waiting.troubled(self.run_id, said[0], after, said[1])
            self._tell((said[0], len(events), "trouble"), self.trouble)
        elif idle >= watch.slow_after:
            text = waiting.stalled(self.run_id, roles[0], after, counts[0], idle)
            self._tell((roles[0], len(events), "slow"), text)

    async def _problems(self, roles: tuple[str, ...]) -> tuple[str, str] | None:
        """The first role the run waits for that says something is wrong, and what."""
        if self.watch is None or self.watch.problems is None:
            return None
        said = await asyncio.gather(*(self.watch.problems(role) for role in roles))
        return next(((role, p[0]) for role, p in zip(roles, said, strict=True) if p), None)

    def _tell(self, key: tuple[str, int, str], text: str) -> None:
        if key not in self.told and self.watch is not None:
            self.told.add(key)
            self.watch.notice(text)
