"""The audit service against a real nats-server: live views, queries, rebuild, restarts."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from contracts import subjects
from contracts.events import AnyEvent, RunRequested, decode_event
from contracts.queries import Reply
from contracts.request_limits import MAX_PROMPT
from services.audit import app as audit_app
from services.audit.client import (
    AuditError,
    AuditUnavailable,
    query_dump,
    query_run,
    query_runs,
    rebuild,
)
from services.audit.handlers import AuditHandlers
from services.audit.queries import QueryResponders
from services.audit.store import SqliteStore
from services.runtime.nats.durables import DurableConsumer
from services.runtime.service.host import Bus, ConsumerService
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration

HISTORY = Path(__file__).parent.parent / "fixtures" / "run_history_ring.jsonl"


def history() -> list[AnyEvent]:
    return [decode_event(line.encode()) for line in HISTORY.read_text().splitlines()]


@pytest.fixture
async def audit(settings: Settings, bus: Bus) -> AsyncIterator[ConsumerService]:
    service = await audit_app.start(settings, bus)
    try:
        yield service
    finally:
        await service.stop()


async def publish_all(bus: Bus, events: list[AnyEvent]) -> None:
    for event in events:
        await bus.publisher.publish(event)


async def test_query_run_when_events_just_published_reads_states_and_records(
    bus: Bus, audit: ConsumerService
) -> None:
    await publish_all(bus, history())
    detail = await query_run(bus.nc, "bmtest", "run-mat")  # no sleep: reads its own writes
    assert (detail.run.state, detail.run.error_code, detail.run.scene_hash) == (
        "failed",
        "TOOL_ERROR",
        "h4",
    )
    assert {a.operation_id: a.state for a in detail.actions} == {
        "gold": "failed",
        "scale": "completed",
    }
    assert [
        (r.operation_id, r.status, r.scene_hash_before, r.scene_hash_after)
        for r in detail.audit_records
    ] == [
        ("scale", "succeeded", "h3", "h4"),
        ("gold", "failed", "h4", "h5-partial"),
        ("gold", "rolled_back", "h5-partial", "h4"),
    ]
    assert all(r.request_id == "gem-req-mat" and r.mcp_call_id for r in detail.audit_records)
    assert [t.type for t in detail.timeline][-2:] == ["run.executed", "run.failed"]
    ring = await query_run(bus.nc, "bmtest", "run-ring")
    assert ring.run.state == "completed" and len(ring.audit_records) == 4
    assert next(a for a in ring.actions if a.operation_id == "drop_cube").decision == (
        "require_approval"
    )


async def test_query_runs_when_two_runs_lists_newest_first(
    bus: Bus, audit: ConsumerService
) -> None:
    await publish_all(bus, history())
    runs = await query_runs(bus.nc, "bmtest")
    assert [(r.run_id, r.state) for r in runs] == [("run-mat", "failed"), ("run-ring", "completed")]
    assert [r.run_id for r in await query_runs(bus.nc, "bmtest", limit=1)] == ["run-mat"]


async def test_rebuild_when_views_are_live_reproduces_the_dump_exactly(
    bus: Bus, audit: ConsumerService, settings: Settings
) -> None:
    await publish_all(bus, history())
    live = await query_dump(bus.nc, "bmtest")
    reply = await rebuild(bus.nc, "bmtest")
    assert reply.last_seq == len(history())
    assert reply.counts == {
        "runs": 2,
        "actions": 6,
        "audit_records": 7,
        "timeline": len(history()) - 1,
        "dead_letters": 1,
    }
    assert await query_dump(bus.nc, "bmtest") == live
    assert not settings.audit_db.with_name(settings.audit_db.name + ".rebuild").exists()
    # The live consumer keeps writing into the swapped-in file.
    later = msgspec.structs.replace(history()[0], event_id="again", run_id="run-new")
    await bus.publisher.publish(later)
    assert (await query_run(bus.nc, "bmtest", "run-new")).run.state == "queued"


async def test_rebuild_when_events_arrive_meanwhile_loses_none(
    bus: Bus, audit: ConsumerService
) -> None:
    await publish_all(bus, history())
    extra = [
        msgspec.structs.replace(history()[0], event_id=f"x{i}", run_id=f"run-x{i}")
        for i in range(30)
    ]
    await asyncio.gather(rebuild(bus.nc, "bmtest"), publish_all(bus, extra))
    dump = await query_dump(bus.nc, "bmtest")
    assert len(dump["runs"]) == 32
    assert dump["tracking"] == [{"last_seq": len(history()) + len(extra)}]
    await rebuild(bus.nc, "bmtest")
    assert await query_dump(bus.nc, "bmtest") == dump


async def test_query_when_payload_malformed_replies_with_what_was_wrong(
    bus: Bus, audit: ConsumerService
) -> None:
    for name, payload, expected in [
        ("run", b"{not json", "malformed run query"),
        ("run", b"{}", "run_id"),
        ("runs", b'{"limit": "ten"}', "$.limit"),
        ("runs", b'{"limit": 0}', ">= 1"),
        ("rebuild", b'{"now": true}', "unknown field"),
    ]:
        msg = await bus.nc.request(subjects.query("bmtest", name), payload, timeout=10)
        reply = msgspec.json.decode(msg.data, type=Reply)
        assert not reply.ok and expected in reply.error, (name, payload, reply.error)
    assert await query_runs(bus.nc, "bmtest") == []  # the responder is still alive


async def test_query_run_when_run_unknown_raises_audit_error_naming_it(
    bus: Bus, audit: ConsumerService
) -> None:
    with pytest.raises(AuditError, match="no run nope; `blendmesh runs` lists the known runs"):
        await query_run(bus.nc, "bmtest", "nope")


async def test_audit_app_when_restarted_on_same_db_adds_no_duplicates(
    bus: Bus, settings: Settings
) -> None:
    service = await audit_app.start(settings, bus)
    await publish_all(bus, history())
    before = await query_dump(bus.nc, "bmtest")
    await service.stop()
    # Forget the consumer's position too, so the whole log is delivered again.
    await bus.js.delete_consumer(subjects.stream_name("bmtest"), audit_app.DURABLE)
    service = await audit_app.start(settings, bus)
    try:
        assert await query_dump(bus.nc, "bmtest") == before
    finally:
        await service.stop()


async def test_client_when_no_audit_service_raises_unavailable(bus: Bus) -> None:
    with pytest.raises(AuditUnavailable, match="no audit service"):
        await query_runs(bus.nc, "bmtest")


async def test_query_when_views_lag_the_log_says_retry(bus: Bus, tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "lagging.db")  # nothing feeds it
    responders = QueryResponders(bus, store, catch_up_timeout=0.2)
    await responders.start()
    try:
        await bus.publisher.publish(history()[0])
        with pytest.raises(AuditError, match=r"behind the event log .* retry"):
            await query_runs(bus.nc, "bmtest")
    finally:
        await responders.stop()
        await store.close()


async def test_views_when_an_event_returns_after_later_ones_still_apply_it_in_log_order(
    bus: Bus, settings: Settings, tmp_path: Path
) -> None:
    # JetStream sends a message whose delivery was lost (a fetch answered by a server that
    # then died) again only after ack_wait, behind the messages that follow it. Here the
    # first event is fetched and dropped before the service starts.
    settings = dataclasses.replace(settings, ack_wait=1.0)
    store = await SqliteStore.open(tmp_path / "unused.db")
    spec = audit_app.consumers(AuditHandlers(store), settings)[0]
    await store.close()
    stream = subjects.stream_name("bmtest")
    await DurableConsumer(bus.js, stream, spec.config()).ensure()
    await publish_all(bus, history())
    lost = await bus.js.pull_subscribe_bind(durable=audit_app.DURABLE, stream=stream)
    assert [m.metadata.sequence.stream for m in await lost.fetch(1)] == [1]
    await lost.unsubscribe()

    service = await audit_app.start(settings, bus)
    try:
        live = await query_dump(bus.nc, "bmtest")
        await asyncio.sleep(2 * settings.ack_wait)  # the lost one is back by now
        assert await query_dump(bus.nc, "bmtest") == live
        await rebuild(bus.nc, "bmtest")  # the log replayed in order: the truth
        assert await query_dump(bus.nc, "bmtest") == live
    finally:
        await service.stop()


async def test_query_runs_when_prompts_were_logged_huge_answers_with_them_cut(
    bus: Bus, audit: ConsumerService
) -> None:
    # Before the doors bounded prompts, a user could log 900 KB ones; two of them made
    # every list of that user's runs too big for one message, and the audit said nothing.
    first = next(e for e in history() if isinstance(e, RunRequested))
    for n in range(3):
        event = msgspec.structs.replace(
            first, run_id=f"run-huge-{n}", event_id=f"huge-{n}", prompt="x" * 900_000
        )
        await bus.publisher.publish(event)
    runs = await query_runs(bus.nc, "bmtest", user=first.user)
    huge = [r for r in runs if r.run_id.startswith("run-huge-")]
    assert len(huge) == 3
    assert all(r.prompt is not None and len(r.prompt) == MAX_PROMPT for r in huge)
    assert all(r.prompt is not None and r.prompt.endswith("…") for r in huge)
