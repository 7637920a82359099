"""``until`` and ``poll``: the one wait with a deadline every hand-written loop became."""

from __future__ import annotations

import asyncio
import time

import pytest

from contracts.errors import BlendmeshError
from services.runtime.nats.retry import GaveUp, poll, until


class FakeClock:
    """Time that moves only when a wait pauses or an attempt says it took a while."""

    def __init__(self) -> None:
        self.now = 100.0
        self.pauses: list[float] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


class Failing:
    """An attempt that fails with ``errors`` in turn, the last one forever unless ``then``
    answers; each try takes ``takes`` seconds of the clock."""

    def __init__(
        self, clock: FakeClock, *errors: BaseException, then: str | None = None, takes: float = 0
    ) -> None:
        self.clock = clock
        self.errors = list(errors)
        self.then = then
        self.takes = takes
        self.started: list[float] = []

    async def __call__(self) -> str:
        self.started.append(self.clock.now)
        self.clock.now += self.takes
        if len(self.errors) > 1 or (self.errors and self.then is not None):
            raise self.errors.pop(0)
        if self.errors:
            raise self.errors[0]
        assert self.then is not None
        return self.then


async def test_until_when_the_attempt_succeeds_later_returns_its_answer() -> None:
    clock = FakeClock()
    attempt = Failing(clock, OSError("refused"), OSError("refused"), then="done")
    assert await until("the server", attempt, 5, pause=0.5, clock=clock) == "done"
    assert len(attempt.started) == 3
    assert clock.pauses == [0.5, 0.5]


async def test_until_when_never_answered_gives_up_at_the_deadline_naming_what_and_the_cause() -> (
    None
):
    clock = FakeClock()
    attempt = Failing(clock, ConnectionRefusedError("connection refused"))
    with pytest.raises(GaveUp) as raised:
        await until("NATS at nats://x:4222", attempt, 1.2, pause=0.5, clock=clock)
    gave_up = raised.value
    # Tries at 0, 0.5, 1.0 and a last one at the deadline, 1.2: none after it.
    assert [round(t - 100.0, 6) for t in attempt.started] == [0.0, 0.5, 1.0, 1.2]
    assert clock.now == pytest.approx(101.2)
    assert isinstance(gave_up.cause, ConnectionRefusedError)
    assert gave_up.__cause__ is gave_up.cause
    assert (gave_up.what, gave_up.wait, gave_up.attempts) == ("NATS at nats://x:4222", 1.2, 4)
    assert str(gave_up) == (
        "waited 1.2 s for NATS at nats://x:4222 (4 attempts); "
        "the last one failed: connection refused"
    )
    assert isinstance(gave_up, BlendmeshError) and isinstance(gave_up, TimeoutError)


async def test_until_when_the_cause_has_no_words_names_its_kind() -> None:
    clock = FakeClock()
    with pytest.raises(GaveUp, match=r"the last one failed: TimeoutError$"):
        await until("the hello", Failing(clock, TimeoutError()), 0.1, clock=clock)


async def test_until_carries_the_last_cause_not_the_first() -> None:
    clock = FakeClock()
    attempt = Failing(clock, OSError("first"), OSError("second"), OSError("last"))
    with pytest.raises(GaveUp) as raised:
        await until("the server", attempt, 0.25, pause=0.1, clock=clock)
    assert str(raised.value.cause) == "last"


async def test_until_when_attempts_are_slow_starts_none_after_the_deadline() -> None:
    clock = FakeClock()
    attempt = Failing(clock, OSError("no answer"), takes=0.7)
    with pytest.raises(GaveUp):
        await until("the server", attempt, 1.0, pause=0.5, clock=clock)
    # The first try ends at 0.7: a pause of 0.3 reaches the deadline, where the last starts.
    assert [round(t - 100.0, 6) for t in attempt.started] == [0.0, 1.0]
    assert clock.pauses == [pytest.approx(0.3)]


async def test_until_with_no_time_tries_once() -> None:
    clock = FakeClock()
    attempt = Failing(clock, OSError("refused"))
    with pytest.raises(GaveUp) as raised:
        await until("the server", attempt, 0, clock=clock)
    assert raised.value.attempts == 1 and clock.pauses == []


