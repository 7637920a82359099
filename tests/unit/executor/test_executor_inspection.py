"""The run part of the inspection artifact: what the executor ran and who approved it."""

from __future__ import annotations

from pathlib import Path

from contracts import inspection
from contracts.events import AnyEvent, ApprovalRequested, Approved, Event, Executed
from services.executor.domain.inspection import run_record
from services.executor.handlers import ExecutorHandlers
from tests.support.fake_bridge import FakeBridge
from tests.support.runner_contract import _PORTS, runner
from tests.unit.test_handlers import History, plan_event, policy, requested, resolution

ARGS = {"primitive": "cube", "name": "A"}


async def _approved_by_a_person() -> tuple[list[AnyEvent], Approved, ApprovalRequested]:
    planned = plan_event("object.create", "object.delete", args=ARGS)
    decided, asked = await policy().on_planned(planned)
    assert isinstance(asked, ApprovalRequested)
    resolved = resolution(asked, "approve_once")
    history = History()
    history.events = [requested(), planned, decided, asked]
    (approved,) = await policy(history).on_resolved(resolved)
    assert isinstance(approved, Approved)
    return [requested(), planned, decided, asked, resolved, approved], approved, asked


async def test_run_record_when_a_person_approved_names_the_approval() -> None:
    events, approved, asked = await _approved_by_a_person()
    record = run_record(approved, events)
    assert (record.run_id, record.user, record.approved_by) == ("r1", "ana", "ben")
    assert [o.operation_id for o in record.operations] == approved.schedule
    assert [o.safety_level for o in record.operations] == ["safe_write", "destructive"]
    (approval,) = record.approvals
    assert (approval.approval_id, approval.decision, approval.resolved_by) == (
        asked.approval_id,
        "approve_once",
        "ben",
    )
    assert approval.operation_ids == ["op1"] and approval.request_hash == asked.request_hash
    assert record.python_steps == []


async def test_run_record_when_no_log_given_has_operations_only() -> None:
    _, approved, _ = await _approved_by_a_person()
    record = run_record(approved)
    assert record.approvals == [] and len(record.operations) == 2


class Sent:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def send(self, event: Event) -> None:
        self.events.append(event)

    async def settle(self) -> None:
        pass

    def flush(self) -> None:
        pass


async def test_executor_when_approved_by_a_person_stores_the_approval_in_the_artifact(
    tmp_path: Path,
) -> None:
    events, approved, asked = await _approved_by_a_person()
    history = History()
    history.events = events[:-1]
    sent = Sent()
    handlers = ExecutorHandlers(
        runner=runner(FakeBridge(), tmp_path),
        progress=lambda: sent,
        history=history,
        catalog_version=lambda: "test",
    )
    await handlers.on_approved(approved)
    (executed,) = [e for e in sent.events if isinstance(e, Executed)]
    assert executed.failure is None and executed.revision == 1
    assert executed.inspection is not None
    data = await _PORTS[str(tmp_path)][0].read_inspection(executed.inspection)
    assert data is not None
    run = inspection.decode(data).run
    assert run is not None and run.approved_by == "ben"
    assert [a.approval_id for a in run.approvals] == [asked.approval_id]
