"""Policy and approvals on the in-memory bus, where only it can show them: an approval
answered twice or by a stranger, a standing approval's reach, an approval nobody answers
expiring on the bus's clock, another user's scene. Approve, reject, pre-approval and an
unsafe argument run on both buses in tests/flows."""

from __future__ import annotations

from pathlib import Path

import pytest

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
