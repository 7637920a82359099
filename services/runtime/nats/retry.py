"""Waiting with a deadline: the one loop that tries, pauses and tries again.

Two shapes of wait recur across blendmesh. ``until`` runs an attempt that fails while
what it needs is not there yet (a server that does not listen, credentials not written
yet) and raises ``GaveUp``, which names what was awaited, for how long, and the last
failure. ``poll`` looks at something until it is as wanted (an index that caught up, a
file that appeared, a fresh preview) and hands back the last look either way: what a
caller does with a look that never came right differs (an error of its own, a stale
value, a retry later), so it decides.

Both run on the event loop's clock, pause between tries (doubling up to ``longest``
when asked), never sleep past the deadline and make their last try at it, so a wait of
``w`` seconds is ``w`` plus at most one try. An attempt bounds its own duration: it is
never cut short here, since half a connect can leave more behind than a slow one.
Cancellation always goes through: it is never taken for a failed try.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from contracts.errors import BlendmeshError

T = TypeVar("T")

RetryOn = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]


class Clock(Protocol):
    """What a wait reads the time from and pauses with; the running loop's by default."""

    def time(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class LoopClock:
    """The running event loop's clock (monotonic), and ``asyncio.sleep``."""

    def time(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class GaveUp(BlendmeshError, TimeoutError):
    """``until`` still failed at its deadline; ``cause`` is the last attempt's error."""

    def __init__(self, what: str, wait: float, attempts: int, cause: BaseException) -> None:
        said = str(cause) or type(cause).__name__
        super().__init__(
            f"waited {wait:g} s for {what} ({attempts} attempts); the last one failed: {said}"
        )
        self.what = what
        self.wait = wait
        self.attempts = attempts
        self.cause = cause


class _Pauses:
    """The pauses of one wait: ``first``, doubling up to ``longest``, none past the deadline."""

    def __init__(self, wait: float, first: float, longest: float | None, clock: Clock) -> None:
        if wait < 0 or first <= 0 or (longest is not None and longest < first):
            raise ValueError(
                f"a wait needs wait >= 0 and 0 < pause <= longest (got {wait}, {first}, {longest})"
            )
        self._clock = clock
        self._deadline = clock.time() + wait
        self._next = first
        self._longest = first if longest is None else longest

    async def another(self) -> bool:
        """Pause before the next try; False when the deadline has come and none is left."""
        left = self._deadline - self._clock.time()
        if left <= 0:
            return False
        await self._clock.sleep(min(self._next, left))
        self._next = min(self._next * 2, self._longest)
        return True


def _retried(exc: BaseException, retry_on: RetryOn) -> bool:
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
        return False
    if isinstance(retry_on, type | tuple):
        return isinstance(exc, retry_on)
    return retry_on(exc)


async def until(
    what: str,
    attempt: Callable[[], Awaitable[T]],
    wait: float,
    *,
    pause: float = 0.1,
    longest: float | None = None,
    retry_on: RetryOn = Exception,
    clock: Clock | None = None,
) -> T:
    """What ``attempt`` returns once it succeeds, trying again for ``wait`` seconds while
    it fails with an error ``retry_on`` accepts (classes, or a predicate); any other error
    is raised at once. At the deadline, raise ``GaveUp`` naming ``what``."""
    pauses = _Pauses(wait, pause, longest, clock or LoopClock())
    attempts = 0
    while True:
        attempts += 1
        try:
            return await attempt()
        except BaseException as exc:
            if not _retried(exc, retry_on):
                raise
            if not await pauses.another():
                raise GaveUp(what, wait, attempts, exc) from exc


async def poll(
    look: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    wait: float,
    *,
    pause: float = 0.1,
    longest: float | None = None,
    clock: Clock | None = None,
) -> T:
    """The first thing ``look`` returns that is ``done``, looking again for ``wait``
    seconds; else its last look at the deadline. Errors of ``look`` are raised at once."""
    pauses = _Pauses(wait, pause, longest, clock or LoopClock())
    while True:
        seen = await look()
        if done(seen) or not await pauses.another():
            return seen
