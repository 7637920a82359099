"""Bounded retries with exponential back-off and jitter, for transient model-call errors.

Pure: the clock, the sleep and the random source are passed in, so tests run the whole
schedule instantly and deterministically.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from contracts.errors import BlendmeshError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4  # attempts after the first
    base_delay: float = 0.5  # seconds before the first retry, doubled each time
    max_delay: float = 20.0  # no single wait is longer
    deadline: float = 90.0  # seconds from the first attempt after which nothing starts


class RetriesExhausted(BlendmeshError):
    """Every allowed attempt failed transiently; ``last`` is the final error."""

    def __init__(self, attempts: int, last: BaseException) -> None:
        super().__init__(f"gave up after {attempts} attempts")
        self.attempts = attempts
        self.last = last


def backoff_delay(
    policy: RetryPolicy, retry: int, rng: Callable[[], float], hint: float = 0.0
) -> float:
    """The wait before retry number ``retry`` (0-based): "equal jitter" exponential back-off.

    Half the exponential step is fixed and half is random, so waits grow but concurrent
    clients spread out. A server's own hint (e.g. a 429's RetryInfo) is a lower bound.
    """
    step = min(policy.max_delay, policy.base_delay * 2**retry)
    delay = step / 2 + rng() * step / 2
    return min(max(delay, hint), policy.max_delay)


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    transient: Callable[[BaseException], float | None],
    *,
    sleep: Callable[[float], Awaitable[None]],
    clock: Callable[[], float],
    rng: Callable[[], float],
    on_retry: Callable[[BaseException, int, float], None] | None = None,
) -> T:
    """Run ``call``; retry errors ``transient`` accepts, within the count and the deadline.

    ``transient(exc)`` returns None for errors that must not be retried, else the least
    wait in seconds the server asked for (0.0 when it did not say).
    """
    start = clock()
    retry = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            hint = transient(exc)
            if hint is None:
                raise
            if retry >= policy.max_retries:
                raise RetriesExhausted(retry + 1, exc) from exc
            delay = backoff_delay(policy, retry, rng, hint)
            if clock() + delay - start > policy.deadline:
                raise RetriesExhausted(retry + 1, exc) from exc
            if on_retry is not None:
                on_retry(exc, retry + 1, delay)
            await sleep(delay)
            retry += 1
