"""Undoing a whole run (rollback boundary "run", spec 000 §Executor Guarantees 3):
compensations in reverse where every committed operation declared one, the run's
checkpoint otherwise, and the result verified by hash."""

from __future__ import annotations

from typing import Literal

import msgspec

from contracts.events import OperationRolledBack, follow
from services.executor.domain.failures import rollback_failure
from services.executor.domain.journal import op_key
from services.executor.domain.operation import OperationRunner, Step


async def undo_run(steps: OperationRunner, done: list[Step], failed: Step) -> tuple[str, Step]:
    """Roll the whole run back (boundary "run"): compensations in reverse where every
    committed operation declared one, the checkpoint otherwise; verified by hash."""
    start = steps.session.start_hash
    mine = [s for s in done if s.receipt.status == "succeeded"]
    writes = [s for s in mine if s.receipt.safety_level != "read_only"]
    method: Literal["compensation", "checkpoint"] = "checkpoint"
    restored = ""
    if all(s.compensation is not None for s in writes):
        method, restored = "compensation", await _compensate(steps, writes)
    if restored != start:
        method, restored = "checkpoint", await steps.restore([])
    if restored != start:
        bad = rollback_failure(failed.op_id, steps.checkpoint_note(restored))
        return restored, Step(
            failed.op_id,
            failed.receipt,
            restored,
            bad,
            consistent=False,
            message=f"{failed.message}; {bad.retry_hint}",
        )
    steps.since = []
    await steps.events.settle()  # an entry still being written must not outlive its delete
    for step in mine:
        await steps.journal.delete(op_key(*steps.scope, step.op_id))
        await steps.events.emit(
            follow(
                steps.approved,
                OperationRolledBack,
                steps.clock(),
                step.index,
                operation_id=step.op_id,
                mcp_call_id=step.receipt.mcp_call_id or "",
                method=method,
                scene_hash=restored,
            )
        )
        step.receipt = msgspec.structs.replace(step.receipt, status="rolled_back")
    note = f"{failed.message}; the whole run was rolled back ({method})"
    return restored, Step(
        failed.op_id, failed.receipt, restored, failed.failure, message=note, index=failed.index
    )


async def _compensate(steps: OperationRunner, writes: list[Step]) -> str:
    try:
        for step in reversed(writes):
            inverse = step.compensation
            if inverse is None:
                return ""
            result = await steps.bridge.call_tool(
                inverse.tool, inverse.arguments, steps.new_id(), timeout=steps.op_timeout
            )
            if not result.ok:
                return ""
        return await steps.bridge.fingerprint()
    except Exception:  # noqa: BLE001 - the checkpoint is the fallback
        return ""
