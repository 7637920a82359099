"""The run timeline the doors lay out (services/doors/core/timeline.py), from the audit
projection of the recorded history: operations with what became of them, and versions."""

from __future__ import annotations

import msgspec

from contracts import events as ev
from contracts.queries import RunDetail, RunRow, TimelineEntry
from services.audit.timeline import detail
from services.audit.timeline_facts import facts
from services.doors.core import timeline
from tests.unit.audit.test_audit_projections import load_history


def run_detail(events: list[ev.RunEvent]) -> RunDetail:
    first = events[0]
    row = RunRow(
        run_id=first.run_id, request_id=first.request_id, thread_id=first.thread_id,
        user=first.user, scene_id=None, prompt=None, state="completed", planner=None,
        model=None, error_code=None, message=None, blend_path=None, scene_hash=None,
        created_at=first.at, updated_at=events[-1].at,
    )  # fmt: skip
    entries = [
        TimelineEntry(
            stream_seq=i,
            run_id=e.run_id,
            event_id=e.event_id,
            type=ev.event_kind(e),
            at=e.at,
            detail=detail(e),
            facts=facts(e),
        )
        for i, e in enumerate(events, 1)
    ]
    return RunDetail(run=row, timeline=entries)


def ring() -> list[ev.RunEvent]:
    return [e for e in load_history() if isinstance(e, ev.RunEvent) and e.run_id == "run-ring"]


def test_operations_when_approved_name_decision_approver_and_receipt() -> None:
    ops = {op["operation_id"]: op for op in timeline.operations(run_detail(ring()))}
    assert list(ops) == ["inspect", "ring", "bevel", "drop_cube"]  # plan order
    assert ops["drop_cube"]["decision"] == "require_approval"
    assert ops["drop_cube"]["approved_by"] not in (None, "policy")
    assert all(op["status"] == "succeeded" for op in ops.values())


def test_operations_when_a_person_rejected_name_who_rejected() -> None:
    events = ring()
    asked = next(e for e in events if isinstance(e, ev.ApprovalRequested))
    resolved = next(e for e in events if isinstance(e, ev.ApprovalResolved))
    rejected = msgspec.structs.replace(resolved, decision="reject", resolved_by="ben")
    cut = events.index(resolved)
    ops = timeline.operations(run_detail([*events[:cut], rejected]))
    (dropped,) = [op for op in ops if op["operation_id"] in asked.operation_ids]
    assert dropped["approved_by"] == "rejected by ben" and "status" not in dropped


def test_versions_when_recorded_before_the_fields_are_empty_not_missing() -> None:
    found = timeline.versions(run_detail(ring()))
    assert found["planned"] == {"blendmesh_version": "", "catalog_version": "cat-1",
                                "blender_version": ""}  # fmt: skip
    assert found["executed"] is not None and found["executed"]["catalog_version"] == ""


def test_as_json_when_run_has_no_events_past_request_is_empty_not_failing() -> None:
    account = timeline.as_json(run_detail(ring()[:1]))
    assert account["operations"] == [] and account["gates"] == []
    assert account["revision"] is None and account["versions"]["executed"] is None
