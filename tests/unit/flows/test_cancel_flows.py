"""Cancelling a run across the services on the in-memory bus: waiting for approval,
before it is planned, mid-execution and after its end. Each cancelled run fails
RUN_CANCELLED naming who cancelled, and leaves the scene at a committed revision."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.events import Approved, CancelRequested, Executed, RunFailed
from services.doors.core.cancels import NoSuchRun, RunOver, cancel_of
from services.doors.core.client import ClientError
from tests.support.mcp_plans import op
from tests.support.memory_mesh import MemoryMesh


def creates(request_id: str, *names: str) -> dict[str, Any]:
    ops = [
        op(f"op{i}", "object.create", {"primitive": "cube", "name": n}) for i, n in enumerate(names)
    ]
    return {"request_id": request_id, "operations": ops}


def failed_by(events: list[Any]) -> RunFailed:
    (failed,) = [e for e in events if isinstance(e, RunFailed)]
    return failed


async def test_cancel_when_the_run_waits_for_approval_fails_it_and_a_late_approval_changes_nothing(
    mesh: MemoryMesh,
) -> None:
    assert (await mesh.run("wait", "add a cube named Keep")).status == "completed"
    head = await mesh.store.head("wait")
    asked = await mesh.run("wait", "delete Keep")
    assert asked.status == "awaiting_confirmation"
    result = await mesh.cancel(asked.run_id, by="ana", reason="wrong object")
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code == "RUN_CANCELLED"
    assert result.message == "ana cancelled the run: wrong object"
    late = await mesh.resolve(asked.run_id, "approve_once", by="ana")
    assert late.status == "failed"
    events = await mesh.history(asked.run_id)
    assert not [e for e in events if isinstance(e, Approved | Executed)]
    assert "Keep" in mesh.bridge.scene and await mesh.store.head("wait") == head
    (cancel,) = [e for e in events if isinstance(e, CancelRequested)]
    assert cancel.cancelled_by == "ana"
    count = len(events)
    await mesh.bus.advance(60.0)  # the approval's expiry timer looks again, and stops
    assert mesh.bus.timers() == [] and len(await mesh.history(asked.run_id)) == count


async def test_cancel_when_sent_with_the_request_runs_nothing(mesh: MemoryMesh) -> None:
    request = mesh.request("early", plan=creates("early-1", "Never"))
    await mesh.bus.publish(request)
    events = await mesh.history(request.run_id)
    await mesh.bus.publish(mesh.cancel_event(events, "ana"))
    await mesh.bus.run_until_quiet()
    result = await mesh.result(request.run_id)
    assert result.status == "failed" and result.failure is not None
    assert result.failure.error_code == "RUN_CANCELLED"
    assert "Never" not in mesh.bridge.scene
    events = await mesh.history(request.run_id)
    assert not [e for e in events if isinstance(e, Executed)]
    assert failed_by(events).message == "ana cancelled the run"


async def test_cancel_when_heard_mid_execution_finishes_the_op_in_hand_and_rolls_the_run_back(
    mesh: MemoryMesh,
) -> None:
    assert (await mesh.run("mid", "add a cube named Base")).status == "completed"
    head = await mesh.store.head("mid")
    request = mesh.request("mid", plan=creates("mid-1", "A", "B", "C"))

    async def cancel_at_b(tool: str, args: dict[str, Any]) -> None:
        if args.get("name") == "B":
            await mesh.bus.publish(mesh.cancel_event(await mesh.history(request.run_id), "ben"))

    mesh.bridge.on_call = cancel_at_b
    result = await mesh.submit(request)
    assert result.status == "failed" and result.failure is not None
    assert result.failure.error_code == "RUN_CANCELLED"
    assert [(r.operation_id, r.status) for r in result.receipts] == [
        ("op0", "rolled_back"),
        ("op1", "rolled_back"),  # in hand when the cancel came: it finished, then was undone
        ("op2", "skipped"),
    ]
    assert result.receipts[2].message == "not run: ben cancelled the run"
    assert await mesh.store.head("mid") == head  # nothing committed
    assert sorted(mesh.bridge.scene) == ["Base"]
    assert failed_by(await mesh.history(request.run_id)).message.startswith("ben cancelled")


async def test_cancel_when_heard_during_the_last_op_still_keeps_nothing(mesh: MemoryMesh) -> None:
    request = mesh.request("last", plan=creates("last-1", "Only"))

    async def cancel_now(tool: str, args: dict[str, Any]) -> None:
        await mesh.bus.publish(mesh.cancel_event(await mesh.history(request.run_id), "ana"))

    mesh.bridge.on_call = cancel_now
    result = await mesh.submit(request)
    assert result.status == "failed"
    assert [r.status for r in result.receipts] == ["rolled_back"]
    assert mesh.bridge.scene == {} and await mesh.store.head("last") is None


async def test_cancel_when_the_run_ended_is_refused_naming_its_state(mesh: MemoryMesh) -> None:
    done = await mesh.run("over", "add a cube named Done")
    with pytest.raises(RunOver, match="completed already"):
        cancel_of(await mesh.history(done.run_id), "ana", "", 0.0)
    asked = await mesh.run("over", "delete Done")
    await mesh.cancel(asked.run_id, by="ana")
    with pytest.raises(RunOver, match=r"failed already \(cancelled by ana\)"):
        cancel_of(await mesh.history(asked.run_id), "ben", "", 0.0)


async def test_cancel_when_asked_twice_is_one_event_whoever_asks(mesh: MemoryMesh) -> None:
    asked = await mesh.run("twice", plan=creates("twice-0", "X"))
    assert asked.status == "completed"
    await mesh.run("twice", "delete X")
    run_id = (await mesh.run("twice", "delete X")).run_id
    events = await mesh.history(run_id)
    first = cancel_of(events, "ana", "", 1.0)
    second = cancel_of(events, "ben", "", 2.0)
    assert first.event_id == second.event_id  # the log's duplicate window drops the second
    await mesh.bus.publish(first)
    await mesh.bus.publish(second)
    again = cancel_of(await mesh.history(run_id), "ben", "", 3.0)
    assert again.cancelled_by == "ana"


async def test_cancel_when_there_is_no_run_or_the_reason_is_too_long_says_so(
    mesh: MemoryMesh,
) -> None:
    with pytest.raises(NoSuchRun, match="no such run"):
        cancel_of([], "ana", "", 0.0)
    asked = await mesh.run("long", "add a cube named Long")
    await mesh.run("long", "delete Long")
    run_id = (await mesh.run("long", "delete Long")).run_id
    with pytest.raises(ClientError, match="the reason has 501 characters; give at most 500"):
        cancel_of(await mesh.history(run_id), "ana", "x" * 501, 0.0)
    assert asked.status == "completed"
