"""The audit stream against a real nats-server: the records the audit views hold, as
events a subscriber filters by user, scene or run and replays from the start."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from nats.js.api import DeliverPolicy

from contracts import subjects
from contracts.audit import AuditRecorded, decode_audit
from contracts.events import (
    AnyEvent,
    GatesEvaluated,
    OperationFailed,
    OperationRolledBack,
    OperationSucceeded,
    decode_event,
)
from contracts.queries import AuditRecord
from services.audit import app as audit_app
from services.audit.client import query_run, rebuild
from services.audit.stream import JetStreamAuditPublisher
from services.runtime.service.host import Bus, ConsumerService
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration

HISTORY = Path(__file__).parent.parent / "fixtures" / "run_history_ring.jsonl"
PREFIX = "bmtest"
RECORDING = (OperationSucceeded, OperationFailed, OperationRolledBack, GatesEvaluated)
RECORDS = 7  # audit records of the recorded history (tests/unit/audit/test_audit_projections.py)


def history() -> list[AnyEvent]:
    return [decode_event(line.encode()) for line in HISTORY.read_text().splitlines()]


@pytest.fixture
async def audit(settings: Settings, bus: Bus) -> AsyncIterator[ConsumerService]:
    service = await audit_app.start(settings, bus)
    try:
        yield service
    finally:
        await service.stop()


async def replay(bus: Bus, subject: str, expected: int) -> list[AuditRecorded]:
    """Every record on ``subject`` from the start of the stream, as a late subscriber
    reads them: an ordered consumer, delivering all."""
    sub = await bus.js.subscribe(
        subject,
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
        stream=subjects.audit_stream_name(PREFIX),
    )
    records: list[AuditRecorded] = []
    try:
        while len(records) < expected:
            msg = await sub.next_msg(timeout=10)
            records.append(decode_audit(msg.data))
        with pytest.raises(TimeoutError):  # and nothing more
            await sub.next_msg(timeout=0.5)
    finally:
        await sub.unsubscribe()
    return records


async def published(bus: Bus, expected: int = RECORDS) -> int:
    """How many records the audit stream holds, once the audit service has caught up."""
    for _ in range(100):
        info = await bus.js.stream_info(subjects.audit_stream_name(PREFIX))
        if info.state.messages >= expected:
            return info.state.messages
        await asyncio.sleep(0.1)
    return info.state.messages


def as_rows(records: list[AuditRecorded]) -> list[AuditRecord]:
    fields = [{k: v for k, v in msgspec.to_builtins(r).items() if k != "type"} for r in records]
    return msgspec.convert(fields, list[AuditRecord])


async def test_late_subscriber_when_it_replays_gets_the_records_audit_shows(
    bus: Bus, audit: ConsumerService
) -> None:
    for event in history():
        await bus.publisher.publish(event)
    assert await published(bus) == RECORDS
    every = await replay(bus, subjects.audit_records(PREFIX), RECORDS)
    for run_id in ("run-ring", "run-mat"):
        detail = await query_run(bus.nc, PREFIX, run_id)
        mine = await replay(
            bus, subjects.audit_records(PREFIX, run_id=run_id), len(detail.audit_records)
        )
        assert as_rows(mine) == detail.audit_records
        assert [r for r in every if r.run_id == run_id] == mine
    # spec 002 §9 fields travel with the record
    first = every[0]
    assert (first.decision, first.approval_id, first.scene_id) == (
        "require_approval",
        "appr-1",
        "shot010",
    )
    assert first.input_hash is not None and first.input_hash.startswith("sha256:")


async def test_audit_stream_when_filtered_by_user_or_scene_gets_only_those(
    bus: Bus, audit: ConsumerService
) -> None:
    for event in history():
        await bus.publisher.publish(event)
    assert await published(bus) == RECORDS
    by_user = await replay(bus, subjects.audit_records(PREFIX, user="ana"), RECORDS)
    assert {r.user for r in by_user} == {"ana"}
    by_scene = await replay(bus, subjects.audit_records(PREFIX, scene_id="shot010"), RECORDS)
    assert by_scene == by_user
    await replay(bus, subjects.audit_records(PREFIX, user="ben"), 0)


async def test_audit_stream_when_service_restarts_and_rebuilds_holds_no_duplicates(
    bus: Bus, settings: Settings
) -> None:
    first = history()[:10]
    recorded = sum(isinstance(e, RECORDING) for e in first)
    service = await audit_app.start(settings, bus)
    try:
        for event in first:
            await bus.publisher.publish(event)
        # Stopped once caught up: a message in flight would come back only after ack_wait.
        assert await published(bus, recorded) == recorded
    finally:
        await service.stop()
    service = await audit_app.start(settings, bus)  # same database, same durable consumer
    try:
        for event in history()[10:]:
            await bus.publisher.publish(event)
        assert await published(bus) == RECORDS
        await rebuild(bus.nc, PREFIX)
        await asyncio.sleep(0.5)
        info = await bus.js.stream_info(subjects.audit_stream_name(PREFIX))
        assert info.state.messages == RECORDS
        ids = [r.event_id for r in await replay(bus, subjects.audit_records(PREFIX), RECORDS)]
        assert len(set(ids)) == RECORDS
    finally:
        await service.stop()


@pytest.mark.clause("002-§audit.9")
async def test_audit_record_when_redelivered_is_published_once(
    bus: Bus, audit: ConsumerService
) -> None:
    events = history()
    for event in events:
        await bus.publisher.publish(event)
    assert await published(bus) == RECORDS
    # The same record again, as a redelivery after a crash would publish it.
    again = (await replay(bus, subjects.audit_records(PREFIX, run_id="run-mat"), 3))[0]
    ack = await bus.js.publish(
        subjects.audit_records(PREFIX, "ana", "shot010", "run-mat"),
        msgspec.json.encode(again),
        headers={"Nats-Msg-Id": f"audit-{again.event_id}"},
    )
    assert ack.duplicate
    info = await bus.js.stream_info(subjects.audit_stream_name(PREFIX))
    assert info.state.messages == RECORDS


async def test_audit_records_when_a_stored_batch_is_published_again_are_stored_once(
    bus: Bus, audit: ConsumerService
) -> None:
    for event in history():
        await bus.publisher.publish(event)
    assert await published(bus) == RECORDS
    every = await replay(bus, subjects.audit_records(PREFIX), RECORDS)
    batched = [
        msgspec.structs.replace(every[i % RECORDS], event_id=f"batch-{i}") for i in range(12)
    ]
    publisher = JetStreamAuditPublisher(bus.js, PREFIX, bus.nc)
    await publisher.publish_many(batched[:8])  # one atomic batch
    # A redelivered stretch publishes its records again, with some new behind them: the
    # server refuses that batch whole (10201) and the records go again one by one.
    await publisher.publish_many(batched)
    stream = subjects.audit_stream_name(PREFIX)
    info = await bus.js.stream_info(stream)
    assert info.state.messages == RECORDS + 12
    stored = await replay(bus, subjects.audit_records(PREFIX), RECORDS + 12)
    assert [r.event_id for r in stored[RECORDS:]] == [f"batch-{i}" for i in range(12)]
    first = await bus.js.get_msg(stream, RECORDS + 1)
    assert (first.headers or {}).get("Nats-Batch-Id")