async def test_until_when_an_error_is_not_retried_raises_it_at_once() -> None:
    clock = FakeClock()
    attempt = Failing(clock, PermissionError("refused login"))
    with pytest.raises(PermissionError, match="refused login"):
        await until("the server", attempt, 10, retry_on=(ConnectionError, KeyError), clock=clock)
    assert len(attempt.started) == 1 and clock.pauses == []


async def test_until_with_a_predicate_retries_only_what_it_accepts() -> None:
    clock = FakeClock()
    attempt = Failing(clock, ValueError("not yet"), ValueError("wrong"), then="done")
    with pytest.raises(ValueError, match="wrong"):
        await until(
            "the bucket",
            attempt,
            10,
            retry_on=lambda exc: str(exc) == "not yet",
            clock=clock,
        )
    assert len(attempt.started) == 2


async def test_until_pauses_double_up_to_longest_and_never_past_the_deadline() -> None:
    clock = FakeClock()
    with pytest.raises(GaveUp):
        await until("JetStream", Failing(clock, OSError()), 3, pause=0.25, longest=1, clock=clock)
    assert clock.pauses == [0.25, 0.5, 1, 1, pytest.approx(0.25)]
    assert sum(clock.pauses) == pytest.approx(3)


async def test_until_when_cancelled_while_pausing_stops_trying() -> None:
    tries = 0

    async def refused() -> None:
        nonlocal tries
        tries += 1
        raise ConnectionRefusedError

    waiting = asyncio.create_task(until("the server", refused, 30, pause=0.01))
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    seen = tries
    await asyncio.sleep(0.05)
    assert seen >= 2 and tries == seen


async def test_until_when_the_attempt_is_cancelled_never_takes_it_for_a_failure() -> None:
    clock = FakeClock()
    attempt = Failing(clock, asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        await until("the server", attempt, 10, retry_on=BaseException, clock=clock)
    assert len(attempt.started) == 1


async def test_until_on_the_loop_clock_gives_up_within_its_wait() -> None:
    async def refused() -> None:
        raise ConnectionRefusedError("refused")

    began = time.monotonic()
    with pytest.raises(GaveUp):
        await until("the server", refused, 0.2, pause=0.05)
    assert 0.2 <= time.monotonic() - began < 1.0


@pytest.mark.parametrize(("wait", "pause", "longest"), [(-1, 0.1, None), (1, 0, None), (1, 1, 0.5)])
async def test_until_when_the_wait_makes_no_sense_says_so(
    wait: float, pause: float, longest: float | None
) -> None:
    clock = FakeClock()
    with pytest.raises(ValueError, match="a wait needs"):
        await until(
            "x", Failing(clock, then="done"), wait, pause=pause, longest=longest, clock=clock
        )


async def test_poll_when_the_look_comes_right_returns_it() -> None:
    clock = FakeClock()
    looks = iter([0, 3, 7, 9])

    async def applied() -> int:
        return next(looks)

    assert await poll(applied, lambda seq: seq >= 7, 5, pause=0.02, clock=clock) == 7
    assert clock.pauses == [0.02, 0.02]


async def test_poll_when_it_never_comes_right_returns_the_last_look_at_the_deadline() -> None:
    clock = FakeClock()
    looks: list[float] = []

    async def applied() -> int:
        looks.append(clock.now - 100.0)
        return len(looks)

    assert await poll(applied, lambda seq: seq > 99, 0.5, pause=0.2, clock=clock) == 4
    assert looks == pytest.approx([0.0, 0.2, 0.4, 0.5])


async def test_poll_when_the_look_fails_raises_at_once() -> None:
    clock = FakeClock()

    async def exited() -> bool:
        raise RuntimeError("nats-server exited at start")

    with pytest.raises(RuntimeError, match="exited at start"):
        await poll(exited, bool, 10, clock=clock)
    assert clock.pauses == []


async def test_poll_when_cancelled_propagates() -> None:
    async def never() -> bool:
        return False

    waiting = asyncio.create_task(poll(never, bool, 30, pause=0.01))
    await asyncio.sleep(0.03)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
