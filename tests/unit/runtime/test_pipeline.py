"""The executor's pipelined publisher: acks awaited together, a refused write raised, and
acks lost to a reconnect given up on as soon as the reconnect is seen, not after the
timeout (services/runtime/service/publishers.py)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from nats.js.errors import ServiceUnavailableError

from services.runtime.service.publishers import JetStreamPipeline
from tests.unit.test_handlers import requested


class Connection:
    def __init__(self) -> None:
        self.stats = {"reconnects": 0}


class JetStream:
    """Hands out one future per publish; the test settles them."""

    def __init__(self) -> None:
        self.acks: list[asyncio.Future[Any]] = []

    async def publish_async(self, subject: str, payload: bytes, **_: Any) -> asyncio.Future[Any]:
        self.acks.append(asyncio.get_running_loop().create_future())
        return self.acks[-1]


def pipeline() -> tuple[JetStreamPipeline, JetStream, Connection]:
    js, nc = JetStream(), Connection()
    return JetStreamPipeline(js, "bmtest", nc), js, nc  # type: ignore[arg-type]


async def test_settle_when_every_event_is_acknowledged_returns() -> None:
    events, js, _ = pipeline()
    await events.send(requested())
    await events.send(requested())
    for ack in js.acks:
        ack.set_result(object())
    await events.settle(timeout=1.0)


async def test_settle_when_jetstream_refuses_a_write_raises_its_error() -> None:
    events, js, _ = pipeline()
    await events.send(requested())
    full = ServiceUnavailableError(code=503, err_code=10023, description="insufficient resources")
    js.acks[0].set_exception(full)
    with pytest.raises(ServiceUnavailableError):
        await events.settle(timeout=1.0)


async def test_settle_when_the_connection_was_made_again_gives_up_at_once() -> None:
    events, _, nc = pipeline()
    await events.send(requested())
    nc.stats["reconnects"] += 1  # the server restarted: this ack will never come
    started = time.monotonic()
    with pytest.raises(ConnectionError, match="1 event"):
        await events.settle(timeout=30.0)
    assert time.monotonic() - started < 2.0


async def test_settle_when_a_reconnect_came_before_the_send_waits_for_the_ack() -> None:
    events, js, nc = pipeline()
    nc.stats["reconnects"] = 3  # long before: the new publish went out on the new connection
    await events.send(requested())
    asyncio.get_running_loop().call_later(0.4, js.acks[0].set_result, object())
    await events.settle(timeout=5.0)


async def test_settle_when_no_ack_comes_raises_after_the_timeout() -> None:
    events, _, _ = pipeline()
    await events.send(requested())
    with pytest.raises(TimeoutError, match=r"within 0\.3 s"):
        await events.settle(timeout=0.3)


async def test_settle_when_its_task_is_cancelled_stays_cancelled_and_drops_the_acks() -> None:
    events, js, _ = pipeline()
    await events.send(requested())
    settling = asyncio.ensure_future(events.settle(timeout=30.0))
    await asyncio.sleep(0.05)
    settling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await settling
    assert js.acks[0].cancelled()
