"""Runs that wait for a person to approve trusted Python, for the tests of every door.

No planner makes ``python.trusted`` operations yet, so the door tests build the pending
approval themselves: as events for the pure tests, and on a real log (a client's
``requested``, the policy's ``approval_requested``) for the doors, on a mesh that runs the
audit service only, so nothing but the test answers an approval.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from contracts.events import ApprovalRequested, ApprovalResolved, PendingOperation, RunRequested
from contracts.python_steps import code_sha256
from services.doors.cli.mesh import Mesh
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from tests.support.meshes import mesh_fixture, role_bus

CODE = "import bpy\nbpy.ops.mesh.primitive_cube_add()\n"
RUN: dict[str, Any] = {
    "run_id": "run-t",
    "request_id": "req-t",
    "thread_id": "thr-t",
    "user": "ana",
}


def python_op(op_id: str, code: str, tool: str = "python.trusted") -> PendingOperation:
    args = {"code": code, "timeout_ms": 4000, "code_sha256": code_sha256(code)}
    return PendingOperation(operation_id=op_id, tool=tool, safety_level="destructive", args=args)


def delete_op(op_id: str = "op1") -> PendingOperation:
    return PendingOperation(
        operation_id=op_id, tool="object.delete", safety_level="destructive", args={"name": "Box"}
    )


def asked(*operations: PendingOperation) -> ApprovalRequested:
    return ApprovalRequested(
        event_id="ask",
        at=2.0,
        **RUN,
        approval_id="appr-t",
        operation_ids=[op.operation_id for op in operations],
        reason="destructive",
        request_hash="h" * 64,
        operations=list(operations),
        expires_at=99.0,
    )


def requested() -> RunRequested:
    return RunRequested(event_id="req", at=1.0, **RUN, scene_id="s", prompt="delete Box")


def audit_mesh_fixtures() -> tuple[Any, Any]:
    """``mesh`` (the log and the audit service, and a client's bus) and ``policy_bus`` (a
    bus logged in as the policy), module-scoped on the module's ``mesh_settings``."""
    mesh = mesh_fixture("module", "test-trusted", services=("audit",))

    @pytest_asyncio.fixture(scope="module", loop_scope="module", name="policy_bus")
    async def policy_bus(mesh: tuple[Mesh, Bus]) -> AsyncIterator[Bus]:
        async with role_bus(mesh[0], "policy") as bus:
            yield bus

    return mesh, policy_bus


async def waiting_run(mesh: tuple[Mesh, Bus], policy_bus: Bus, code: str = CODE) -> str:
    """A new run of ana's that waits for approval of a deletion and of trusted ``code``."""
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    ids: dict[str, Any] = {"run_id": run_id, "request_id": f"req-{run_id}", "thread_id": run_id}
    await mesh[1].publisher.publish(
        RunRequested(event_id=f"rq-{run_id}", at=1.0, **ids, user="ana", scene_id="s", prompt="p")
    )
    await policy_bus.publisher.publish(
        ApprovalRequested(
            event_id=f"ask-{run_id}",
            at=2.0,
            **ids,
            user="ana",
            approval_id=f"appr-{run_id}",
            operation_ids=["op1", "op2"],
            reason="op1: destructive; op2: trusted Python",
            request_hash="a" * 64,
            operations=[delete_op("op1"), python_op("op2", code)],
        )
    )
    return run_id


async def resolutions(mesh: tuple[Mesh, Bus], run_id: str) -> list[ApprovalResolved]:
    """What the doors published in answer to ``run_id``'s approval, read from the log."""
    events = await read_run(mesh[1].js, mesh[0].settings.prefix, run_id)
    return [e for e in events if isinstance(e, ApprovalResolved)]
