"""The consumer loop's series on a real nats-server: redeliveries, dead letters by why,
the lag behind the message in hand and each handler's time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest
from prometheus_client.parser import text_string_to_metric_families

from contracts.events import AnyEvent, Event
from services.runtime.service import metrics
from services.runtime.service.consumer_spec import Delivery
from services.runtime.service.errors import Reject, Retry
from services.runtime.service.host import Bus
from tests.integration.test_runtime_bus import _loop, requested

pytestmark = pytest.mark.integration

DURABLE = "planner"  # a consumer blendmesh runs, so its series are labelled with its name


def sample(name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return 0.0


def letters(reason: str) -> float:
    return sample("blendmesh_dead_letters_total", consumer=DURABLE, reason=reason)


async def until(moved: Callable[[], bool], within: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not moved():
        assert asyncio.get_running_loop().time() < deadline, "the series did not move"
        await asyncio.sleep(0.05)


async def test_consumer_when_messages_fail_counts_redeliveries_and_dead_letters(
    bus: Bus,
) -> None:
    before = {why: letters(why) for why in ("rejected", "undecodable", "exhausted")}
    redelivered = sample("blendmesh_consumer_redeliveries_total", consumer=DURABLE)
    handled = sample(
        "blendmesh_stage_duration_seconds_count", consumer=DURABLE, event="run.requested"
    )

    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        run_id = getattr(event, "run_id", "")
        if run_id == "rejected":
            raise Reject("not for us")
        if run_id == "later" and delivery.num_delivered < 2:
            raise Retry("not yet", delay=0.05)
        if run_id == "broken":
            raise RuntimeError("boom")
        return []

    loop = await _loop(bus, handler, durable=DURABLE, max_deliver=2, backoff_cap=0.05)
    try:
        await bus.publisher.publish(requested("rejected", "e1"))
        await bus.publisher.publish(requested("later", "e2"))
        await bus.js.publish("bmtest.run.bad.requested", b"{not json")
        await bus.publisher.publish(requested("broken", "e3"))
        await until(
            lambda: (
                letters("exhausted") > before["exhausted"]
                and sample("blendmesh_consumer_redeliveries_total", consumer=DURABLE)
                >= redelivered + 2
            )
        )
    finally:
        await loop.stop()
    assert letters("rejected") == before["rejected"] + 1
    assert letters("undecodable") == before["undecodable"] + 1
    assert letters("exhausted") == before["exhausted"] + 1
    # "later" once, "broken" once before it was given up
    after = sample("blendmesh_consumer_redeliveries_total", consumer=DURABLE)
    assert after == redelivered + 2
    assert (
        sample("blendmesh_stage_duration_seconds_count", consumer=DURABLE, event="run.requested")
        >= handled + 5
    )  # rejected, later twice, broken twice
    assert sample("blendmesh_consumer_lag_messages", consumer=DURABLE) == 0


async def test_consumer_when_a_durable_is_unknown_labels_it_other(bus: Bus) -> None:
    before = sample("blendmesh_consumer_redeliveries_total", consumer="other")

    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        if delivery.num_delivered < 2:
            raise Retry("again", delay=0.05)
        return []

    loop = await _loop(bus, handler, durable="x-made-up")
    try:
        await bus.publisher.publish(requested("r", "e9"))
        await until(
            lambda: sample("blendmesh_consumer_redeliveries_total", consumer="other") > before
        )
    finally:
        await loop.stop()
    assert sample("blendmesh_consumer_redeliveries_total", consumer="x-made-up") == 0
