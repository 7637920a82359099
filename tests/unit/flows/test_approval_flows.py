"""Policy and approvals across the services on the in-memory bus: a destructive operation
waits for a person, a denial never reaches the executor, an approval nobody answers
expires on the bus's clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contracts import inspection
from contracts.events import ApprovalRequested, Approved, Executed, PolicyDecided
from tests.support.memory_mesh import MemoryMesh, memory_mesh


async def asked(mesh: MemoryMesh, scene: str, name: str) -> str:
    """A run that deletes ``name`` of ``scene`` and waits for a person; its run id."""
    made = await mesh.run(scene, f"add a cube named {name}")
    assert made.status == "completed", made
    result = await mesh.run(scene, f"delete {name}")
    assert result.status == "awaiting_confirmation", result
    assert result.pending_operations == ["op01"]
    assert result.approval is not None and result.approval.request_hash.startswith("sha256:")
    return result.run_id


@pytest.mark.clause("002-§approvals.4")
async def test_destructive_op_when_approved_completes_naming_the_approver(
    mesh: MemoryMesh,
) -> None:
    run_id = await asked(mesh, "approve", "Doomed")
    assert await mesh.kinds(run_id) == [
        "run.requested",
        "run.planned",
        "run.policy_decided",
        "run.approval_requested",
    ]
    assert "Doomed" in mesh.bridge.scene  # nothing ran while it waited
    done = await mesh.resolve(run_id, "approve_once", by="ben")
    assert done.status == "completed", done
    assert [r.tool_name for r in done.receipts] == ["object.delete"]
    assert "Doomed" not in mesh.bridge.scene
    events = await mesh.history(run_id)
    (approved,) = [e for e in events if isinstance(e, Approved)]
    assert approved.approved_by == "ben"
    (executed,) = [e for e in events if isinstance(e, Executed)]
    data = await mesh.store.read_inspection(executed.inspection or "")
    assert data is not None
    record = inspection.decode(data).run
    assert record is not None and record.approved_by == "ben"
    assert [(a.decision, a.resolved_by) for a in record.approvals] == [("approve_once", "ben")]


@pytest.mark.clause("002-§approvals.3")
async def test_destructive_op_when_rejected_fails_and_the_executor_never_runs(
    mesh: MemoryMesh,
) -> None:
    run_id = await asked(mesh, "reject", "Precious")
    head = await mesh.store.head("reject")
    done = await mesh.resolve(run_id, "reject", by="ben")
    assert done.status == "failed"
    assert done.failure is not None and done.failure.error_code == "APPROVAL_REJECTED"
    assert "ben rejected op01" in done.message
    assert (await mesh.kinds(run_id))[-3:] == ["run.approval_resolved", "run.denied", "run.failed"]
    assert await mesh.store.head("reject") == head and "Precious" in mesh.bridge.scene


async def test_approval_when_resolved_twice_runs_once(mesh: MemoryMesh) -> None:
    run_id = await asked(mesh, "twice", "Gone")
    first = await mesh.resolve(run_id, "approve_once")
    assert first.status == "completed"
    await mesh.resolve(run_id, "reject")  # answers an approval no longer pending
    events = await mesh.history(run_id)
    assert sum(isinstance(e, Approved) for e in events) == 1
    assert sum(isinstance(e, Executed) for e in events) == 1
    assert (await mesh.result(run_id)).status == "completed"


async def test_approval_when_someone_else_resolves_it_stays_pending(mesh: MemoryMesh) -> None:
    run_id = await asked(mesh, "stranger", "Mine")
    still = await mesh.resolve(run_id, "approve_once", by="eve")  # not ana, not an approver
    assert still.status == "awaiting_confirmation"
    assert (await mesh.kinds(run_id))[-1] == "run.approval_resolved"
    assert "Mine" in mesh.bridge.scene


async def test_destructive_op_when_pre_approved_runs_without_waiting(mesh: MemoryMesh) -> None:
    await mesh.run("pre", "add a cube named Gone")
    result = await mesh.run("pre", "delete Gone", pre_approved=True)
    assert result.status == "completed", result
    assert "run.approval_requested" not in await mesh.kinds(result.run_id)
    approved = next(e for e in await mesh.history(result.run_id) if isinstance(e, Approved))
    assert approved.approved_by == "ana"


@pytest.mark.clause("002-§approvals.5")
async def test_approve_and_always_allow_when_same_op_again_runs_without_asking(
    mesh: MemoryMesh,
) -> None:
    run_id = await asked(mesh, "standing", "A")
    await mesh.run("standing", "add a cube named B")
    done = await mesh.resolve(run_id, "approve_and_always_allow", by="ana")
    assert done.status == "completed", done
    (entry,) = await mesh.allowlist.entries("ana")
    assert (entry.tool, entry.scene_id, entry.created_by) == ("object.delete", "standing", "ana")
    again = await mesh.run("standing", "delete B")
    assert again.status == "completed", again
    decided = next(e for e in await mesh.history(again.run_id) if isinstance(e, PolicyDecided))
    assert decided.decisions[0].policy_ids == [f"allowlist#{entry.entry_id}"]
    other = await mesh.run("elsewhere", "add a cube named C")
    assert other.status == "completed"
    elsewhere = await mesh.run("elsewhere", "delete C")  # allowed on its scene only
    assert elsewhere.status == "awaiting_confirmation"


async def test_approval_when_nobody_answers_expires_on_the_bus_clock(tmp_path: Path) -> None:
    mesh = await memory_mesh(tmp_path, approval_ttl=60.0)
    try:
        run_id = await asked(mesh, "expiring", "Old")
        (timer,) = mesh.bus.timers()
        assert timer[1] == "policy-expiry"
        await mesh.bus.advance(59.0)
        assert (await mesh.result(run_id)).status == "awaiting_confirmation"
        await mesh.bus.advance(2.0)
        failed = await mesh.result(run_id)
        assert failed.status == "failed"
        assert failed.failure is not None and failed.failure.error_code == "APPROVAL_EXPIRED"
        assert "Old" in mesh.bridge.scene and mesh.bus.timers() == []
        late = await mesh.resolve(run_id, "approve_once")  # too late: changes nothing
        assert late.status == "failed" and "run.approved" not in await mesh.kinds(run_id)
    finally:
        await mesh.close()


@pytest.mark.clause("002-§policy.4")
async def test_unsafe_argument_when_planned_is_denied_without_asking_or_running(
    mesh: MemoryMesh,
) -> None:
    ops: list[dict[str, Any]] = [
        {
            "operation_id": "far",
            "tool_name": "object.create",
            "args": {"primitive": "cube", "name": "Far", "location": [0, 0, 1e7]},
            "depends_on": [],
            "safety_level": "safe_write",
        },
        {
            "operation_id": "gone",
            "tool_name": "object.delete",
            "args": {"name": "Far"},
            "depends_on": ["far"],
            "safety_level": "destructive",
        },
    ]
    result = await mesh.run("unsafe", plan={"request_id": "unsafe-1", "operations": ops})
    assert result.status == "failed", result
    assert result.failure is not None and result.failure.error_code == "POLICY_BLOCKED"
    assert [(s.operation_id, s.action) for s in result.failure.minimal_repair_plan] == [
        ("far", "replace_args")
    ]
    assert "'location[2]'" in result.message
    assert await mesh.kinds(result.run_id) == [
        "run.requested",
        "run.planned",
        "run.policy_decided",
        "run.denied",
        "run.failed",
    ]
    assert mesh.bridge.calls == []


async def test_scene_of_another_user_when_requested_is_denied_every_operation(
    mesh: MemoryMesh,
) -> None:
    mine = await mesh.run("bens", "add a cube named Ben", user="ben")
    assert mine.status == "completed"
    calls = list(mesh.bridge.calls)
    result = await mesh.run("bens", "add a cube named Intruder")  # ana's request
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code == "POLICY_BLOCKED"
    assert "belongs to another user" in result.message
    assert mesh.bridge.calls == calls and "Intruder" not in mesh.bridge.scene
    assert not any(isinstance(e, ApprovalRequested) for e in await mesh.history(result.run_id))
