"""Running an approved schedule against the bridge: spec 000 §Executor Guarantees.

For every operation, in schedule order: fingerprint before, a checkpoint before any
mutation, the tool call, fingerprint after. A failed mutating operation is rolled back
to its checkpoint (the default per-operation boundary) and the rollback is verified by
hash; if the hash does not come back, the failure is ROLLBACK_FAILED and the scene is not
saved. Operations after a failure are skipped (spec 002: stop at the first failure).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from contracts.events import (
    Approved,
    Event,
    Executed,
    OperationFailed,
    OperationRolledBack,
    OperationSkipped,
    OperationStarted,
    OperationSucceeded,
    follow,
)
from contracts.failures import FailureContract
from contracts.operations import Operation
from contracts.receipts import Receipt
from services.executor.failures import rollback_failure, tool_failure
from services.executor.ports import Bridge
from services.executor.scenes import SceneFiles

Emit = Callable[[Event], Awaitable[None]]


@dataclass
class _Step:
    receipt: Receipt
    hash_after: str
    failure: FailureContract | None = None
    consistent: bool = True  # False when rollback did not reach the checkpoint


@dataclass
class PlanRunner:
    bridge: Bridge
    scenes: SceneFiles
    work_dir: Path
    op_timeout: float = 60.0
    clock: Callable[[], float] = field(default=time.time)
    new_id: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))

    async def run(self, approved: Approved, emit: Emit) -> Executed:
        scene_hash = await self.scenes.open(self.bridge, approved.scene_id)
        ops = {op.operation_id: op for op in approved.operation_set.operations}
        receipts: list[Receipt] = []
        failed: _Step | None = None
        failed_id = ""
        for index, op_id in enumerate(approved.schedule):
            op = ops[op_id]
            if failed is not None:
                receipts.append(self._skipped(op))
                await emit(
                    follow(
                        approved,
                        OperationSkipped,
                        self.clock(),
                        index,
                        operation_id=op_id,
                        reason=f"not run: {failed_id} failed",
                    )
                )
                continue
            step = await self._run_op(approved, index, op, scene_hash, emit)
            receipts.append(step.receipt)
            scene_hash = step.hash_after
            if step.failure is not None:
                failed, failed_id = step, op_id
        blend_path: str | None = None
        if failed is None or failed.consistent:
            blend_path = str(await self.scenes.commit(self.bridge, approved.scene_id))
        message = failed.receipt.message if failed else ""
        return follow(
            approved,
            Executed,
            self.clock(),
            scene_id=approved.scene_id,
            receipts=receipts,
            scene_hash=scene_hash,
            blend_path=blend_path,
            failure=failed.failure if failed else None,
            message=f"{failed_id} ({failed.receipt.tool_name}) failed: {message}" if failed else "",
        )

    async def _run_op(
        self, approved: Approved, index: int, op: Operation, before: str, emit: Emit
    ) -> _Step:
        call_id = self.new_id()
        mutating = op.safety_level != "read_only"
        await emit(
            follow(
                approved,
                OperationStarted,
                self.clock(),
                index,
                operation_id=op.operation_id,
                tool_name=op.tool_name,
                mcp_call_id=call_id,
                scene_hash_before=before,
            )
        )
        checkpoint = self.work_dir / f"{approved.run_id}-{op.operation_id}.blend"
        if mutating:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            await self.bridge.save(str(checkpoint))
        started = time.perf_counter()
        result = await self._call(op, call_id)
        ms = round((time.perf_counter() - started) * 1000, 3)
        try:
            if result.get("ok"):
                return await self._succeeded(
                    approved, index, op, call_id, before, ms, result, mutating, emit
                )
            return await self._failed(
                approved,
                index,
                op,
                call_id,
                before,
                ms,
                result,
                checkpoint if mutating else None,
                emit,
            )
        finally:
            checkpoint.unlink(missing_ok=True)

    async def _call(self, op: Operation, call_id: str) -> dict[str, Any]:
        try:
            return await self.bridge.call_tool(
                op.tool_name, op.args, call_id, timeout=self.op_timeout
            )
        except TimeoutError:
            await self.bridge.restart()
            return {
                "ok": False,
                "error_code": "timeout",
                "mutated": True,
                "message": f"exceeded its {self.op_timeout:g} s budget; the bridge was "
                "restarted and the checkpoint restored",
            }
        except Exception as exc:
            await self.bridge.restart()
            return {
                "ok": False,
                "error_code": "internal_error",
                "mutated": True,
                "message": f"the Blender bridge stopped ({exc}); it was restarted",
            }

    async def _succeeded(
        self,
        approved,
        index,
        op,
        call_id,
        before,
        ms,
        result,
        mutating,  # type: ignore[no-untyped-def]
        emit: Emit,
    ) -> _Step:
        after = await self.bridge.fingerprint() if mutating else before
        mutation_id = self.new_id() if mutating else None
        receipt = Receipt(
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            safety_level=op.safety_level,
            status="succeeded",
            mcp_call_id=call_id,
            blender_mutation_id=mutation_id,
            scene_hash_before=before,
            scene_hash_after=after,
            duration_ms=ms,
            result=result.get("data"),
        )
        await emit(
            follow(
                approved,
                OperationSucceeded,
                self.clock(),
                index,
                operation_id=op.operation_id,
                mcp_call_id=call_id,
                blender_mutation_id=mutation_id,
                receipt=receipt,
            )
        )
        return _Step(receipt=receipt, hash_after=after)

    async def _failed(
        self,
        approved,
        index,
        op,
        call_id,
        before,
        ms,
        result,  # type: ignore[no-untyped-def]
        checkpoint: Path | None,
        emit: Emit,
    ) -> _Step:
        code, message = result.get("error_code"), str(result.get("message", ""))
        contract = tool_failure(op.operation_id, op.tool_name, code, message)
        receipt = Receipt(
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            safety_level=op.safety_level,
            status="failed",
            mcp_call_id=call_id,
            scene_hash_before=before,
            scene_hash_after=None,
            duration_ms=ms,
            error_code=code,
            message=message,
        )
        await emit(
            follow(
                approved,
                OperationFailed,
                self.clock(),
                index,
                operation_id=op.operation_id,
                mcp_call_id=call_id,
                receipt=receipt,
                failure=contract,
            )
        )
        if checkpoint is None:
            return _Step(receipt=receipt, hash_after=before, failure=contract)
        method, restored = await self._rollback(checkpoint, before)
        if restored != before:
            bad = rollback_failure(op.operation_id, f"hash {restored} != {before}")
            return _Step(receipt=receipt, hash_after=restored, failure=bad, consistent=False)
        await emit(
            follow(
                approved,
                OperationRolledBack,
                self.clock(),
                index,
                operation_id=op.operation_id,
                mcp_call_id=call_id,
                method=method,
                scene_hash=restored,
            )
        )
        rolled = msgspec.structs.replace(receipt, status="rolled_back", scene_hash_after=restored)
        return _Step(receipt=rolled, hash_after=restored, failure=contract)

    async def _rollback(self, checkpoint: Path, before: str) -> tuple[str, str]:
        """Return (method, hash): restore the checkpoint unless the scene is unchanged."""
        try:
            current = await self.bridge.fingerprint()
        except Exception:
            await self.bridge.restart()
            current = ""
        if current == before:
            return "none", current
        try:
            return "checkpoint", await self.bridge.load(str(checkpoint))
        except Exception as exc:
            return "checkpoint", f"unrestored ({exc})"

    def _skipped(self, op: Operation) -> Receipt:
        return Receipt(
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            safety_level=op.safety_level,
            status="skipped",
            message="not run: an earlier operation failed",
        )
