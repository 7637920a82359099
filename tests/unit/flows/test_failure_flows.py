"""What a run comes to when something goes wrong on the way, across the services on the
in-memory bus: a gate fails, a service cannot process a run's event, a scene is busy, a
request cannot be read."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts import subjects
from contracts.allowlist import AllowlistEntry
from contracts.events import GatesEvaluated, RunFailed
from services.executor.domain.ports import Lease
from services.executor.memory import MemoryLeases
from tests.support.memory_mesh import MemoryMesh, memory_mesh

# 40 characters, 80 bytes: within the 63 characters the policy allows a name, over the
# 63 bytes Blender keeps, so only the guardians see it.
LONG_NAME = "é" * 40


@pytest.mark.clause("004-§validation.4")
async def test_gate_when_the_committed_scene_breaks_it_fails_the_run_gates_failed(
    mesh: MemoryMesh,
) -> None:
    plan = {
        "request_id": "long-1",
        "operations": [
            {
                "operation_id": "op01",
                "tool_name": "object.create",
                "args": {"primitive": "cube", "name": LONG_NAME},
                "depends_on": [],
                "safety_level": "safe_write",
            }
        ],
    }
    result = await mesh.run("named", plan=plan)
    assert result.status == "failed", result
    assert result.failure is not None and result.failure.error_code == "GATES_FAILED"
    assert result.failure.recoverable and "NAMES_VALID" in result.failure.retry_hint
    assert result.gates is not None and result.gates.failed_gates == ["NAMES_VALID"]
    assert [(s.operation_id, s.action) for s in result.failure.minimal_repair_plan] == [
        ("op01", "replace_args")
    ]
    assert (await mesh.store.head("named")).revision == 1  # type: ignore[union-attr]
    (verdict,) = [e for e in await mesh.history(result.run_id) if isinstance(e, GatesEvaluated)]
    assert verdict.config.startswith("blendmesh.v1.toml@sha256:") and verdict.revision == 1
    assert (await mesh.kinds(result.run_id))[-3:] == [
        "run.executed",
        "run.gates_evaluated",
        "run.failed",
    ]


async def test_service_when_it_cannot_process_a_runs_event_the_run_fails_not_hangs(
    mesh: MemoryMesh, monkeypatch: pytest.MonkeyPatch
) -> None:
    await mesh.run("broken", "add a cube named Doomed")

    async def unreadable(user: str, tool: str, scene_id: str) -> AllowlistEntry | None:
        raise OSError("the allowlist bucket is gone")

    monkeypatch.setattr(mesh.allowlist, "find", unreadable)
    result = await mesh.run("broken", "delete Doomed")
    assert result.status == "failed", result
    assert result.failure is not None and result.failure.error_code == "INTERNAL_ERROR"
    assert "the policy service could not process this run's planned event after 5 tries" in (
        result.message
    )
    (letter,) = mesh.bus.dead_letters()
    assert letter.consumer == "policy" and letter.deliveries == 5
    assert "OSError: the allowlist bucket is gone" in letter.reason
    assert "Doomed" in mesh.bridge.scene


async def test_mesh_without_a_tool_catalog_when_requested_fails_after_the_planners_retries(
    tmp_path: Path,
) -> None:
    mesh = await memory_mesh(tmp_path, catalog=None)
    try:
        result = await mesh.run("s1", "add a cube named Box")
        assert result.status == "failed"
        assert result.failure is not None and result.failure.error_code == "INTERNAL_ERROR"
        assert "planner service could not process this run's requested event" in result.message
        retries = [s for s in mesh.bus.settled if s.durable == "planner" and s.outcome == "retry"]
        assert len(retries) == 4 and "no tool catalog yet" in retries[0].reason
    finally:
        await mesh.close()


async def test_scene_held_by_another_executor_when_its_lease_ends_runs_then(
    mesh: MemoryMesh,
) -> None:
    leases = mesh.executor.runner.scenes.leases
    assert isinstance(leases, MemoryLeases)
    started = mesh.bus.now
    leases.held["busy"] = Lease(
        scene_id="busy", owner="other-executor", epoch=1, expires_at=started + 3.0, kv_revision=1
    )
    result = await mesh.run("busy", "add a cube named Patient")
    assert result.status == "completed", result
    waits = [s for s in mesh.bus.settled if s.durable == "executor" and s.outcome == "retry"]
    assert waits and all("other-executor" in s.reason for s in waits)
    assert mesh.bus.now >= started + 3.0
    assert (await mesh.store.head("busy")).epoch == 2  # type: ignore[union-attr]


async def test_request_that_does_not_match_its_schema_when_published_fails_its_run(
    mesh: MemoryMesh,
) -> None:
    subject = subjects.run_events(mesh.bus.prefix, "run-forged", "requested")
    mesh.bus.publish_raw(
        subject, b'{"type":"run.requested","event_id":"x","run_id":"run-forged","user":"ana"}'
    )
    await mesh.bus.run_until_quiet()
    assert sorted(d.consumer for d in mesh.bus.dead_letters()) == ["audit", "planner"]
    (failed,) = await mesh.history("run-forged")
    assert isinstance(failed, RunFailed) and failed.user == "ana"
    assert failed.failure.error_code == "REQUEST_UNREADABLE"
    assert "undecodable message" in failed.message
    assert mesh.bridge.calls == []
