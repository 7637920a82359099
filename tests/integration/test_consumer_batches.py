"""The consumer loop's batch mode on a real nats-server: what is waiting is handled in one
call, in log order, and a failure never lets a later event overtake an earlier one."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from contracts import subjects
from contracts.events import AnyEvent, Event, RunRequested
from services.runtime.service.consumer import ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery
from services.runtime.service.host import Bus
from tests.integration.test_runtime_bus import _dead_letters, requested

pytestmark = pytest.mark.integration

Items = Sequence[tuple[AnyEvent, Delivery]]


class Recorder:
    """A batch handler that keeps every call's runs, and fails as told."""

    def __init__(self, fail_while: int = 0, poison: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.applied: list[str] = []
        self._fail_while = fail_while  # the first calls that fail
        self._poison = poison  # a run whose presence fails every call

    async def __call__(self, items: Items) -> Sequence[Event]:
        runs = [e.run_id for e, _ in items if isinstance(e, RunRequested)]
        self.calls.append(runs)
        if len(self.calls) <= self._fail_while or self._poison in runs:
            raise RuntimeError("the store is busy")
        self.applied += runs
        return []


async def _single(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
    raise AssertionError("batch mode never calls the single-message handler")


async def _publish(bus: Bus, count: int) -> list[str]:
    runs = [f"run{i}" for i in range(count)]
    for run in runs:
        await bus.publisher.publish(requested(run, f"e-{run}"))
    return runs


async def _consume(bus: Bus, handler: Recorder, until: int, max_deliver: int = 3) -> None:
    spec = ConsumerSpec(
        durable="batched",
        filter_subjects=[subjects.any_run("bmtest", "requested")],
        handler=_single,
        batch=4,
        batch_handler=handler,
        max_ack_pending=4,
        max_deliver=max_deliver,
        backoff_cap=0.05,
        ack_wait=5,
    )
    loop = ConsumerLoop(bus.js, bus.publisher, "bmtest", spec)
    await loop.start()
    try:
        deadline = asyncio.get_running_loop().time() + 20
        while asyncio.get_running_loop().time() < deadline:
            info = await bus.js.consumer_info(subjects.stream_name("bmtest"), "batched")
            if info.ack_floor.stream_seq >= until and info.num_ack_pending == 0:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"the consumer did not acknowledge up to {until}")
    finally:
        await loop.stop()


async def test_batch_when_messages_wait_handles_them_together_in_order(bus: Bus) -> None:
    runs = await _publish(bus, 10)
    handler = Recorder()
    await _consume(bus, handler, until=10)
    assert handler.applied == runs
    assert max(len(call) for call in handler.calls) > 1
    assert all(len(call) <= 4 for call in handler.calls)


async def test_batch_when_the_handler_fails_retries_in_place_and_keeps_the_order(
    bus: Bus,
) -> None:
    runs = await _publish(bus, 6)
    handler = Recorder(fail_while=2)
    await _consume(bus, handler, until=6)
    assert handler.applied == runs
    assert handler.calls[0] == handler.calls[1] == handler.calls[2]  # the same batch again
    info = await bus.js.stream_info(
        subjects.stream_name("bmtest"), subjects_filter="bmtest.deadletter.>"
    )
    assert not info.state.subjects  # nothing was dead-lettered


async def test_batch_when_one_event_always_fails_dead_letters_it_and_applies_the_rest(
    bus: Bus,
) -> None:
    runs = await _publish(bus, 4)
    handler = Recorder(poison="run1")
    await _consume(bus, handler, until=4)
    assert handler.applied == [r for r in runs if r != "run1"]
    letters = await _dead_letters(bus)
    assert [(d.consumer, d.stream_seq) for d in letters] == [("batched", 2)]
    assert "gave up after 3 attempts: RuntimeError: the store is busy" in letters[0].reason


async def test_batch_when_a_message_is_undecodable_dead_letters_it_where_it_stands(
    bus: Bus,
) -> None:
    await bus.publisher.publish(requested("run0", "e-run0"))
    await bus.js.publish(subjects.run_events("bmtest", "bad", "requested"), b"{not json")
    await bus.publisher.publish(requested("run2", "e-run2"))
    handler = Recorder()
    await _consume(bus, handler, until=3)
    assert handler.applied == ["run0", "run2"]
    letters = await _dead_letters(bus)
    assert [d.stream_seq for d in letters] == [2]
    assert letters[0].reason.startswith("undecodable message")


async def test_loop_when_its_connection_closes_ends_saying_so_in_one_line(
    nats_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A service torn down half-started closes its connection under a running loop.
    own = await Bus.open(nats_url, "bmtest", "closing")
    spec = ConsumerSpec(
        durable="closing",
        filter_subjects=[subjects.any_run("bmtest", "requested")],
        handler=_single,
    )
    loop = ConsumerLoop(own.js, own.publisher, "bmtest", spec)
    await loop.start()
    await own.close()
    error = await asyncio.wait_for(loop.failed(), 15)
    assert type(error).__name__ == "ConnectionClosedError"
    ended = [r for r in caplog.records if "the consumer loop ended" in r.getMessage()]
    assert len(ended) == 1
    assert ended[0].exc_info is None  # a sentence, not a traceback
    await loop.stop()
