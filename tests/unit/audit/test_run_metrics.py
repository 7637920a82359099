"""The run metrics the audit consumer records: what each event measures (pure), and that a
run is counted once, only after its events committed, however often they are delivered."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families

from contracts import events as ev
from contracts.failures import failure
from services.audit.handlers import AuditHandlers
from services.audit.projections import Row, RunView, project
from services.audit.run_metrics import Measure, RunMetrics, measure
from services.audit.store import SqliteStore
from services.audit.tables import Batch
from services.runtime.service import metrics
from services.runtime.service.consumer_spec import Delivery
from tests.unit.audit.test_audit_projections import HISTORY, MemoryStore

T0 = 1767225600.0  # the recorded history's first event


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """The audit store port in memory, and the real SQLite adapter."""
    s = MemoryStore() if request.param == "memory" else await SqliteStore.open(tmp_path / "a.db")
    try:
        yield s
    finally:
        await s.close()


def history() -> list[ev.AnyEvent]:
    return [ev.decode_event(line.encode()) for line in HISTORY.read_text().splitlines()]


def sample(name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return 0.0


def runs(outcome: str, code: str) -> float:
    return sample("blendmesh_runs_total", outcome=outcome, error_code=code)


def waiting() -> float:
    return sample("blendmesh_approvals_waiting")


def measured(events: list[ev.AnyEvent]) -> list[Measure]:
    """What each event measures, each on the run row the projection built before it."""
    rows: dict[str, Row] = {}
    out = []
    for seq, event in enumerate(events, start=1):
        run = rows.get(event.run_id) if isinstance(event, ev.RunEvent) else None
        out.append(measure(event, run))
        for change in project(event, seq, RunView(run=run)):
            if change.table == "runs":
                rows[change.row["run_id"]] = change.row
    return out


def test_measure_when_history_replayed_ends_each_run_once_with_its_duration() -> None:
    ended = [(m.ended, m.error_code, m.run_seconds) for m in measured(history()) if m.ended]
    assert ended == [("completed", None, 3.75), ("failed", "TOOL_ERROR", 2.5)]


def test_measure_when_approval_asked_and_resolved_waits_and_stops_waiting() -> None:
    found = measured(history())
    kinds = [ev.event_kind(e) for e in history()]
    assert found[kinds.index("run.approval_requested")].waiting == 1
    resolved = found[kinds.index("run.approval_resolved")]
    assert resolved.waited == pytest.approx(0.25)
    # The run waits until the policy's answer to the resolution moves it on.
    assert found[kinds.index("run.approved")].waiting == -1
    assert sum(m.waiting for m in found) == 0


def test_measure_when_end_is_published_again_counts_nothing_more() -> None:
    events = history()
    again = msgspec.structs.replace(events[15], event_id="again", at=T0 + 99)
    assert isinstance(events[15], ev.RunCompleted)
    assert measured([*events[:16], again])[-1] == Measure()


def test_measure_when_run_fails_without_a_request_lasts_zero() -> None:
    failed = ev.RunFailed(
        event_id="f", at=T0, run_id="r", request_id="r", thread_id="r", user="u",
        failure=failure("REQUEST_UNREADABLE", "send a valid request"), message="unreadable",
    )  # fmt: skip
    assert measure(failed, None) == Measure(
        ended="failed", error_code="REQUEST_UNREADABLE", run_seconds=0.0
    )


def test_measure_when_event_is_a_dead_letter_measures_nothing() -> None:
    letter = next(e for e in history() if isinstance(e, ev.DeadLettered))
    assert measure(letter, None) == Measure()


def deliveries(events: list[ev.AnyEvent]) -> list[tuple[ev.AnyEvent, Delivery]]:
    return [
        (event, Delivery(stream_seq=seq, num_delivered=1, subject="bmtest.run.x"))
        for seq, event in enumerate(events, start=1)
    ]


async def test_audit_when_history_delivered_twice_counts_each_run_once(store: Any) -> None:
    before = runs("completed", "none"), runs("failed", "TOOL_ERROR")
    measuring = RunMetrics()
    handlers = AuditHandlers(store, None, measuring)
    items = deliveries(history())
    await handlers.on_events(items[:10])
    await handlers.on_events(items[5:])  # a redelivery overlapping what committed
    for event, delivery in items:  # and every event once more, one by one
        await handlers.on_event(event, delivery)
    assert runs("completed", "none") == before[0] + 1
    assert runs("failed", "TOOL_ERROR") == before[1] + 1
    await measuring.close()


class FailsOnce(MemoryStore):
    """A store whose first batch is projected and then not committed (a locked file)."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    async def apply_many(self, batch: Batch) -> list[Row]:
        if not self.failed:
            self.failed = True
            for _, run_id, write in batch:
                write(RunView(run=self.views["runs"].get(run_id)))
            raise sqlite3.OperationalError("database is locked")
        return await super().apply_many(batch)


async def test_audit_when_batch_does_not_commit_counts_it_only_when_retried() -> None:
    before = runs("completed", "none")
    handlers = AuditHandlers(FailsOnce(), None, RunMetrics())
    items = deliveries(history())
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        await handlers.on_events(items)
    assert runs("completed", "none") == before
    await handlers.on_events(items)
    assert runs("completed", "none") == before + 1


async def test_approvals_gauge_when_service_stops_gives_its_share_back() -> None:
    start = waiting()
    first, second = RunMetrics(), RunMetrics()
    first.start(3)  # the runs its views held waiting at start
    handlers = AuditHandlers(MemoryStore(), None, second)
    items = deliveries(history())
    await handlers.on_events(items[:4])  # up to the approval request
    assert waiting() == start + 4
    await first.close()
    assert waiting() == start + 1
    await handlers.on_events(items[4:])  # resolved and approved
    assert waiting() == start
    await second.close()
    assert waiting() == start


async def test_audit_when_no_metrics_given_measures_nothing() -> None:
    before = runs("completed", "none")
    handlers = AuditHandlers(MemoryStore())  # as `audit rebuild` replays
    await handlers.on_events(deliveries(history()))
    assert runs("completed", "none") == before
